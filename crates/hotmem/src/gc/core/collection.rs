//! [`Collection`]: one collection in progress as every collector's phases
//! share it: the heap map with a live map per page, the pages found empty,
//! the relocation set's forwarding tables, and the statistics each phase
//! adds to. Each collector keeps it in a cycle value of its own, beside
//! what only it needs; the phases that work on it are methods in their own
//! files of the core ([`root_scan`](super::root_scan),
//! [`weak_processing`](super::weak_processing), [`select`](super::select),
//! [`free`](super::free)).

use super::generations::CollectionKind;
use super::heap::GcHeap;
use super::meta::{ForwardingTables, HeapMap};
use super::stats::{CollectStats, GcCause};
use crate::vm::Binding;
use hotmem_page::{NodeId, PageRef};
use std::time::Duration;

/// What a collector asks of one collection.
#[derive(Copy, Clone, Debug)]
pub(crate) struct CollectionRequest {
    /// The collection's number, from 1.
    pub(crate) number: u64,
    /// Why it runs.
    pub(crate) cause: GcCause,
    /// Young or full, as the collector decided (a young one may become
    /// full, see [`Collection::become_full`]).
    pub(crate) kind: CollectionKind,
    /// How long the mutators took to stop for its first pause.
    pub(crate) time_to_safepoint: Duration,
}

/// One collection in progress.
pub(crate) struct Collection<'a, B: Binding> {
    pub(crate) binding: &'a B,
    pub(crate) heap: &'a GcHeap,
    /// Young (only young pages are marked, selected and freed) or full.
    pub(crate) kind: CollectionKind,
    /// Every page at the collection's first pause, with its live map.
    pub(crate) map: HeapMap,
    /// Pages with no live object (freed before relocation).
    pub(crate) empty: Vec<PageRef>,
    /// The pages a relocation visits: each page to evacuate (and every
    /// other live page, whose live map a debug build checks).
    pub(crate) relocation_work: Vec<(NodeId, usize)>,
    /// A forwarding table for each page of the relocation set.
    pub(crate) forwarding: ForwardingTables,
    /// What the phases measured, returned when the collection ends.
    pub(crate) stats: CollectStats,
}

impl<'a, B: Binding> Collection<'a, B> {
    /// Maps the heap's pages as they are now, with a live map each: the
    /// state marking starts from. `is_old(start)`: whether the page that
    /// starts there is old although of age eden (a generational collector
    /// promoted it where it was). At a pause, with the mutators'
    /// allocation retired.
    pub(crate) fn start(
        binding: &'a B,
        heap: &'a GcHeap,
        request: CollectionRequest,
        mark_workers: usize,
        is_old: impl Fn(usize) -> bool,
    ) -> Self {
        let used_before = heap.pages.usage().used;
        let reserved = heap.pages.reserved();
        let map = HeapMap::new(
            &heap.memory,
            reserved.start().get(),
            reserved.len(),
            heap.pages.pages(),
            is_old,
            &heap.non_moving.page_starts(),
        );
        let pages = map.pages.len();
        let begin = CollectStats::begin(
            request.number,
            request.cause,
            request.kind,
            pages,
            used_before,
        );
        Collection {
            binding,
            heap,
            kind: request.kind,
            map,
            empty: Vec::new(),
            relocation_work: Vec::new(),
            forwarding: ForwardingTables::empty(),
            stats: CollectStats {
                time_to_safepoint_ns: request.time_to_safepoint.as_nanos() as u64,
                mark_workers,
                ..begin
            },
        }
    }

    /// A young collection that cannot be one (the binding cannot rebuild
    /// the remembered slots) marks everything instead.
    pub(crate) fn become_full(&mut self) {
        self.kind = CollectionKind::Full;
        self.stats.kind = CollectionKind::Full;
    }

    /// In a full collection, retires the pages the last collections copied
    /// survivors into. They stay installed between collections, so that
    /// each collection goes on filling them instead of starting a page of
    /// its own for a few survivors. A young collection neither evacuates
    /// nor frees them (they are old); a full one may, so they become
    /// ordinary pages first.
    ///
    /// # Safety
    /// Nobody allocates with the heap's GC allocator meanwhile: the GC
    /// workers are idle and every mutator is stopped (a mutator's load
    /// barrier copies objects with it too).
    pub(crate) unsafe fn retire_target_pages(&self) {
        if self.kind == CollectionKind::Full {
            // SAFETY: the caller's promise: nobody allocates with
            // `gc_alloc` meanwhile.
            unsafe { self.heap.gc_alloc.retire_pages() };
        }
    }

    /// Whether only young pages are marked, selected and freed.
    pub(crate) fn young_only(&self) -> bool {
        self.kind == CollectionKind::Young
    }

    /// The NUMA node of the `i`-th of a phase's items that belong to no
    /// page (marking workers, remembered-slot lists): spread over the
    /// heap's partitions.
    pub(crate) fn node_of(&self, i: usize) -> NodeId {
        let partitions = &self.heap.partitions;
        partitions[i % partitions.len()]
    }

    /// The statistics, with the heap's use now.
    pub(crate) fn finish(mut self) -> CollectStats {
        self.stats.used_after = self.heap.pages.usage().used;
        self.stats
    }
}
