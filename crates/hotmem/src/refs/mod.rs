//! References the runtime owns that are not strong: [`WeakHandle`]s,
//! [`Ephemeron`]s and the finalization registry. Each collection processes
//! them after the strong closure (see `gc/core/weak_processing.rs`),
//! beside the binding's own weak references
//! ([`Binding::process_weak_refs`](crate::Binding::process_weak_refs)).

mod ephemeron;
mod finalizer;
#[cfg(all(test, hotmem_loom))]
mod loom_models;
mod weak_handle;

pub use ephemeron::Ephemeron;
pub(crate) use ephemeron::EphemeronTable;
pub(crate) use finalizer::Finalizers;
pub use weak_handle::WeakHandle;
pub(crate) use weak_handle::WeakTable;

use crate::pause_gate::PauseGate;
use crate::roots::HandleTable;
use crate::vm::ObjectReference;
use std::sync::Arc;

/// Keeps an object read from a weak reference alive in the cycle that runs
/// now (the concurrent collector: see
/// [`Mutator::keep_alive`](crate::Mutator::keep_alive)).
pub(crate) trait KeepAlive: Send + Sync {
    /// `obj` was read from a weak reference.
    fn keep_alive(&self, obj: ObjectReference);
}

/// A runtime's weak handles, ephemerons and finalizers.
pub(crate) struct RefRegistry {
    pub(crate) weak: Arc<WeakTable>,
    pub(crate) ephemerons: Arc<EphemeronTable>,
    pub(crate) finalizers: Finalizers,
}

impl RefRegistry {
    /// The registry of a runtime whose collector needs objects read from
    /// weak references kept alive (`keep_alive`: the concurrent one), whose
    /// pauses close `gate`, and whose global handles are `strong`.
    pub(crate) fn new(
        keep_alive: Option<Arc<dyn KeepAlive>>,
        gate: &Arc<PauseGate>,
        strong: Arc<HandleTable>,
    ) -> RefRegistry {
        RefRegistry {
            weak: Arc::new(WeakTable::new(keep_alive.clone(), gate.clone(), strong)),
            ephemerons: Arc::new(EphemeronTable::new(keep_alive, gate.clone())),
            finalizers: Finalizers::default(),
        }
    }
}
