//! Pins: objects handed to native code stay alive and in place.

use crate::vm::ObjectReference;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Pinned objects and how many guards pin each.
#[derive(Default)]
pub(crate) struct PinTable {
    pinned: Mutex<HashMap<ObjectReference, usize>>,
}

impl PinTable {
    pub(crate) fn pin(self: &Arc<Self>, obj: ObjectReference) -> PinGuard {
        *self.pinned.lock().entry(obj).or_insert(0) += 1;
        PinGuard {
            table: self.clone(),
            obj,
        }
    }

    /// The pinned objects now.
    pub(crate) fn snapshot(&self) -> Vec<ObjectReference> {
        self.pinned.lock().keys().copied().collect()
    }
}

/// Keeps one object alive and in place: its page is never evacuated while
/// the guard lives, so the address stays valid for native code. Made by
/// [`Mutator::pin`](crate::Mutator::pin); dropping it unpins. It cannot be
/// cloned (one guard, one pin):
///
/// ```compile_fail,E0599
/// # fn guard() -> hotmem::PinGuard { panic!("compiled, never run") }
/// let g = guard();
/// let g2 = g.clone();
/// ```
pub struct PinGuard {
    table: Arc<PinTable>,
    obj: ObjectReference,
}

impl PinGuard {
    /// The pinned object (its address does not change while pinned).
    pub fn object(&self) -> ObjectReference {
        self.obj
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let mut p = self.table.pinned.lock();
        if let Some(n) = p.get_mut(&self.obj) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.obj);
            }
        }
    }
}

impl fmt::Debug for PinGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PinGuard").field(&self.obj).finish()
    }
}
