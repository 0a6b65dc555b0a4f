//! Collections and safepoint operations asked for by the embedder.

use super::Runtime;
use crate::GcError;
use crate::gc::{CollectStats, CollectionKind, GcCause, GcRequest, in_collection};
use crate::vm::ObjectReference;
use hotmem_safepoint::SafeRegion;

impl Runtime {
    /// Runs a collection from a thread that is not a mutator of this runtime
    /// (from a mutator, use [`Mutator::collect`](crate::Mutator::collect),
    /// which does not wait for itself).
    ///
    /// # Errors
    /// [`GcError`]; the heap stays consistent.
    pub fn collect(&self) -> Result<CollectStats, GcError> {
        self.collect_now(CollectionKind::Full)
    }

    /// Runs a young collection now: with
    /// [`Generations::YoungAndOld`](crate::Generations::YoungAndOld) and a
    /// binding that implements [`Binding::slot_at`](crate::Binding::slot_at),
    /// only young objects are marked (from the roots and the slots the
    /// store barrier remembered); otherwise a full collection.
    ///
    /// # Errors
    /// As [`Runtime::collect`].
    pub fn collect_young(&self) -> Result<CollectStats, GcError> {
        self.collect_now(CollectionKind::Young)
    }

    fn collect_now(&self, kind: CollectionKind) -> Result<CollectStats, GcError> {
        if self.is_concurrent() {
            // The GC thread's pauses wait for every mutator in managed
            // code: this thread must be none of them, here or (through a
            // wait of its own there) on another runtime.
            self.inner
                .safepoints
                .check_wait()
                .map_err(GcError::Safepoint)?;
            return self.concurrent_cycle(GcCause::Explicit, Some(kind));
        }
        let request = GcRequest {
            cause: GcCause::Explicit,
            kind: Some(kind),
            seen_epoch: None,
        };
        let stats = self.collect_request(request, None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    /// Runs the collection `request` asks for with the stop-the-world
    /// collector (see [`Collector::run`](crate::gc::Collector::run));
    /// `region`: the calling mutator's safe region, when a mutator
    /// collects.
    pub(crate) fn collect_request(
        &self,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        self.inner.run_collector(request, region)
    }

    /// Whether the concurrent collector runs.
    pub(crate) fn is_concurrent(&self) -> bool {
        self.inner.concurrent.is_some()
    }

    /// Where `obj`'s object is now: `obj`, unless the concurrent collector
    /// relocated it and `obj` is the old address (which heap slots may
    /// still hold until the load barrier or the next cycle heals them).
    /// For code that reads the heap without a mutator: inside
    /// [`Runtime::run_at_safepoint`] (no cycle runs then, so every object
    /// of the last relocation set has its new address). A mutator reads
    /// through [`Mutator::load_ref`](crate::Mutator::load_ref) instead.
    /// Always `obj` with the stop-the-world collector.
    pub fn forwarded(&self, obj: ObjectReference) -> ObjectReference {
        let Some(barriers) = self.inner.barriers.concurrent.as_ref() else {
            return obj;
        };
        barriers.installed().forwarded(obj).unwrap_or(obj)
    }

    /// Whether `obj` lies in the non-moving space
    /// ([`Mutator::alloc_non_moving`](crate::Mutator::alloc_non_moving)):
    /// it never moves, so a slot that holds it never holds a stale
    /// reference to it. Takes the space's lock: for a binding's slow paths
    /// and checks, not for every load.
    pub fn is_non_moving(&self, obj: ObjectReference) -> bool {
        self.inner.gc.non_moving.contains(obj.get())
    }

    /// Whether a concurrent cycle is marking now, between its two pauses
    /// (the mutators' barriers log overwritten references meanwhile): for
    /// diagnostics and tests. Always `false` with the stop-the-world
    /// collector.
    pub fn is_marking(&self) -> bool {
        self.inner
            .barriers
            .concurrent
            .as_ref()
            .is_some_and(|c| c.marking())
    }

    /// Asks the GC thread for a concurrent cycle without waiting for it
    /// (a cycle that has not started yet is not asked for twice); the
    /// number of finished cycles to wait past for it. `kind`: young or
    /// full (with generations; `None`: as the policy chooses).
    pub(crate) fn request_concurrent_cycle(
        &self,
        cause: GcCause,
        kind: Option<CollectionKind>,
    ) -> u64 {
        self.inner.gc_thread.request(&self.inner, cause, kind)
    }

    /// With the concurrent collector, after a mutator took a page: starts a
    /// cycle if the budget left is within the pacing margin and none runs.
    #[inline]
    pub(crate) fn pace(&self) {
        let gc = &self.inner.gc;
        if self.inner.concurrent.is_some()
            && gc.poison.check().is_ok()
            && gc
                .sizing
                .should_start_cycle(gc.mutator_alloc.source().remaining())
        {
            self.inner
                .gc_thread
                .request_if_idle(&self.inner, GcCause::AllocationRate);
        }
    }

    /// Counts an allocation stall of `waited`.
    /// `running`: the kind of cycle that ran when the stall began.
    pub(crate) fn count_stall(&self, waited: std::time::Duration, running: Option<CollectionKind>) {
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        let mut record = self.inner.gc.record.lock();
        record.totals.stalls += 1;
        record.totals.stall_ns += ns;
        record.totals.stalls_by_cycle.add(running, ns);
    }

    /// Asks for a concurrent cycle and waits for it to finish. A mutator
    /// calls it in a safe (blocked) region, so that the cycle's pauses do
    /// not wait for it; every caller has checked that the wait closes no
    /// deadlock (`check_wait`).
    pub(crate) fn concurrent_cycle(
        &self,
        cause: GcCause,
        kind: Option<CollectionKind>,
    ) -> Result<CollectStats, GcError> {
        if in_collection::inside(&self.inner.gc) {
            return Err(GcError::InsideCollection);
        }
        self.inner.gc.poison.check()?;
        let past = self.request_concurrent_cycle(cause, kind);
        self.inner.gc_thread.wait_past(past)
    }

    /// Runs `op` with every mutator stopped, serialized with collections:
    /// the place to check invariants or walk the heap. Call it from a thread
    /// that is not an attached mutator (the safepoint would wait for it).
    ///
    /// # Errors
    /// [`GcError::Safepoint`] if the safepoint cannot begin (another one,
    /// begun directly on [`Runtime::safepoints`], is in progress, or the
    /// calling thread is a mutator in managed code);
    /// [`GcError::InsideCollection`] if called from an binding callback
    /// or from inside another `run_at_safepoint` of this runtime.
    pub fn run_at_safepoint<R>(
        &self,
        name: &'static str,
        op: impl FnOnce() -> R,
    ) -> Result<R, GcError> {
        let inner = &*self.inner;
        if in_collection::inside(&inner.gc) {
            return Err(GcError::InsideCollection);
        }
        let _gc = inner.gc.workers.lock();
        let guard = inner.safepoints.begin(name).map_err(GcError::Safepoint)?;
        inner.log.safepoints(&inner.safepoints);
        let result = {
            let _inside = in_collection::enter(&inner.gc);
            op()
        };
        guard.end();
        inner.log.safepoints(&inner.safepoints);
        Ok(result)
    }
}
