//! The collector, monomorphized for one [`Binding`] and type-erased behind
//! [`Collect`]: one virtual call per collection, none per object.

use super::cycle::{self, CycleRequest};
use super::heap::GcHeap;
use super::stats::CollectStats;
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::Binding;
use std::sync::Arc;

/// One collection, whatever the binding.
pub(crate) trait Collect: Send + Sync {
    /// Runs one collection of `heap`. The caller holds the collection lock
    /// (`workers`) and the safepoint.
    fn collect(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        request: CycleRequest,
    ) -> Result<CollectStats, GcError>;
}

/// The collector for binding `B`.
pub(crate) struct Collector<B: Binding> {
    binding: Arc<B>,
}

impl<B: Binding> Collector<B> {
    pub(crate) fn new(binding: Arc<B>) -> Self {
        Collector { binding }
    }
}

impl<B: Binding> Collect for Collector<B> {
    fn collect(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        request: CycleRequest,
    ) -> Result<CollectStats, GcError> {
        cycle::collect(&*self.binding, heap, workers, request)
    }
}
