//! Finalization: objects registered with the runtime are, once
//! unreachable, kept alive (with everything they reach) and queued for the
//! embedder, which runs their finalizers on a mutator.

use crate::error::FinalizerError;
use crate::vm::ObjectReference;
use parking_lot::Mutex;
use std::collections::HashSet;

/// The registered objects and the queue of those found unreachable.
#[derive(Default)]
pub(crate) struct Finalizers {
    /// Registered, not yet found unreachable: at their current addresses.
    registered: Mutex<HashSet<ObjectReference>>,
    /// Found unreachable, waiting for a mutator to take them: strong roots
    /// until then.
    queue: Mutex<Vec<ObjectReference>>,
}

impl Finalizers {
    /// Registers `obj` (checked to lie in the heap by the caller).
    pub(crate) fn register(&self, obj: ObjectReference) -> Result<(), FinalizerError> {
        if self.registered.lock().insert(obj) {
            Ok(())
        } else {
            Err(FinalizerError::AlreadyRegistered(obj))
        }
    }

    /// Registered objects waiting to be found unreachable.
    pub(crate) fn registered_count(&self) -> usize {
        self.registered.lock().len()
    }

    /// Takes every queued object (their finalizers are the caller's to run).
    pub(crate) fn take_queue(&self) -> Vec<ObjectReference> {
        std::mem::take(&mut *self.queue.lock())
    }

    /// Calls `f` on every queued object, which it may rewrite (the queue is
    /// a root: marked from, updated when objects move).
    pub(crate) fn for_each_queued(&self, mut f: impl FnMut(&mut ObjectReference)) {
        self.queue.lock().iter_mut().for_each(&mut f);
    }

    /// At a safepoint, after marking: moves every registered object that
    /// `is_live` says is dead to the queue and calls `retain` on it (the
    /// caller keeps it and what it reaches alive); drops a registered
    /// address that `is_object` says is not an object (free heap memory:
    /// it cannot be finalized). Returns (registered examined, queued).
    pub(crate) fn queue_dead(
        &self,
        is_live: impl Fn(ObjectReference) -> bool,
        is_object: impl Fn(ObjectReference) -> bool,
        mut retain: impl FnMut(ObjectReference),
    ) -> (u64, u64) {
        let mut registered = self.registered.lock();
        let found = registered.len() as u64;
        registered.retain(|&r| is_object(r));
        let dead: Vec<ObjectReference> = registered
            .iter()
            .copied()
            .filter(|&r| !is_live(r))
            .collect();
        for r in &dead {
            registered.remove(r);
            retain(*r);
        }
        let queued = dead.len() as u64;
        self.queue.lock().extend(dead);
        (found, queued)
    }

    /// Whether [`Finalizers::queue_dead`] would queue anything now (a
    /// registered object that is an object and dead): whether finalization
    /// will keep objects alive in this collection.
    pub(crate) fn any_to_queue(
        &self,
        is_live: impl Fn(ObjectReference) -> bool,
        is_object: impl Fn(ObjectReference) -> bool,
    ) -> bool {
        self.registered
            .lock()
            .iter()
            .any(|&r| is_object(r) && !is_live(r))
    }

    /// Rewrites every registered object's address (`f` gives the new one).
    /// At a safepoint, after relocation.
    pub(crate) fn update_registered(&self, f: impl Fn(ObjectReference) -> ObjectReference) {
        let mut registered = self.registered.lock();
        let moved: HashSet<ObjectReference> = registered.iter().map(|&r| f(r)).collect();
        *registered = moved;
    }
}
