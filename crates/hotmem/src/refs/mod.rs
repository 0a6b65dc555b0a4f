//! References the runtime owns that are not strong: [`WeakHandle`]s,
//! [`Ephemeron`]s and the finalization registry. Each collection processes
//! them after the strong closure (see `gc::weak_refs`), beside the
//! binding's own weak references
//! ([`Binding::process_weak_refs`](crate::Binding::process_weak_refs)).

mod ephemeron;
mod finalizer;
mod weak_handle;

pub use ephemeron::Ephemeron;
pub(crate) use ephemeron::EphemeronTable;
pub(crate) use finalizer::Finalizers;
pub use weak_handle::WeakHandle;
pub(crate) use weak_handle::WeakTable;

use std::sync::Arc;

/// A runtime's weak handles, ephemerons and finalizers.
#[derive(Default)]
pub(crate) struct RefRegistry {
    pub(crate) weak: Arc<WeakTable>,
    pub(crate) ephemerons: Arc<EphemeronTable>,
    pub(crate) finalizers: Finalizers,
}
