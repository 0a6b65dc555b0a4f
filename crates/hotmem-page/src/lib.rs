//! # hotmem-page: a ZGC-style page allocator
//!
//! The heap memory of a managed runtime, organised the way ZGC does it:
//!
//! - [`PageAllocator`]: a heap of a fixed maximum capacity, memfd-backed
//!   physical memory mapped into a larger address space reservation in
//!   2 MiB granules; small, medium and large [`Page`]s; a cache of free
//!   memory — the mapped cache of JDK 25's ZGC ([`CacheMode::Mapped`]:
//!   ranges by address, merged, split for a page of any size, harvested
//!   only when no range fits) or, as the baseline, the page cache it
//!   replaced ([`CacheMode::PageCache`]) — with undo, defragment and
//!   uncommit; NUMA partitions with a caller-supplied [`NodeBinder`].
//! - [`ObjectAllocator`]: objects by size and [`Age`] — per-CPU small
//!   pages, one shared medium page per age (installed in
//!   [`MediumPageMode::Synchronized`] or, as the baseline,
//!   [`MediumPageMode::Racy`]) and large pages — with a one-CAS inline fast
//!   path.
//! - [`StatSampler`] / [`StatsReport`]: allocation rate, page cache flush
//!   (harvest), the cache's hits, splits, merges and harvests, undo,
//!   defragment and medium page counts over the last 10 s, 10 min, 10 h and
//!   in total, as data and as `gc,stats` lines.
//!
//! All address space and memory come from the [`hotmem_os::Memory`] the
//! caller passes in, tagged [`MemTag::JAVA_HEAP`](hotmem_os::MemTag::JAVA_HEAP),
//! so a tracker observing that memory sees all of it.
//!
//! ```
//! use hotmem_os::Memory;
//! use hotmem_page::{Age, HeapConfig, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout, PageAllocator};
//! use std::sync::Arc;
//!
//! let heap = Arc::new(PageAllocator::new(&Memory::new(), HeapConfig::new(64 << 20))?);
//! let objects = ObjectAllocator::new(heap.clone(), MediumPageMode::Synchronized);
//!
//! // A small object (per-CPU small page) and a medium one (shared medium page).
//! let small = objects.alloc_object(ObjectLayout::new(64)?, Age::EDEN, NodeId::ZERO)?;
//! let medium = objects.alloc_object(ObjectLayout::new(300 << 10)?, Age::EDEN, NodeId::ZERO)?;
//! // SAFETY: both objects were just allocated in mapped, committed pages.
//! unsafe {
//!     small.as_ptr::<u64>().write(1);
//!     medium.as_ptr::<u64>().write(2);
//! }
//! assert_eq!(heap.counters().pages_installed.medium, 1);
//!
//! // A GC: retire the allocation pages (nobody allocates now); their
//! // owner's handles come back, and the owner frees them.
//! // SAFETY: this thread is the only one using `objects`.
//! let pages = unsafe { objects.retire_pages() };
//! for page in pages {
//!     heap.free_page(page)?;
//! }
//! assert_eq!(heap.usage().used, 0);
//! assert_eq!(heap.usage().capacity, 6 << 20); // still committed, in the cache
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## For a garbage collector
//! - Mutators allocate with [`ObjectAllocator::alloc_object`]; an error
//!   for which [`AllocError::is_heap_exhausted`] holds means "collect and
//!   retry".
//! - At the start of a cycle (all mutators stopped),
//!   [`ObjectAllocator::retire_pages`] makes the allocation pages ordinary
//!   pages; [`PageAllocator::pages`] / [`PageAllocator::page_infos`] list
//!   every page with type, age, node, range and used bytes for selection.
//! - Relocation targets: GC workers share a second `ObjectAllocator` and
//!   call `alloc_object` with the target age and the node of the work, or
//!   take whole pages with [`PageAllocator::alloc_page`].
//! - Evacuated pages go back with [`PageAllocator::free_pages`] (`unsafe`:
//!   see below).
//! - [`PageAllocator::committed_bytes`] is what NMT should report as
//!   committed heap; [`PageAllocator::counters`] feeds a [`StatSampler`].
//!
//! ## Who may free a page (the soundness model)
//! Freeing a page hands its memory to the next allocation, so whoever can
//! free a page can make two allocations overlap. Hence:
//!
//! - [`PageAllocator::alloc_page`] returns an [`OwnedPage`]: unique (not
//!   `Clone`), with no public constructor, the only handle that can allocate
//!   objects in the page. [`PageAllocator::free_page`] and
//!   [`PageAllocator::undo_alloc_page`] consume it, check it by identity
//!   against the page the heap lists as live (never by heap and page id), and
//!   hand it back in a [`RejectedPage`] when they refuse. [`Page`] has no
//!   public constructor, so no page can be forged.
//! - Introspection — [`PageAllocator::pages`],
//!   [`ObjectAllocator::installed_pages`],
//!   [`ObjectAllocator::current_medium_page`] — hands out [`PageRef`]
//!   views and [`PageAllocator::page_infos`] plain [`PageInfo`] data: they
//!   read, never allocate or free.
//! - A page installed in an [`ObjectAllocator`] belongs to it; nobody can
//!   free it ([`FreeError::InUse`]) until the `unsafe`
//!   [`ObjectAllocator::retire_pages`] (nobody allocates meanwhile) or the
//!   safe [`ObjectAllocator::retire_pages_exclusive`] gives the owner's
//!   handles back.
//! - A collector frees the pages it found through views (retired pages whose
//!   handles it dropped, large object pages, evacuated pages) with the
//!   `unsafe` [`PageAllocator::free_pages`]: its contract is that nobody
//!   allocates in those pages or touches their memory any more. Identity and
//!   state are still checked.
//!
//! The memory of a page stays mapped while the page is not freed and its
//! [`PageAllocator`] lives; objects are raw [`Address`](hotmem_os::Address)es,
//! and reading or writing them is the caller's `unsafe`.

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod block;
mod cache;
mod config;
mod error;
#[cfg(any(test, fuzzing))]
pub mod model;
mod object_allocator;
mod page;
mod page_allocator;
mod partition;
mod shared_page;
mod source;
mod stats;
mod sync;
mod types;
mod usage;
mod virt;

pub use config::{CacheMode, GRANULE_SIZE, HeapConfig, MediumPageMode, NodeBinder, PageSizes};
pub use error::{
    AllocError, AllocPageError, ConfigError, FreeError, HeapError, LayoutError, MemoryError,
    RejectedPage,
};
pub use object_allocator::ObjectAllocator;
pub use page::{OwnedPage, Page, PageInfo, PageRef, PageState};
pub use page_allocator::{PageAllocator, UncommitStats};
pub use source::{PageRequest, PageSource};
pub use stats::{
    CounterSnapshot, PerType, StatRow, StatSampler, StatUnit, StatsReport, WindowStat,
};
pub use types::{Age, NodeId, ObjectLayout, PageType};
pub use usage::{CachedPages, HeapUsage, PartitionUsage};
