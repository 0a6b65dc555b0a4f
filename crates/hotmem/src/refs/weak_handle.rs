//! [`WeakHandle`]: a reference the runtime clears when its object dies and
//! updates when it moves.

use super::KeepAlive;
use crate::vm::ObjectReference;
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

/// Every weak handle of a runtime: an entry per handle, `None` once cleared.
pub(crate) struct WeakTable {
    entries: Mutex<Entries>,
    /// Keeps what a handle hands out alive while the concurrent collector
    /// marks.
    keep_alive: Option<Arc<dyn KeepAlive>>,
}

#[derive(Default)]
struct Entries {
    /// Per handle: `Some` while its object lives; `None` once cleared (the
    /// handle still owns the entry) or free (on the free list).
    slots: Vec<Option<ObjectReference>>,
    free: Vec<usize>,
}

impl WeakTable {
    pub(crate) fn new(keep_alive: Option<Arc<dyn KeepAlive>>) -> WeakTable {
        WeakTable {
            entries: Mutex::default(),
            keep_alive,
        }
    }

    /// What entry `index` holds, kept alive for the cycle that marks now.
    fn read(&self, index: usize) -> Option<ObjectReference> {
        let r = self.entries.lock().slots[index];
        if let (Some(r), Some(k)) = (r, &self.keep_alive) {
            k.keep_alive(r);
        }
        r
    }

    pub(crate) fn add(self: &Arc<Self>, obj: ObjectReference) -> WeakHandle {
        let mut e = self.entries.lock();
        let index = match e.free.pop() {
            Some(i) => {
                e.slots[i] = Some(obj);
                i
            }
            None => {
                e.slots.push(Some(obj));
                e.slots.len() - 1
            }
        };
        WeakHandle {
            table: self.clone(),
            index,
        }
    }

    /// Calls `f` with every uncleared entry; `f` returns the entry's new
    /// value (`None` clears it). At a safepoint.
    pub(crate) fn update(&self, mut f: impl FnMut(ObjectReference) -> Option<ObjectReference>) {
        for slot in self.entries.lock().slots.iter_mut() {
            if let Some(r) = *slot {
                *slot = f(r);
            }
        }
    }
}

/// A weak reference the runtime owns: it does not keep its object alive;
/// once the object is unreachable, a collection clears the handle
/// ([`WeakHandle::get`] returns `None` from then on); while the object
/// lives, the handle follows it when it moves. Weak handles are cleared
/// before finalization: an object that a finalizer resurrects
/// ([`Runtime::register_finalizer`](crate::Runtime::register_finalizer))
/// is already gone from its weak handles.
///
/// Made by [`Runtime::weak_handle`](crate::Runtime::weak_handle). Cloning
/// makes a second weak reference to the same object (or a second cleared
/// one). Dropping it drops the reference.
///
/// ```compile_fail,E0451
/// # use hotmem::WeakHandle;
/// # fn forge<T>() -> T { panic!("compiled, never run") }
/// let h = WeakHandle { table: forge(), index: 0 }; // private fields
/// ```
pub struct WeakHandle {
    table: Arc<WeakTable>,
    index: usize,
}

impl WeakHandle {
    /// The object's current address, or `None` once a collection found it
    /// unreachable. Read it again after anything that may collect.
    pub fn get(&self) -> Option<ObjectReference> {
        self.table.read(self.index)
    }

    /// Whether a collection cleared the handle.
    pub fn is_cleared(&self) -> bool {
        self.get().is_none()
    }
}

impl Clone for WeakHandle {
    fn clone(&self) -> WeakHandle {
        let mut e = self.table.entries.lock();
        let value = e.slots[self.index];
        let index = match e.free.pop() {
            Some(i) => {
                e.slots[i] = value;
                i
            }
            None => {
                e.slots.push(value);
                e.slots.len() - 1
            }
        };
        WeakHandle {
            table: self.table.clone(),
            index,
        }
    }
}

impl Drop for WeakHandle {
    fn drop(&mut self) {
        let mut e = self.table.entries.lock();
        e.slots[self.index] = None;
        e.free.push(self.index);
    }
}

impl fmt::Debug for WeakHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WeakHandle").field(&self.get()).finish()
    }
}
