//! The [`Binding`]: what the collector needs to know about Lox objects.
//!
//! Every slot, in an object or on a shadow stack, holds a NaN-boxed
//! [`Value`]; [`ValueSlot`] decodes it for the collector and encodes a moved
//! object's new address. The roots are all shadow-stack words (the value
//! stack, and the VM's root block: globals, the intern table, the frames'
//! closures, open upvalues, the loader's temporaries), which the runtime
//! scans itself through [`Binding::slot_at`], so the binding reports no
//! roots of its own.
//!
//! The intern table is weak: its array is a `WeakArray` whose words the
//! collector never scans; after marking, [`Binding::process_weak_refs`]
//! replaces each dead string by a tombstone, and after relocation
//! [`Binding::forward_weak_refs`] gives each survivor its new address.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hotmem::{
    Address, Binding, ObjectReference, Slot, SlotVisitor, WeakForwarding, WeakPass, WeakRefs,
};

use super::object::{Kind, Obj, size_of, slot_words};
use super::strings::{EMPTY, TOMBSTONE};
use super::value::Value;

/// A word holding a [`Value`]: a field of an object or a shadow-stack word.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueSlot(*mut u64);

// SAFETY: a slot is an address; the collector uses it only at a safepoint,
// when the mutator that owns the word is stopped, and from one thread at a
// time (`Slot`'s contract with the runtime).
unsafe impl Send for ValueSlot {}
// SAFETY: as for `Send`.
unsafe impl Sync for ValueSlot {}

impl ValueSlot {
    /// The slot at `word`.
    ///
    /// # Safety
    /// `word` is an aligned word of a live object or of a shadow stack,
    /// valid while the runtime or the mutator uses the slot, and written by
    /// no one else meanwhile.
    #[inline(always)]
    pub(crate) unsafe fn new(word: *mut u64) -> ValueSlot {
        ValueSlot(word)
    }
}

impl ValueSlot {
    /// The word, as an atomic: the concurrent collector's workers read
    /// slots while the VM writes them (relaxed: plain loads and stores on
    /// every target).
    #[inline(always)]
    fn atomic(&self) -> &AtomicU64 {
        // SAFETY: `ValueSlot::new`'s contract: a valid, aligned word, only
        // accessed atomically while the slot is shared.
        unsafe { AtomicU64::from_ptr(self.0) }
    }

    /// The word's bits.
    #[inline(always)]
    pub(crate) fn load_bits(&self) -> u64 {
        self.atomic().load(Ordering::Relaxed)
    }

    /// Stores `bits` (not a reference, or a reference through the
    /// barriers).
    #[inline(always)]
    pub(crate) fn store_bits(&self, bits: u64) {
        self.atomic().store(bits, Ordering::Relaxed);
    }
}

// SAFETY: `load` decodes the word's reference (`None` for any other
// value), `store` encodes one, both relaxed atomic accesses of the word
// `ValueSlot::new`'s caller promised valid; `compare_exchange` is one
// compare-and-swap of the encoded words; `address` is the word's.
unsafe impl Slot for ValueSlot {
    #[inline(always)]
    fn load(&self) -> Option<ObjectReference> {
        Value::from_bits(self.load_bits()).as_object()
    }

    #[inline(always)]
    fn store(&self, value: ObjectReference) {
        self.store_bits(Value::object(value.get()).bits());
    }

    fn address(&self) -> Address {
        Address::from_ptr(self.0)
    }

    const COMPARE_EXCHANGE: bool = true;

    #[inline]
    fn compare_exchange(&self, current: ObjectReference, new: ObjectReference) -> bool {
        let (current, new) = (
            Value::object(current.get()).bits(),
            Value::object(new.get()).bits(),
        );
        self.atomic()
            .compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// The Lox VM's binding.
#[derive(Debug, Default)]
pub(crate) struct LoxBinding {
    /// The address of the root word that holds the intern table's
    /// `WeakArray` (0 until the VM has one).
    intern_root: AtomicUsize,
}

impl LoxBinding {
    /// Tells the weak hooks where the intern table's root word is.
    pub(crate) fn set_intern_root(&self, word: *mut u64) {
        self.intern_root.store(word as usize, Ordering::Release);
    }

    /// The intern table's words (after its header), if there is a table.
    fn intern_words(&self) -> Option<(*mut u64, usize)> {
        let root = self.intern_root.load(Ordering::Acquire) as *const u64;
        if root.is_null() {
            return None;
        }
        // SAFETY: the root word is a word of the VM's root shadow stack,
        // which lives as long as the VM, and the VM clears `intern_root`
        // before dropping it; the collector calls the weak hooks at a
        // safepoint, with the VM's thread stopped.
        let table = Value::from_bits(unsafe { root.read() });
        if !table.is_object() {
            return None;
        }
        // SAFETY: a root holding a reference to a live (strongly reachable)
        // `WeakArray`, read at the safepoint.
        let table = unsafe { Obj::new(table) };
        debug_assert!(table.is(Kind::WeakArray));
        Some((table.word(1), table.count() as usize))
    }
}

impl Binding for LoxBinding {
    type Slot = ValueSlot;

    #[inline]
    fn object_size(&self, obj: ObjectReference) -> usize {
        // SAFETY: the collector asks only about live objects, at their
        // current address, with the mutator stopped.
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
            // live object that the collector owns during the phase.
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
        let Some((words, capacity)) = self.intern_words() else {
            return WeakPass::Done;
        };
        for i in 0..capacity {
            // SAFETY: word `i` of the table's `capacity` words, at a
            // safepoint (see `intern_words`).
            let word = unsafe { words.add(i) };
            // SAFETY: as above.
            let raw = unsafe { word.read() } as usize;
            if raw == EMPTY || raw == TOMBSTONE {
                continue;
            }
            let live =
                ObjectReference::from_address(Address::new(raw)).is_some_and(|s| refs.is_live(s));
            if !live {
                // SAFETY: as above.
                unsafe { word.write(TOMBSTONE as u64) };
            }
        }
        WeakPass::Done
    }

    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        let Some((words, capacity)) = self.intern_words() else {
            return;
        };
        for i in 0..capacity {
            // SAFETY: as in `process_weak_refs`; the root word was updated
            // to the table's new address already.
            let word = unsafe { words.add(i) };
            // SAFETY: as above.
            let raw = unsafe { word.read() } as usize;
            if raw == EMPTY || raw == TOMBSTONE {
                continue;
            }
            if let Some(s) = ObjectReference::from_address(Address::new(raw)) {
                // SAFETY: as above; a live string (dead ones are tombstones).
                unsafe { word.write(refs.forwarded(s).get() as u64) };
            }
        }
    }
}
