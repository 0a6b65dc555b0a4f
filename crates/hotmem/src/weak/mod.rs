//! Weak references, in one room: the references the runtime owns that are
//! not strong ([`WeakHandle`]s, [`Ephemeron`]s, [`WeakSet`]s and the
//! finalization registry) are here; the binding's own, and the views its hooks receive
//! ([`Binding::process_weak_refs`](crate::Binding::process_weak_refs) and
//! [`Binding::forward_weak_refs`](crate::Binding::forward_weak_refs),
//! [`WeakRefs`](crate::WeakRefs), [`WeakForwarding`](crate::WeakForwarding)),
//! are in `vm/weak.rs`; the phase that processes both after the strong
//! closure and forwards them after relocation, for every collector, is
//! `gc/core/weak_processing.rs`.

mod ephemeron;
mod finalizer;
mod keep_alive;
mod liveness;
#[cfg(all(test, hotmem_loom))]
mod loom_models;
mod weak_handle;
mod weak_set;

pub use ephemeron::Ephemeron;
pub(crate) use ephemeron::EphemeronTable;
pub(crate) use finalizer::{FinalizerStart, Finalizers};
pub(crate) use keep_alive::KeepAlive;
pub use weak_handle::WeakHandle;
pub(crate) use weak_handle::WeakTable;
pub use weak_set::WeakSet;
pub(crate) use weak_set::{SetMarking, Sweeps, WeakSetTable, WeakSets};

use crate::pause_gate::PauseGate;
use crate::roots::HandleTable;
use std::sync::Arc;

/// A runtime's weak handles, ephemerons, weak sets and finalizers.
pub(crate) struct WeakRegistry {
    /// The weak handles.
    pub(crate) handles: Arc<WeakTable>,
    pub(crate) ephemerons: Arc<EphemeronTable>,
    pub(crate) sets: WeakSets,
    pub(crate) finalizers: Finalizers,
    /// What the weak sets are made with.
    keep_alive: Option<Arc<dyn KeepAlive>>,
    /// The runtime's pause gate (a weak set also tells its runtime's
    /// mutators by it).
    pub(crate) gate: Arc<PauseGate>,
}

impl WeakRegistry {
    /// The registry of a runtime whose collector needs objects read from
    /// weak references kept alive (`keep_alive`: the concurrent one), whose
    /// pauses close `gate`, and whose global handles are `strong`.
    pub(crate) fn new(
        keep_alive: Option<Arc<dyn KeepAlive>>,
        gate: &Arc<PauseGate>,
        strong: Arc<HandleTable>,
    ) -> WeakRegistry {
        WeakRegistry {
            handles: Arc::new(WeakTable::new(keep_alive.clone(), gate.clone(), strong)),
            ephemerons: Arc::new(EphemeronTable::new(keep_alive.clone(), gate.clone())),
            sets: WeakSets::default(),
            finalizers: Finalizers::default(),
            keep_alive,
            gate: gate.clone(),
        }
    }

    /// A new weak set of the heap whose reservation is `heap`.
    pub(crate) fn weak_set(&self, heap: std::ops::Range<usize>) -> WeakSet {
        self.sets
            .add(self.keep_alive.clone(), self.gate.clone(), heap)
    }
}
