//! [`PauseGate`]: what makes the operations on the runtime's references
//! that any thread may call (a weak read, a weak upgrade) atomic with
//! respect to a collection's pauses.
//!
//! A collection decides in a pause what lives (marking, then clearing weak
//! references) and where it is (forwarding roots). A thread that is not
//! stopped there (one that is no mutator, or a mutator in a native region)
//! could otherwise read a weak handle between marking and clearing and be
//! handed an object the pause has already found dead, or read an entry
//! and make a strong handle of it on either side of the pause's root scan.
//! Each pause closes the gate for its length, once every mutator is
//! stopped (so no mutator in managed code ever waits for it); the
//! operations run with the gate open, so each happens wholly before or
//! wholly after every pause.

use crate::gc::core::in_collection::{self, Collected};
use crate::sync::{RwLock, RwLockWriteGuard};

/// One per runtime; shared by the tables whose operations it orders.
#[derive(Default)]
pub(crate) struct PauseGate {
    lock: RwLock<()>,
}

/// The gate closed, for the length of one pause.
pub(crate) struct Closed<'a> {
    _lock: RwLockWriteGuard<'a, ()>,
}

impl Collected for PauseGate {
    fn collection_key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

impl PauseGate {
    /// Runs `f` while no pause of this runtime runs, waiting for the one
    /// that does (a pause is short and never waits for `f`'s caller: see
    /// [`PauseGate::close`]). On a thread inside a collection of this
    /// runtime (a binding callback, a GC worker) `f` runs at once: the
    /// pause in progress is its own.
    pub(crate) fn outside_pauses<R>(&self, f: impl FnOnce() -> R) -> R {
        if in_collection::inside(self) {
            return f();
        }
        let _open = self.lock.read();
        f()
    }

    /// Closes the gate until the returned guard is dropped: for a pause,
    /// once every mutator is stopped or in a safe region (no thread that
    /// waits for the gate is one the pause waits for: the operations
    /// behind it never stop for a safepoint).
    pub(crate) fn close(&self) -> Closed<'_> {
        Closed {
            _lock: self.lock.write(),
        }
    }
}
