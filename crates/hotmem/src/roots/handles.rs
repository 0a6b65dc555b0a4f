//! Handles: roots for Rust embedders that keep references in Rust locals.
//!
//! A reference in a Rust local is invisible to the collector: after any
//! call that may collect ([`Mutator::alloc`](crate::Mutator::alloc),
//! [`Mutator::poll`](crate::Mutator::poll), [`Mutator::collect`](crate::Mutator::collect))
//! it may point at a freed or reused place. A [`Handle`] is a root the
//! runtime scans and updates itself: read it again after such a call.

use super::table_gc::{GcTable, Guarded};
use crate::slot_table::SlotTable;
use crate::sync::{Mutex, MutexGuard};
use crate::vm::ObjectReference;
use std::fmt;
use std::sync::Arc;

/// A table of handle entries (one per mutator, one global): an entry per
/// live handle, always holding its object, and what a concurrent cycle
/// does with them ([`TableGc`](super::table_gc::TableGc)).
#[derive(Default)]
pub(crate) struct HandleTable {
    entries: Mutex<Guarded<SlotTable<ObjectReference>>>,
}

impl HandleTable {
    pub(crate) fn add_handle(self: &Arc<Self>, obj: ObjectReference) -> Handle {
        let index = self.entries.lock().slots.add(Some(obj));
        Handle {
            table: self.clone(),
            index,
        }
    }
}

impl GcTable for HandleTable {
    type Slots = SlotTable<ObjectReference>;
    fn guarded(&self) -> MutexGuard<'_, Guarded<Self::Slots>> {
        self.entries.lock()
    }
}

/// Entry `index` of a locked table, which a live handle owns.
fn read(e: &mut Guarded<SlotTable<ObjectReference>>, index: usize) -> ObjectReference {
    e.read(index).expect("a live handle has a value")
}

/// A root the runtime owns: it keeps its object alive and is updated when
/// the object moves. Read it again ([`Handle::get`]) after anything that may
/// collect. Dropping it drops the root.
///
/// Made by [`Mutator::handle`](crate::Mutator::handle) or
/// [`Runtime::global_handle`](crate::Runtime::global_handle). Cloning makes a
/// second root to the same object. There is no other constructor: a handle
/// always belongs to a table the runtime scans.
///
/// ```compile_fail,E0451
/// # use hotmem::Handle;
/// # fn forge<T>() -> T { unimplemented!() }
/// let h = Handle { table: forge(), index: 0 }; // private fields
/// ```
pub struct Handle {
    table: Arc<HandleTable>,
    index: usize,
}

impl Handle {
    /// The object's current address.
    pub fn get(&self) -> ObjectReference {
        read(&mut self.table.entries.lock(), self.index)
    }

    /// Points the handle at another object. `obj` must be current (see
    /// the crate's soundness contract): read by a mutator in managed code
    /// since its last safepoint opportunity, or inside
    /// [`Runtime::run_at_safepoint`](crate::Runtime::run_at_safepoint).
    /// A thread that is not a mutator holds no current reference
    /// otherwise: to copy one handle into another it clones it
    /// ([`Handle::clone`]), and it upgrades a weak handle with
    /// [`WeakHandle::upgrade`](crate::WeakHandle::upgrade), each atomic
    /// with respect to collections. A stale `obj` leaves the handle
    /// dangling: the next collection reports it as a
    /// [`GcError`](crate::GcError) (nothing is corrupted).
    pub fn set(&self, obj: ObjectReference) {
        let mut e = self.table.entries.lock();
        let old = e.slots.get(self.index);
        e.gc.leaving(self.index, old);
        e.slots.set(self.index, Some(obj));
    }
}

impl Clone for Handle {
    /// A second root to the same object, on any thread: the entry is read
    /// and the new one made under one lock, which a collection's update of
    /// the table also takes, so the clone never names a copy the
    /// collection has just left.
    fn clone(&self) -> Handle {
        let index = {
            let mut e = self.table.entries.lock();
            let obj = read(&mut e, self.index);
            e.slots.add(Some(obj))
        };
        Handle {
            table: self.table.clone(),
            index,
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut e = self.table.entries.lock();
        let old = e.slots.get(self.index);
        e.gc.leaving(self.index, old);
        e.slots.release(self.index);
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Handle").field(&self.get()).finish()
    }
}
