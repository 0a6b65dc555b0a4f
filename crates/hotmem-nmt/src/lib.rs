//! # hotmem-nmt: native memory tracking of virtual memory
//!
//! Tracks every reservation, commit, uncommit and release of address space
//! with a tag ("Java Heap", "Thread Stack", or a name you register) and, in
//! detail mode, the call stacks that made them, the way HotSpot's
//! `-XX:NativeMemoryTracking` does, with three differences:
//!
//! * Regions live in a tree of address points ([`VmaTree`]): each operation
//!   is O(log n) in the live regions, where HotSpot before JDK 22 walked a
//!   sorted linked list ([`linked_list::LinkedListTracker`], kept for
//!   comparison).
//! * Per-tag totals are updated by each operation, so the summary report
//!   costs O(tags) and never allocates: it can run while handling an
//!   out-of-memory error or from a sampler thread.
//! * An annotated OS memory map ([`Tracker::annotated_map`]) shows every
//!   mapping of `/proc/self/smaps` with its tags and resident size, so you
//!   see how much committed memory is really resident.
//!
//! Attach a [`Tracker`] to a [`hotmem_os::Memory`] and it sees everything
//! reserved through it:
//!
//! ```
//! use hotmem_nmt::{Level, Scale, Tracker};
//! use hotmem_os::{MemTag, Memory, page_size};
//! use std::sync::Arc;
//!
//! let nmt = Arc::new(Tracker::new(Level::Summary));
//! let memory = Memory::with_observer(nmt.clone());
//!
//! let heap = memory.reserve(64 * page_size(), MemTag::JAVA_HEAP)?;
//! heap.commit(heap.subrange(0, 16 * page_size())?)?;
//! let totals = nmt.totals(MemTag::JAVA_HEAP);
//! assert_eq!((totals.reserved, totals.committed), (64 * page_size(), 16 * page_size()));
//!
//! // Embedders name their own categories.
//! let jit = nmt.register_tag("JIT arena")?;
//! let arena = memory.reserve(8 * page_size(), jit)?;
//! assert_eq!(nmt.totals(jit).reserved, 8 * page_size());
//!
//! // The summary writes into any fmt::Write without allocating.
//! let mut text = String::with_capacity(4096);
//! nmt.write_summary(&mut text, Scale::Kilo)?;
//! assert!(text.contains("Java Heap (reserved=256KB, committed=64KB)") || page_size() != 4096);
//! assert!(text.contains("JIT arena"));
//!
//! // Baseline, more work, diff.
//! let baseline = nmt.baseline();
//! drop(arena);
//! let diff = nmt.summary_diff_report(&baseline, Scale::Kilo).to_string();
//! assert!(diff.contains("JIT arena (reserved=0KB -"));
//!
//! // The same numbers as JSON for tools.
//! let json = serde_json::to_string(&nmt.summary_report(Scale::Kilo))?;
//! assert!(json.contains("\"name\":\"Java Heap\""));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Operations can also be called directly ([`Tracker::reserve`],
//! [`Tracker::commit`], ...); each returns the per-tag [`Delta`] it caused,
//! and a bad one (overlapping reservation, commit outside any reservation,
//! empty range) returns a [`TrackError`] and changes nothing. Ranges are
//! [`MemRange`](hotmem_os::MemRange)s, which cannot wrap around the
//! address space.

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod delta;
mod detail;
mod error;
mod frames;
pub mod linked_list;
mod map;
#[cfg(any(test, fuzzing))]
pub mod model;
mod points;
mod region_state;
mod scale;
mod stack;
mod stack_id;
mod state_table;
mod store;
mod summary;
mod sync;
mod tags;
mod tracker;
mod tree;

pub use delta::{Delta, TagDelta, Totals};
pub use detail::{
    Baseline, CommittedRange, DetailDiffReport, DetailReport, Region, Site, SiteKind,
};
pub use error::{MapError, Operation, TagError, TrackError};
pub use map::{AnnotatedMap, MapEntry, MapTotals, TagResidency};
pub use region_state::{Kind, RegionState};
pub use scale::{Amount, Change, Scale};
pub use stack::{CallStack, MAX_FRAMES, ResolvedFrame};
pub use stack_id::StackId;
pub use store::RegionStore;
pub use summary::{Summary, SummaryDiffReport, SummaryReport};
pub use tags::{MAX_CUSTOM_TAGS, MAX_TAG_NAME, MAX_TAGS};
pub use tracker::{Level, Tracker};
pub use tree::VmaTree;
