//! A binding whose slots load and store but cannot compare-and-swap
//! atomically (`Slot::COMPARE_EXCHANGE` is the default, `false`): what the
//! moving concurrent collector refuses at build time. Its objects are 16
//! bytes with no reference slot, so no slot is ever reported.

use hotmem::{Address, Binding, ObjectReference, Slot, SlotVisitor};

/// A slot that cannot be healed atomically: the address of a word.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PlainSlot(usize);

// SAFETY: `load` and `store` read and write the word at `self.0`, which a
// binding's slot names; this binding reports none, and never runs a
// collector that would need the accesses atomic (it is refused, or runs
// without moving).
unsafe impl Slot for PlainSlot {
    fn load(&self) -> Option<ObjectReference> {
        // SAFETY: the slot's word (never called: no slot is reported).
        ObjectReference::from_address(Address::new(unsafe { *(self.0 as *const usize) }))
    }
    fn store(&self, value: ObjectReference) {
        // SAFETY: as in `load`.
        unsafe { *(self.0 as *mut usize) = value.get() }
    }
    fn address(&self) -> Address {
        Address::new(self.0)
    }
}

/// Objects of 16 bytes with no reference slot, over [`PlainSlot`].
pub(crate) struct PlainBinding;

impl Binding for PlainBinding {
    type Slot = PlainSlot;
    fn object_size(&self, _: ObjectReference) -> usize {
        16
    }
    fn scan_object<V: SlotVisitor<PlainSlot>>(&self, _: ObjectReference, _: &mut V) {}
}
