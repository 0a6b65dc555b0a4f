//! One collection as a list of phases over one [`Cycle`] value.
//!
//! At a safepoint, with the mutators' allocation retired (see
//! [`driver`](super::driver)):
//! 1. **start**: map the heap's pages (a live map each); in a young
//!    collection, rebuild the slots the store barrier remembered;
//! 2. **mark** ([`mark`](super::mark)): from the roots
//!    ([`roots`](super::roots)) and the remembered slots, trace the live
//!    graph in parallel on the GC workers; then process the references
//!    that are not strong ([`weak_refs`](super::weak_refs));
//! 3. **select the relocation set** ([`relocation_set`](super::relocation_set)):
//!    the pages whose objects pack into fewer pages, each with a forwarding
//!    table; empty pages are freed at once ([`free`](super::free));
//! 4. **relocate** ([`relocate`](super::relocate)): copy the selected pages'
//!    objects on workers bound to each page's NUMA node;
//! 5. **update** ([`update`](super::update)): every slot and root that may
//!    refer to a moved object gets the new address, and so do the weak
//!    references that survived;
//! 6. **free** the evacuated pages.
//!
//! Each phase is a method of [`Cycle`] in the phase's own file; this file
//! holds the state they share and the order they run in.

use super::generations::CollectionKind;
use super::heap::GcHeap;
use super::meta::{ForwardingTables, HeapMap};
use super::stats::{CollectStats, GcCause};
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::{Binding, ObjectReference};
use hotmem_page::{NodeId, PageRef};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// What the driver asks of one collection.
#[derive(Copy, Clone, Debug)]
pub(crate) struct CycleRequest {
    /// The collection's number, from 1.
    pub(crate) number: u64,
    /// Why it runs.
    pub(crate) cause: GcCause,
    /// Young or full, as the generational policy decided (a young one
    /// becomes full if the binding cannot rebuild remembered slots).
    pub(crate) kind: CollectionKind,
    /// How long the mutators took to stop.
    pub(crate) time_to_safepoint: Duration,
}

/// What marking notes of the strong roots.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum RootedPages {
    /// Nothing (a stop-the-world collection updates every root anyway).
    Movable,
    /// The objects they refer to at mark start: a concurrent cycle
    /// forwards the roots into its relocation set in a pause, relocating
    /// their objects there, and bounds what that pause copies (see
    /// `Cycle::bound_root_copies`).
    Budgeted,
}

/// One collection in progress: the heap map, the slots to start and to
/// update from, the relocation set with its forwarding tables, and the
/// statistics each phase adds to.
pub(super) struct Cycle<'a, B: Binding> {
    pub(super) binding: &'a B,
    pub(super) heap: &'a GcHeap,
    /// Young (only young pages are marked, selected and freed) or full.
    pub(super) kind: CollectionKind,
    /// Every page at the safepoint, with its live map.
    pub(super) map: HeapMap,
    /// The slots the store barrier remembered, rebuilt by the binding
    /// (young collections only): roots of the marking, updated afterwards.
    pub(super) barrier_slots: Vec<B::Slot>,
    /// Per marking worker: the slots of marked objects that refer into
    /// young pages (the update visits only these when only young pages
    /// moved).
    pub(super) remembered: Vec<Vec<B::Slot>>,
    /// Pages with no live object (freed before relocation).
    pub(super) empty: Vec<PageRef>,
    /// The relocation phase's items: each page to evacuate (and, in debug
    /// builds, every other live page, whose live map is checked).
    pub(super) relocation_work: Vec<(NodeId, usize)>,
    /// A forwarding table for each page of the relocation set.
    pub(super) forwarding: ForwardingTables,
    /// Per page: every live object was copied away.
    pub(super) evacuated: Vec<bool>,
    /// Slots found during the update without a forwarding entry, pointing
    /// at an unmarked object in an evacuated page (a binding bug).
    pub(super) inconsistent: AtomicU64,
    /// What the phases measured, returned when the cycle ends.
    pub(super) stats: CollectStats,
    /// Whether marking notes the objects roots refer to.
    pub(super) rooted_pages: RootedPages,
    /// With [`RootedPages::Budgeted`]: the objects strong roots referred
    /// to at mark start.
    pub(super) rooted: parking_lot::Mutex<Vec<ObjectReference>>,
}

