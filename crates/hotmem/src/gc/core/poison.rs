//! [`Poison`]: what a collection that failed half-way through moving
//! objects leaves behind.
//!
//! A failure before anything moved (marking, the binding's weak hook, a
//! relocation whose copies nothing refers to yet) leaves the heap as it
//! was: the collection returns its error and the next one starts afresh.
//! A failure after references began to be rewritten (a binding callback
//! that panics while roots or slots are updated, in the stop-the-world
//! update or in a concurrent cycle's Pause Relocate Start) leaves some of
//! them naming an object's new copy and others its old one. Nothing can
//! tell the two apart afterwards, so the runtime is poisoned, as a
//! `std::sync::Mutex` whose holder panicked: no collection runs again and
//! no page is freed (both copies stay valid memory), and every collection
//! and every allocation that would need one returns
//! [`GcError::Poisoned`] with the failure that caused it.

use crate::GcError;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the runtime is poisoned, and why.
#[derive(Default)]
pub(crate) struct Poison {
    poisoned: AtomicBool,
    cause: Mutex<Option<GcError>>,
}

impl Poison {
    /// Poisons the runtime with `cause` (the first cause stays).
    pub(crate) fn set(&self, cause: &GcError) {
        let mut c = self.cause.lock();
        if c.is_none() {
            *c = Some(cause.clone());
        }
        self.poisoned.store(true, Ordering::Release);
    }

    /// `Err(GcError::Poisoned)` once the runtime is poisoned.
    #[inline]
    pub(crate) fn check(&self) -> Result<(), GcError> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        self.poisoned_error()
    }

    #[cold]
    fn poisoned_error(&self) -> Result<(), GcError> {
        let cause = self.cause.lock().clone();
        Err(GcError::Poisoned {
            cause: Box::new(cause.unwrap_or(GcError::InsideCollection)),
        })
    }

    /// `result`, of a step of a collection after references began to be
    /// rewritten: its error poisons the runtime.
    pub(crate) fn on_error<R>(&self, result: Result<R, GcError>) -> Result<R, GcError> {
        if let Err(e) = &result {
            self.set(e);
        }
        result
    }
}
