//! [`RootTable`]: a list of roots a binding keeps (a VM's globals, a
//! thread's list of live values) and reports with
//! [`Binding::root_tables`](crate::Binding::root_tables), which concurrent
//! collectors visit while the mutators run (see [`table_gc`](super::table_gc)).

use super::table_gc::{GcTable, Guarded};
use crate::sync::{Mutex, MutexGuard};
use crate::vm::ObjectReference;
use std::fmt;
use std::sync::Arc;

/// A table of roots: slots the binding reports to the runtime through
/// [`Binding::root_tables`](crate::Binding::root_tables). Its lock is held
/// only inside each call, never across an allocation.
///
/// Unlike roots reported slot by slot
/// ([`Binding::scan_global_roots`](crate::Binding::scan_global_roots)),
/// which a collector visits in its pauses, a concurrent collector visits a
/// root table after its pauses, while the mutators run: a pause does not
/// grow with the number of roots held here. In exchange every access goes
/// through the table: a value read from it is current (its object's
/// address now, forwarded if the object moved), and a value stored into
/// it must be current (see the crate's soundness contract).
///
/// ```
/// use hotmem::{Address, Binding, ObjectReference, RootTable, SimpleSlot, SlotVisitor};
/// use std::sync::Arc;
///
/// struct Vm {
///     globals: Arc<RootTable>,
/// }
///
/// impl Binding for Vm {
///     type Slot = SimpleSlot;
///     fn object_size(&self, _obj: ObjectReference) -> usize { 16 }
///     fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, _obj: ObjectReference, _v: &mut V) {}
///     fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
///         report(&self.globals);
///     }
/// }
///
/// let globals = RootTable::new();
/// let i = globals.push(ObjectReference::from_address(Address::new(0x1000)));
/// assert_eq!(globals.get(i).map(|r| r.get()), Some(0x1000));
/// ```
pub struct RootTable {
    /// The entries, and what a concurrent cycle does with them.
    inner: Mutex<Guarded<Vec<Option<ObjectReference>>>>,
}

impl RootTable {
    /// An empty table. Roots held here count once a binding reports the
    /// table ([`Binding::root_tables`](crate::Binding::root_tables)).
    pub fn new() -> Arc<RootTable> {
        Arc::new(RootTable {
            inner: Mutex::new(Guarded::default()),
        })
    }

    /// Appends a root (or an empty slot); returns its index.
    pub fn push(&self, r: Option<ObjectReference>) -> usize {
        let mut e = self.inner.lock();
        e.slots.push(r);
        e.slots.len() - 1
    }

    /// Removes and returns the last root.
    pub fn pop(&self) -> Option<ObjectReference> {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        let i = slots.len().checked_sub(1)?;
        let v = gc.read(&mut slots[i]);
        gc.leaving(i, v);
        slots.pop();
        v
    }

    /// The root at `index` (`None` if empty or out of range).
    pub fn get(&self, index: usize) -> Option<ObjectReference> {
        self.inner.lock().read(index)
    }

    /// The last root.
    pub fn last(&self) -> Option<ObjectReference> {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        gc.read(slots.last_mut()?)
    }

    /// Replaces the root at `index`; false if out of range.
    pub fn set(&self, index: usize, r: Option<ObjectReference>) -> bool {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        match slots.get_mut(index) {
            Some(s) => {
                gc.leaving(index, *s);
                *s = r;
                true
            }
            None => false,
        }
    }

    /// Removes the root at `index` (the last one takes its place).
    pub fn swap_remove(&self, index: usize) -> Option<ObjectReference> {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        if index >= slots.len() {
            return None;
        }
        let v = gc.read(&mut slots[index]);
        gc.leaving(index, v);
        let last = slots.len() - 1;
        // The last value may come from an entry the collector has not
        // forwarded yet into one it has passed: forwarded before it moves.
        gc.heal(&mut slots[last]);
        gc.moving(last, index, slots[last]);
        slots.swap_remove(index);
        v
    }

    /// Keeps the first `len` roots.
    pub fn truncate(&self, len: usize) {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        for (i, v) in slots.iter().enumerate().skip(len) {
            gc.leaving(i, *v);
        }
        slots.truncate(len);
    }

    /// How many slots.
    pub fn len(&self) -> usize {
        self.inner.lock().slots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().slots.is_empty()
    }

    /// Drops every root.
    pub fn clear(&self) {
        self.truncate(0);
    }

    /// The roots now.
    pub fn roots(&self) -> Vec<Option<ObjectReference>> {
        let mut e = self.inner.lock();
        let Guarded { slots, gc } = &mut *e;
        slots.iter_mut().map(|s| gc.read(s)).collect()
    }
}

impl GcTable for RootTable {
    type Slots = Vec<Option<ObjectReference>>;
    fn guarded(&self) -> MutexGuard<'_, Guarded<Self::Slots>> {
        self.inner.lock()
    }
}

impl fmt::Debug for RootTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RootTable")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::table_gc::{CHUNK, RootForwarder, Step};
    use hotmem_os::Address;

    fn r(v: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(v)).unwrap()
    }

    /// Forwards the addresses below 1 MiB by 1 MiB.
    struct Moved;
    impl RootForwarder for Moved {
        fn forward(&self, x: ObjectReference) -> ObjectReference {
            match x.get() < 1 << 20 {
                true => r(x.get() + (1 << 20)),
                false => x,
            }
        }
    }

    /// A `swap_remove` while the collector forwards the table moves the
    /// last entry, not forwarded yet, into one the collector has passed:
    /// it must be forwarded all the same, or the table keeps an old copy's
    /// address once the forwarding ends.
    #[test]
    fn a_root_moved_by_swap_remove_during_forwarding_is_forwarded() {
        let t = RootTable::new();
        for i in 1..=CHUNK + 2 {
            t.push(Some(r(i * 8)));
        }
        let to: Arc<dyn RootForwarder> = Arc::new(Moved);
        t.begin_forwarding(1, &to).unwrap();
        let mut none = |_: ObjectReference| -> Result<(), ()> { Ok(()) };
        assert_eq!(t.step(1, &mut none), Ok(Step::More), "one chunk forwarded");
        assert_eq!(t.swap_remove(0).map(|x| x.get()), Some(8 + (1 << 20)));
        assert_eq!(t.step(1, &mut none), Ok(Step::Done));
        // Idle again: reads return what the entries hold.
        let last = (CHUNK + 2) * 8;
        assert_eq!(t.get(0).map(|x| x.get()), Some(last + (1 << 20)));
        assert!(t.roots().iter().flatten().all(|x| x.get() >= 1 << 20));
    }
}
