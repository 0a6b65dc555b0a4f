//! [`LoxBinding`]: what the collector needs to know about Lox objects, the
//! one type the runtime calls back (it implements [`Binding`]).
//!
//! - **Objects**: an object's size and slots come from its header
//!   (`object::size_of`, `object::slot_words`); each slot is reported as a
//!   [`ValueSlot`], which decodes the NaN-boxed word.
//! - **Roots**: all are shadow-stack words (the value stack and the root
//!   block, see `roots`), which the runtime scans itself and hands back
//!   through [`Binding::slot_at`]; the binding reports no roots of its own.
//! - **Weak references**: none of its own; the intern table is the
//!   runtime's [`WeakSet`](hotmem::WeakSet), which the collector sweeps
//!   and forwards itself, outside its pauses.

use hotmem::{Address, Binding, ObjectReference, SlotVisitor};

use super::super::object::{Kind, Obj, size_of, slot_words};
use super::slot::ValueSlot;

/// The Lox VM's binding.
#[derive(Debug, Default)]
pub(crate) struct LoxBinding;

impl Binding for LoxBinding {
    type Slot = ValueSlot;

    #[inline]
    fn object_size(&self, obj: ObjectReference) -> usize {
        // SAFETY: the collector asks only about live objects, at their
        // current address, while no one writes their headers' kind.
        let o = unsafe { Obj::at(obj.get()) };
        match Kind::from_byte(o.kind_byte()) {
            Some(kind) => size_of(kind, o.extent(kind)),
            // Not a Lox object: a size no page holds makes the collector
            // report it (naming the object) instead of going on.
            None => usize::MAX / 2,
        }
    }

    #[inline]
    fn scan_object<V: SlotVisitor<ValueSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        // SAFETY: as in `object_size`.
        let o = unsafe { Obj::at(obj.get()) };
        let Some(kind) = Kind::from_byte(o.kind_byte()) else {
            return;
        };
        for index in slot_words(kind, o.extent(kind)) {
            // SAFETY: `slot_words` lies inside the object (`size_of`), a
            // live object whose memory stays the heap's for the phase.
            visitor.visit_slot(unsafe { ValueSlot::new(o.word(index)) });
        }
    }

    #[inline]
    fn slot_at(&self, addr: Address) -> Option<ValueSlot> {
        // SAFETY: the runtime passes an aligned word of an old heap page or
        // of a shadow stack, valid for the collection, with the mutator
        // stopped; every such word of this VM holds a `Value`.
        Some(unsafe { ValueSlot::new(addr.as_ptr()) })
    }
}
