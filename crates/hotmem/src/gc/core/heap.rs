//! [`GcHeap`]: the heap and what every collector works on, as one part of
//! the runtime. A collector's code receives this, never the runtime; what
//! only one collector needs (its barriers' state, its policy) is its own.

use super::gc_pages::GcPages;
use super::in_collection::Collected;
use super::non_moving::NonMovingSpace;
use super::poison::Poison;
use super::record::GcRecord;
use super::sizing::{BudgetedPages, Sizing};
use super::tlab::TlabShared;
use super::uncommitter::Uncommitter;
use super::workers::GcWorkers;
use crate::pause_gate::PauseGate;
use crate::roots::RootRegistry;
use crate::weak::WeakRegistry;
use hotmem_os::Memory;
use hotmem_page::{NodeId, ObjectAllocator, PageAllocator};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Where the GC copies objects to.
pub(crate) type GcAllocator = ObjectAllocator<GcPages>;

/// The heap's pages, the allocators and buffers that fill them, the roots
/// the runtime owns, the GC workers and what collections leave behind.
pub(crate) struct GcHeap {
    /// The memory (NMT attached) that side tables are mapped from.
    pub(crate) memory: Memory,
    /// The page allocator.
    pub(crate) pages: Arc<PageAllocator>,
    /// Where mutators allocate (shared pages and their buffers' pages),
    /// within the budget the sizing policy gives them.
    pub(crate) mutator_alloc: ObjectAllocator<Arc<BudgetedPages>>,
    /// Where GC workers copy survivors to. Synchronized medium pages, so
    /// that workers do not race for the medium target page.
    pub(crate) gc_alloc: GcAllocator,
    /// Where mutators allocate the objects that must never move (within
    /// the same budget as `mutator_alloc`).
    pub(crate) non_moving: NonMovingSpace,
    /// When the next collection runs: the heap sizing policy.
    pub(crate) sizing: Sizing,
    /// The mutators' thread-local allocation buffers.
    pub(crate) tlabs: TlabShared,
    /// Handles, pins and the attached mutators, whose roots the binding
    /// reports.
    pub(crate) roots: RootRegistry,
    /// Weak handles, ephemerons and finalizers.
    pub(crate) weak: WeakRegistry,
    /// Closed by every pause: the operations any thread may call on the
    /// references above wait for it (see [`PauseGate`]).
    pub(crate) gate: Arc<PauseGate>,
    /// Set by a collection that failed half-way through rewriting
    /// references: no collection runs again.
    pub(crate) poison: Poison,
    /// Heap partitions, one per NUMA node.
    pub(crate) partitions: Vec<NodeId>,
    /// The GC workers; their lock is the collection lock, held by the
    /// thread that runs a collection (or an embedder's `run_at_safepoint`)
    /// for the whole pause.
    pub(crate) workers: Mutex<GcWorkers>,
    /// How many workers (readable without the collection lock).
    pub(crate) worker_count: usize,
    /// Statistics, the last collection, totals: behind a lock of its own,
    /// taken only briefly, so that reports never wait for a collection.
    pub(crate) record: Mutex<GcRecord>,
    /// Completed collections; an allocation that failed before a collection
    /// finished retries instead of collecting again.
    pub(crate) epoch: AtomicU64,
    /// Gives cached pages back to the OS between collections.
    pub(crate) uncommitter: Uncommitter,
    /// A page is evacuated when at least this fraction of it is garbage.
    pub(crate) fragmentation_limit: f64,
}

impl Collected for GcHeap {
    /// The pause gate's: the tables that hold the gate but not the heap
    /// (weak handles, ephemerons) find the same collections.
    fn collection_key(&self) -> usize {
        self.gate.collection_key()
    }
}
