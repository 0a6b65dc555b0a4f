//! [`LoxBinding`]: what the collector needs to know about Lox objects, the
//! one type the runtime calls back (it implements [`Binding`]).
//!
//! - **Objects**: an object's size and slots come from its header
//!   (`object::size_of`, `object::slot_words`); each slot is reported as a
//!   [`ValueSlot`], which decodes the NaN-boxed word.
//! - **Roots**: all are shadow-stack words (the value stack and the root
//!   block, see `roots`), which the runtime scans itself and hands back
//!   through [`Binding::slot_at`]; the binding reports no roots of its own.
//! - **Weak references**: the intern table's words ([`InternTable`]): after
//!   marking, [`Binding::process_weak_refs`] replaces each dead string by a
//!   tombstone, and after relocation [`Binding::forward_weak_refs`] gives
//!   each survivor its new address.

use std::sync::atomic::{AtomicUsize, Ordering};

use hotmem::{Address, Binding, ObjectReference, SlotVisitor, WeakForwarding, WeakPass, WeakRefs};

use super::super::object::{Kind, Obj, size_of, slot_words};
use super::super::value::Value;
use super::intern::InternTable;
use super::slot::ValueSlot;

/// The Lox VM's binding.
#[derive(Debug, Default)]
pub(crate) struct LoxBinding {
    /// The address of the root word that holds the intern table's
    /// `WeakArray` (0 while there is none to process).
    intern_root: AtomicUsize,
}

impl LoxBinding {
    /// Tells the weak hooks where the intern table's root word is (null:
    /// nowhere, the hooks do nothing).
    ///
    /// # Safety
    /// Unless null, `word` is a word of a shadow stack of a mutator
    /// attached to the runtime this binding serves, holding nil or the
    /// intern table's `WeakArray`, and it stays so until this is called
    /// again (with null, while that mutator is still attached, before the
    /// shadow stack is dropped).
    pub(crate) unsafe fn set_intern_root(&self, word: *mut u64) {
        self.intern_root.store(word as usize, Ordering::Release);
    }

    /// The intern table, if there is one. Called by the weak hooks only,
    /// at a safepoint.
    fn intern_table(&self) -> Option<InternTable> {
        let root = self.intern_root.load(Ordering::Acquire) as *const u64;
        if root.is_null() {
            return None;
        }
        // SAFETY: `set_intern_root`'s contract: a word of a live shadow
        // stack; the weak hooks run at a safepoint, with the VM's thread
        // stopped, so nothing writes it meanwhile.
        let table = Value::from_bits(unsafe { root.read() });
        if !table.is_object() {
            return None;
        }
        // SAFETY: a root holding a reference to a live (strongly reachable)
        // `WeakArray`, read at the safepoint: the runtime updated the root
        // before the hooks that follow relocation run.
        Some(unsafe { InternTable::new(Obj::new(table)) })
    }
}

impl Binding for LoxBinding {
    type Slot = ValueSlot;

    #[inline]
    fn object_size(&self, obj: ObjectReference) -> usize {
        // SAFETY: the collector asks only about live objects, at their
        // current address, while no one writes their headers' kind.
        let o = unsafe { Obj::at(obj.get()) };
        match Kind::from_byte(o.kind_byte()) {
            Some(kind) => size_of(kind, o.count()),
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
        for index in slot_words(kind, o.count()) {
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

    fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
        if let Some(table) = self.intern_table() {
            table.sweep(|s| refs.is_live(s));
        }
        WeakPass::Done
    }

    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        if let Some(table) = self.intern_table() {
            table.forward(|s| refs.forwarded(s));
        }
    }
}
