//! The driver: what happens around one collection. It takes the collection
//! lock, stops the mutators at a safepoint, retires their allocation,
//! decides the kind, runs the cycle ([`cycle`](super::cycle)), records and
//! logs the outcome, and lets the mutators go.

use super::cycle::CycleRequest;
use super::generations::CollectionKind;
use super::heap::GcHeap;
use super::in_collection;
use super::stats::{CollectStats, GcCause};
use super::workers::GcWorkers;
use crate::GcError;
use crate::log::{Logger, Parts};
use hotmem_chunk::Metaspace;
use hotmem_safepoint::{Coordinator, SafeRegion, SafepointId};
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
    /// Runs a collection unless `request.seen_epoch` is given and a
    /// collection has finished since (then `Ok(None)`). `region`: the
    /// calling mutator's safe region, when a mutator collects (it begins
    /// the safepoint through the region, which stays borrowed until the
    /// safepoint ends).
    pub(crate) fn collect(
        &self,
        cx: &DriverContext<'_>,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        if in_collection::inside(self) {
            return Err(GcError::InsideCollection);
        }
        self.poison.check()?;
        let mut workers = self.workers.lock();
        self.poison.check()?;
        if let Some(seen) = request.seen_epoch {
            if self.epoch.load(Ordering::Acquire) != seen {
                return Ok(None);
            }
        }
        let asked = Instant::now();
        let guard = match region {
            Some(region) => region.safepoint("GC"),
            None => cx.safepoints.begin("GC"),
        }
        .map_err(GcError::Safepoint)?;
        let time_to_safepoint = asked.elapsed();
        // The previous safepoint's record is complete now that this one began.
        cx.log.safepoints(cx.safepoints);
        let cycle = CycleRequest {
            number: self.record.lock().totals.cycles + 1,
            cause: request.cause,
            kind: self.next_kind(request.kind),
            time_to_safepoint,
        };
        // The world is stopped: the gate closes for the pause (see
        // `PauseGate`), so that no other thread reads a weak reference
        // between marking and clearing or makes a handle the root scan
        // misses.
        let closed = self.gate.close();
        let result = self.run_cycle(&mut workers, cycle);
        drop(closed);
        match &result {
            Ok(stats) => self.record(cx, stats, Some(guard.id())),
            Err(e) => cx.log.collection_failed(cycle.kind, cycle.cause, e),
        }
        guard.end();
        cx.log.safepoints(cx.safepoints);
        result.map(Some)
    }

    /// Runs one concurrent cycle (see [`concurrent`](super::concurrent)) on
    /// the calling thread, the runtime's GC thread, while the mutators run
    /// between its pauses; then records it and gives the mutators their
    /// next budget.
    pub(crate) fn collect_concurrent(
        &self,
        cx: &DriverContext<'_>,
        cause: GcCause,
    ) -> Result<CollectStats, GcError> {
        let mut workers = self.workers.lock();
        let number = self.record.lock().totals.cycles + 1;
        let allocated_before = self.pages.counters().page_bytes_allocated;
        let result = self.poison.check().and_then(|()| match &self.collector {
            Some(c) => c.collect_concurrent(self, &mut workers, cx, number, cause),
            None => Err(GcError::NoBinding),
        });
        if let Err(e) = &result {
            cx.log.collection_failed(CollectionKind::Full, cause, e);
        }
        if let Ok(stats) = &result {
            let allocated = self.pages.counters().page_bytes_allocated - allocated_before;
            self.sizing.concurrent_cycle(allocated);
            // What a concurrent cycle costs the mutators is its whole
            // length (its workers take CPUs), not only its pauses.
            let cost = stats.concurrent.map_or(stats.pause_ns, |c| c.cycle_ns);
            let next =
                self.sizing
                    .collected_at(stats.kind, stats.used_after, false, cost, Instant::now());
            self.mutator_alloc.source().set(next.budget);
            self.record(cx, stats, None);
        }
        if let Some(state) = &self.concurrent {
            // However the cycle ended, stalled allocations retry now, with
            // the budget it gave (and wait for the next one if there is
            // still no room).
            state.memory_freed();
        }
        result
    }

    /// Without generations every collection is full; with them, the
    /// caller's choice or the policy's (full while slots are lost).
    fn next_kind(&self, wanted: Option<CollectionKind>) -> CollectionKind {
        self.generations
            .as_ref()
            .map_or(CollectionKind::Full, |g| g.next_kind(wanted))
    }

    /// Takes the allocation pages from the mutators at the safepoint. Their
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

    /// Runs the cycle with the binding's collector, then tells the sizing
    /// policy (the mutators' next budget) and the generational state how
    /// it went.
    fn run_cycle(
        &self,
        workers: &mut GcWorkers,
        cycle: CycleRequest,
    ) -> Result<CollectStats, GcError> {
        let result = {
            let _inside = in_collection::enter(self);
            match &self.collector {
                Some(c) => {
                    self.retire_mutator_allocation();
                    c.collect(self, workers, cycle)
                }
                None => Err(GcError::NoBinding),
            }
        };
        match &result {
            Ok(stats) => {
                let generational = self.generations.is_some();
                let next = self.sizing.collected_at(
                    stats.kind,
                    stats.used_after,
                    generational,
                    stats.pause_ns,
                    Instant::now(),
                );
                self.mutator_alloc.source().set(next.budget);
                if let Some(g) = &self.generations {
                    g.collected(&self.pages, stats.kind, next.full_at);
                }
            }
            // The remembered slots were taken; young pages may be left.
            Err(_) => {
                if let Some(g) = &self.generations {
                    g.failed();
                }
            }
        }
        result
    }

    /// Records a successful collection, logs it, gives cached pages unused
    /// for the uncommit delay back to the OS, and counts the epoch.
    fn record(&self, cx: &DriverContext<'_>, stats: &CollectStats, safepoint: Option<SafepointId>) {
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
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}
