//! The collector, monomorphized for one [`Binding`] and type-erased behind
//! [`Collect`]: one virtual call per collection, none per object.

use super::concurrent;
use super::cycle::{self, CycleRequest};
use super::driver::DriverContext;
use super::heap::GcHeap;
use super::stats::{CollectStats, GcCause};
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::{Binding, Slot};
use std::any::Any;
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

    /// Runs one concurrent cycle of `heap` (see
    /// [`concurrent`](super::concurrent)) on the calling thread, which
    /// holds the collection lock (`workers`) and is no mutator.
    fn collect_concurrent(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        cx: &DriverContext<'_>,
        number: u64,
        cause: GcCause,
    ) -> Result<CollectStats, GcError>;

    /// Whether the binding's slots compare-and-swap atomically
    /// ([`Slot::COMPARE_EXCHANGE`]): the concurrent collector moves objects
    /// only then.
    fn heals_atomically(&self) -> bool;

    /// The binding, for [`Runtime::binding`](crate::Runtime::binding).
    fn binding(&self) -> &(dyn Any + Send + Sync);
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

    fn collect_concurrent(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        cx: &DriverContext<'_>,
        number: u64,
        cause: GcCause,
    ) -> Result<CollectStats, GcError> {
        concurrent::cycle::collect(&*self.binding, heap, workers, cx, number, cause)
    }

    fn heals_atomically(&self) -> bool {
        B::Slot::COMPARE_EXCHANGE
    }

    fn binding(&self) -> &(dyn Any + Send + Sync) {
        &*self.binding
    }
}
