//! Collections and safepoint operations asked for by the embedder.

use super::Runtime;
use crate::GcError;
use crate::gc::generations::CollectionKind;
use crate::gc::in_collection;
use crate::gc::{CollectStats, GcCause, GcRequest};
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
        let request = GcRequest {
            cause: GcCause::Explicit,
            kind: Some(kind),
            seen_epoch: None,
        };
        let stats = self.collect_request(request, None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    /// Runs the collection `request` asks for (see
    /// [`GcHeap::collect`](crate::gc::GcHeap::collect)); `region`: the
    /// calling mutator's safe region, when a mutator collects.
    pub(crate) fn collect_request(
        &self,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        let inner = &*self.inner;
        inner.gc.collect(&inner.driver_context(), request, region)
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
