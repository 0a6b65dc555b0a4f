//! # hotmem-os: the one door to virtual memory
//!
//! Reserve address space, commit and uncommit parts of it, map memfd-backed
//! physical memory into it (at two addresses at once if you want), and
//! release it, with typed errors that leave every mapping as it was. A
//! [`MemoryObserver`] attached to a [`Memory`] sees every one of those calls
//! with the caller's [`MemTag`], so a native-memory tracker (such as
//! `hotmem-nmt`) accounts for all of it without this crate knowing about it.
//!
//! Linux only: it uses `mmap`, `memfd_create`, `fallocate` and `/proc`.
//!
//! ```
//! use hotmem_os::{Memory, MemTag, procfs, page_size};
//!
//! let memory = Memory::new();
//! let page = page_size();
//! // 2 MiB of address space, aligned to 2 MiB, not backed yet.
//! let heap = memory.reserve_aligned(2 << 20, 2 << 20, MemTag::JAVA_HEAP)?;
//! assert!(heap.start().is_aligned(2 << 20));
//!
//! // Commit the first 4 pages and use them.
//! let first = heap.subrange(0, 4 * page)?;
//! heap.commit(first)?;
//! // SAFETY: the range was just committed and nothing else uses it.
//! unsafe { first.start().as_ptr::<u8>().write_bytes(0xAB, first.len()) };
//! assert_eq!(procfs::resident_bytes(first)?, 4 * page);
//!
//! // Uncommit: the memory goes back to the OS.
//! heap.uncommit(first)?;
//! assert_eq!(procfs::resident_bytes(first)?, 0);
//!
//! // Physical memory mapped at two addresses: one write, seen twice.
//! let phys = memory.physical(page)?;
//! phys.commit(0, page)?;
//! let a = heap.map(heap.start(), &phys, 0, page)?;
//! let b = heap.map(heap.start() + 8 * page, &phys, 0, page)?;
//! // SAFETY: both ranges map the same committed memfd page.
//! unsafe {
//!     a.start().as_ptr::<u64>().write(42);
//!     assert_eq!(b.start().as_ptr::<u64>().read(), 42);
//! }
//! drop(heap); // releases the whole reservation
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Safety model
//! The operations themselves are safe: they only ever touch address space
//! that the [`Reservation`] owns. Reading and writing the memory goes through
//! raw pointers, and the caller promises that the bytes are committed (or
//! mapped) and not uncommitted concurrently.

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod address;
mod error;
mod memory;
#[cfg(any(test, fuzzing))]
pub mod model;
mod node;
mod observer;
mod physical;
pub mod procfs;
mod reservation;
mod sync;
mod sys;
mod tag;
#[cfg(test)]
mod tests;

pub use address::{Address, MemRange, align_down, align_up, is_aligned, page_size};
pub use error::{CommitError, MapError, OsError, OsOp, PhysicalError, RangeError, ReserveError};
pub use memory::{Memory, round_to_pages};
pub use node::NodeId;
pub use observer::{MemoryEvent, MemoryObserver};
pub use physical::PhysicalMemory;
pub use reservation::Reservation;
pub use tag::MemTag;
