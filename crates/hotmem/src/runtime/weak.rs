//! Weak handles, ephemerons and finalizers, as the runtime hands them out.

use super::Runtime;
use crate::error::FinalizerError;
use crate::vm::ObjectReference;
use crate::weak::{Ephemeron, WeakHandle, WeakSet};

impl Runtime {
    /// A weak reference to `obj` that any thread may hold: it does not keep
    /// the object alive, is cleared by the collection that finds the object
    /// unreachable, and follows the object when it moves. A value that is
    /// not a live object of this heap is cleared by the next collection.
    pub fn weak_handle(&self, obj: ObjectReference) -> WeakHandle {
        self.inner.gc.weak.handles.add(obj)
    }

    /// A new, empty [`WeakSet`] of this runtime: objects found by hash and
    /// equality, each held weakly (a VM's string intern table), processed
    /// by the collections outside their pauses.
    pub fn weak_set(&self) -> WeakSet {
        let reserved = self.inner.gc.pages.reserved();
        let start = reserved.start().get();
        self.inner.gc.weak.weak_set(start..start + reserved.len())
    }

    /// An ephemeron: `value` is kept alive through it exactly while `key`
    /// is reachable otherwise (see [`Ephemeron`]). Neither is kept alive by
    /// the ephemeron alone; both are cleared once the key is unreachable.
    pub fn ephemeron(&self, key: ObjectReference, value: ObjectReference) -> Ephemeron {
        self.inner.gc.weak.ephemerons.add(key, value)
    }

    /// Registers `obj` for finalization: the collection that finds it
    /// unreachable keeps it (and everything it reaches) alive and queues
    /// it; a mutator takes the queue with
    /// [`Mutator::take_finalizable`](crate::Mutator::take_finalizable), runs
    /// its finalizer, and may resurrect it by storing it somewhere
    /// reachable. Each registration is queued once; an object that died
    /// again after its finalizer ran is collected unless registered again.
    /// An address in the heap that is not a live object is dropped from
    /// the registry by the next collection without being queued.
    ///
    /// # Errors
    /// [`FinalizerError::NotInHeap`] for an address outside the heap;
    /// [`FinalizerError::AlreadyRegistered`] if `obj` is registered and
    /// not yet queued. Nothing is registered then.
    pub fn register_finalizer(&self, obj: ObjectReference) -> Result<(), FinalizerError> {
        if !self.inner.gc.pages.reserved().contains(obj.to_address()) {
            return Err(FinalizerError::NotInHeap(obj));
        }
        self.inner.gc.weak.finalizers.register(obj)
    }

    /// Objects registered for finalization and not yet found unreachable.
    pub fn finalizers_registered(&self) -> usize {
        self.inner.gc.weak.finalizers.registered_count()
    }
}