/// Runs one collection of `heap` with binding `binding`: its phases in
/// order. The caller holds the collection lock and the safepoint, and has
/// retired the mutators' allocation pages and buffers.
pub(super) fn collect<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    workers: &mut GcWorkers,
    request: CycleRequest,
) -> Result<CollectStats, GcError> {
    let started = Instant::now();
    let mut cycle = Cycle::start(binding, heap, workers.count().max(1), request)?;
    cycle.mark(workers)?;
    cycle.select_relocation_set();
    cycle.free_empty_pages();
    cycle.relocate(workers)?;
    // From here on references are rewritten: a failure leaves some naming
    // the copies and some the originals, and poisons the runtime.
    heap.poison.on_error(cycle.update_references(workers))?;
    heap.poison.on_error(cycle.forward_weak_refs())?;
    cycle.zap_dead_young();
    cycle.free_evacuated_pages()?;
    Ok(cycle.finish(started))
}

impl<'a, B: Binding> Cycle<'a, B> {
    /// Maps the heap and takes the remembered slots: the state marking
    /// starts from.
    pub(super) fn start(
        binding: &'a B,
        heap: &'a GcHeap,
        mark_workers: usize,
        request: CycleRequest,
    ) -> Result<Self, GcError> {
        // The slots the store barrier remembered since the last collection:
        // taken by every collection of a generational runtime (each one ends
        // with no young page left), used by a young one.
        let remembered = heap
            .generations
            .as_ref()
            .map(|g| g.take_remembered())
            .unwrap_or_default();
        let used_before = heap.pages.usage().used;
        let reserved = heap.pages.reserved();
        let old = heap.generations.as_ref().map(|g| &g.old);
        let map = HeapMap::new(
            &heap.memory,
            reserved.start().get(),
            reserved.len(),
            heap.pages.pages(),
            |start| old.is_some_and(|t| t.is_old(start)),
        );
        let mut kind = request.kind;
        let barrier_slots = match kind {
            CollectionKind::Young => super::roots::rebuild_slots(binding, &map, &remembered)?
                .unwrap_or_else(|| {
                    // The binding cannot rebuild its slots: mark everything.
                    kind = CollectionKind::Full;
                    Vec::new()
                }),
            CollectionKind::Full => Vec::new(),
        };
        if kind == CollectionKind::Full {
            // The pages the last collections copied survivors into stay
            // installed between collections, so that each collection goes
            // on filling them instead of starting a page of its own for a
            // few survivors. A young collection neither evacuates nor frees
            // them (they are old); a full one may, so they become ordinary
            // pages first.
            // SAFETY: the GC workers are idle between collections and
            // phases, and only they allocate with `gc_alloc`.
            unsafe { heap.gc_alloc.retire_pages() };
        }
        let pages = map.pages.len();
        Ok(Cycle {
            binding,
            heap,
            kind,
            barrier_slots,
            remembered: Vec::new(),
            empty: Vec::new(),
            relocation_work: Vec::new(),
            forwarding: ForwardingTables::empty(),
            evacuated: vec![false; pages],
            inconsistent: AtomicU64::new(0),
            rooted_pages: RootedPages::Movable,
            rooted: parking_lot::Mutex::new(Vec::new()),
            stats: CollectStats {
                time_to_safepoint_ns: request.time_to_safepoint.as_nanos() as u64,
                mark_workers,
                ..CollectStats::begin(request.number, request.cause, kind, pages, used_before)
            },
            map,
        })
    }

    /// Whether only young pages are marked, selected and freed.
    pub(super) fn young_only(&self) -> bool {
        self.kind == CollectionKind::Young
    }

    /// The NUMA node of the `i`-th of a phase's items that belong to no
    /// page (marking workers, remembered-slot lists): spread over the
    /// heap's partitions.
    pub(super) fn node_of(&self, i: usize) -> NodeId {
        let partitions = &self.heap.partitions;
        partitions[i % partitions.len()]
    }

    /// The statistics, with the pause measured from `started`.
    pub(super) fn finish(mut self, started: Instant) -> CollectStats {
        self.stats.used_after = self.heap.pages.usage().used;
        self.stats.pause_ns = started.elapsed().as_nanos() as u64;
        self.stats
    }
}
