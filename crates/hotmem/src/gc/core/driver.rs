//! The bookkeeping around a collection, whatever the collector: what it
//! needs of the runtime besides the heap ([`DriverContext`]), what was
//! asked ([`GcRequest`]), the mutators' allocation taken at a pause, and
//! the record and the log once it succeeded. Each collector's own driver
//! (the order of its phases and pauses) is in its folder.

use super::generations::CollectionKind;
use super::heap::GcHeap;
use super::stats::{CollectStats, GcCause};
use crate::log::{Logger, Parts};
use hotmem_chunk::Metaspace;
use hotmem_safepoint::{Coordinator, SafepointId};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The runtime's parts a collection needs besides the heap: the
/// coordinator that stops the mutators, the log, and the metaspaces whose
/// use the log prints.
pub(crate) struct DriverContext<'a> {
    pub(crate) safepoints: &'a Coordinator,
    pub(crate) log: &'a Logger,
    pub(crate) metaspace: &'a Metaspace,
}

/// A collection asked for.
#[derive(Copy, Clone, Debug)]
pub(crate) struct GcRequest {
    /// Why.
    pub(crate) cause: GcCause,
    /// Young or full; `None`: as the generational policy says.
    pub(crate) kind: Option<CollectionKind>,
    /// Run only if no collection finished since the caller saw this epoch
    /// (an allocation that failed retries after another thread's
    /// collection instead of collecting again).
    pub(crate) seen_epoch: Option<u64>,
}

impl GcHeap {
    /// The number the next collection gets (from 1).
    pub(crate) fn next_collection_number(&self) -> u64 {
        self.record.lock().totals.cycles + 1
    }

    /// Takes the allocation pages from the mutators at a pause. Their
    /// buffers lie in those pages, which this collection may evacuate and
    /// free: none may be bumped again. Their unused ends go back to the
    /// pages, so that each page's top is the end of its last object (where
    /// a reference past it is found to be bad).
    pub(crate) fn retire_mutator_allocation(&self) {
        // SAFETY: `retire_pages` needs nobody allocating in the allocator:
        // every mutator is stopped at the safepoint or in native code, where
        // it cannot allocate (`Mutator::alloc` needs `&mut self`, which a
        // native region borrows; its thread-local buffer is bumped only
        // from `alloc`; a region leaked with `mem::forget` borrows nothing,
        // but `alloc` first leaves it and stops at this safepoint).
        let retired = unsafe { self.mutator_alloc.retire_pages() };
        self.tlabs.retire_all(&retired);
    }

    /// [`GcHeap::retire_mutator_allocation`] for a cycle that moves
    /// nothing: the mutators' buffers and the pages they no longer
    /// allocate in are taken, but the pages they allocate in now stay
    /// theirs, and allocation goes on there above their tops now. Returns
    /// those pages' `[top, end)`: what lies there from now on is new to
    /// the cycle. Kept, a page need not be started again at every cycle,
    /// which gave each cycle's few survivors a page of their own.
    pub(crate) fn keep_mutator_allocation(&self) -> Vec<(usize, usize)> {
        // SAFETY: as in `retire_mutator_allocation`: nobody allocates in
        // the allocator at this safepoint.
        let replaced = unsafe { self.mutator_alloc.retire_replaced_pages() };
        // The buffers' ends go back first, so that the tops below are
        // where allocation goes on.
        self.tlabs.retire_all_with(|top, end| {
            match replaced.iter().find(|p| p.range().contains(top)) {
                Some(page) => page.undo_alloc(top, end),
                None => self.mutator_alloc.undo_alloc(top, end),
            }
        });
        (self.mutator_alloc.installed_pages().iter())
            .map(|p| (p.top().get(), p.range().end().get()))
            .collect()
    }

    /// Records a successful collection, logs it, gives cached pages unused
    /// for the uncommit delay back to the OS, and counts the epoch.
    /// `safepoint`: the one pause of a collection that stopped the world
    /// throughout (a concurrent cycle named its pauses as they began).
    pub(crate) fn record(
        &self,
        cx: &DriverContext<'_>,
        stats: &CollectStats,
        safepoint: Option<SafepointId>,
    ) {
        let now = Instant::now();
        let stats_table = {
            let mut record = self.record.lock();
            record.totals.add(stats);
            record.last = Some(stats.clone());
            record.sampler.sample(self.pages.counters(), now);
            cx.log.wants_stats().then(|| record.sampler.report())
        };
        let parts = Parts {
            heap: &self.pages,
            metaspace: cx.metaspace,
            stats_table,
        };
        cx.log.collection(parts, stats, safepoint);
        let _ = self.pages.uncommit(now);
        self.uncommitter.start_once(&self.pages);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}
