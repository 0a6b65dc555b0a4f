//! The collector, monomorphized for one [`Binding`] and type-erased behind
//! [`Collect`]: one virtual call per collection, none per object.

use crate::GcError;
use crate::binding::Binding;
use crate::gc::{CollectStats, GcCause};
use crate::runtime::Inner;
use crate::workers::GcWorkers;
use std::sync::Arc;
use std::time::Duration;

/// One collection, whatever the binding.
pub(crate) trait Collect: Send + Sync {
    /// Runs one collection. The caller holds the GC lock and the safepoint.
    fn collect(
        &self,
        inner: &Inner,
        workers: &mut GcWorkers,
        cause: GcCause,
        cycle: u64,
        time_to_safepoint: Duration,
    ) -> Result<CollectStats, GcError>;
}

/// The collector for binding `B`.
pub(crate) struct Collector<B: Binding> {
    pub(crate) binding: Arc<B>,
}

impl<B: Binding> Collector<B> {
    pub(crate) fn new(binding: Arc<B>) -> Self {
        Collector { binding }
    }
}

impl<B: Binding> Collect for Collector<B> {
    fn collect(
        &self,
        inner: &Inner,
        workers: &mut GcWorkers,
        cause: GcCause,
        cycle: u64,
        time_to_safepoint: Duration,
    ) -> Result<CollectStats, GcError> {
        let _ = (
            inner,
            workers,
            cause,
            cycle,
            time_to_safepoint,
            &self.binding,
        );
        Err(GcError::NoObjectModel)
    }
}
