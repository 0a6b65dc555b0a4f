//! Handles: roots for Rust embedders that keep references in Rust locals.
//!
//! A reference in a Rust local is invisible to the collector: after any
//! call that may collect ([`Mutator::alloc`](crate::Mutator::alloc),
//! [`Mutator::poll`](crate::Mutator::poll), [`Mutator::collect`](crate::Mutator::collect))
//! it may point at a freed or reused place. A [`Handle`] is a root the
//! runtime scans and updates itself: read it again after such a call.

use super::table_gc::{RootForwarder, Step, TableBusy, TableGc};
use crate::slot_table::SlotTable;
use crate::sync::Mutex;
use crate::vm::ObjectReference;
use std::fmt;
use std::sync::Arc;

/// A table of handle entries (one per mutator, one global).
#[derive(Default)]
pub(crate) struct HandleTable {
    entries: Mutex<Entries>,
}

/// An entry per live handle, always holding its object, and what a
/// concurrent cycle does with them ([`TableGc`]).
#[derive(Default)]
struct Entries {
    slots: SlotTable<ObjectReference>,
    gc: TableGc,
}

impl Entries {
    /// Entry `index` as a reader must see it.
    fn read(&mut self, index: usize) -> ObjectReference {
        let Entries { slots, gc } = self;
        let v = gc.read(&mut slots.entries_mut()[index]);
        v.expect("a live handle has a value")
    }
}

impl HandleTable {
    pub(crate) fn add_handle(self: &Arc<Self>, obj: ObjectReference) -> Handle {
        let index = self.entries.lock().slots.add(Some(obj));
        Handle {
            table: self.clone(),
            index,
        }
    }

    /// Calls `f` with every live entry, which it may rewrite: a pause's
    /// visit.
    pub(crate) fn for_each(&self, f: impl FnMut(&mut ObjectReference)) {
        self.entries.lock().slots.values_mut().for_each(f);
    }

    /// Pause Mark Start of a concurrent cycle of `owner`.
    pub(crate) fn begin_marking(&self, owner: usize) -> Result<(), TableBusy> {
        self.entries.lock().gc.begin_marking(owner)
    }

    /// Pause Relocate Start of a concurrent cycle of `owner`.
    pub(crate) fn begin_forwarding(
        &self,
        owner: usize,
        to: &Arc<dyn RootForwarder>,
    ) -> Result<(), TableBusy> {
        self.entries.lock().gc.begin_forwarding(owner, to)
    }

    /// One chunk of `owner`'s concurrent visit (see [`TableGc::step`]).
    pub(crate) fn step<E>(
        &self,
        owner: usize,
        mark: &mut dyn FnMut(ObjectReference) -> Result<(), E>,
    ) -> Result<Step, E> {
        let mut e = self.entries.lock();
        let Entries { slots, gc } = &mut *e;
        gc.step(owner, slots.entries_mut(), mark)
    }

    /// `owner`'s cycle failed before marking the table.
    pub(crate) fn forget_marking(&self, owner: usize) {
        self.entries.lock().gc.forget_marking(owner);
    }
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
        self.table.entries.lock().read(self.index)
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
            let obj = e.read(self.index);
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
