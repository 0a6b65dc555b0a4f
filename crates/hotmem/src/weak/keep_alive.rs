//! [`KeepAlive`]: what a weak read tells the collector that marks now.

use crate::vm::ObjectReference;

/// Keeps an object read from a weak reference alive in the cycle that runs
/// now (the concurrent collector: see
/// [`Mutator::keep_alive`](crate::Mutator::keep_alive)).
pub(crate) trait KeepAlive: Send + Sync {
    /// `obj` was read from a weak reference.
    fn keep_alive(&self, obj: ObjectReference);
}
