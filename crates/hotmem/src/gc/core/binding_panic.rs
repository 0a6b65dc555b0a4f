//! Calls into the binding with its panics caught: a panic in an embedder's
//! callback becomes a [`GcError`] instead of unwinding through the pause.

use crate::GcError;

/// Runs a binding callback; its panic becomes
/// [`GcError::ObjectModelPanicked`] instead of unwinding through the pause.
pub(crate) fn call_model<R>(f: impl FnOnce() -> R) -> Result<R, GcError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|payload| GcError::ObjectModelPanicked(panic_message(&*payload)))
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
