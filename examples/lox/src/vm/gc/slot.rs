//! [`ValueSlot`]: a word that holds a NaN-boxed [`Value`], in an object or
//! on a shadow stack; the one [`Slot`] type of the binding. It decodes a
//! reference for the collector ([`Slot::load`]) and encodes a moved
//! object's new address ([`Slot::store`]); every access is a relaxed
//! atomic one, since the concurrent collector's workers read and heal
//! slots while the VM runs.

use std::sync::atomic::{AtomicU64, Ordering};

use hotmem::{Address, ObjectReference, Slot};

use super::super::value::Value;

/// A word holding a [`Value`]: a field of an object or a shadow-stack word.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueSlot(*mut u64);

// SAFETY: a slot is an address; its maker promised (`ValueSlot::new`) that
// the word stays valid while the runtime or the VM uses the slot, and
// every access through the slot is a relaxed atomic one, so a concurrent
// GC worker's load racing the VM's store is no data race.
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
