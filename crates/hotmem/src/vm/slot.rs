//! [`Slot`]: a place that holds a reference, and [`SlotVisitor`], which
//! receives the slots a binding reports.

use super::ObjectReference;
use hotmem_os::Address;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A place that holds a reference: a field of an object, an entry of a
/// shadow stack, a global. The runtime reads it during marking and writes
/// the moved object's new address into it during the update phase.
///
/// A slot decides its own encoding: [`SimpleSlot`] is a plain word holding
/// an address or 0; a binding with tagged or compressed references writes
/// its own `Slot` that decodes in `load` and encodes in `store`.
///
/// With the concurrent collector
/// ([`CollectorMode::Concurrent`](crate::CollectorMode)), GC workers load
/// slots of live objects while mutators store into them: `load` and `store`
/// must be single atomic accesses of the word (relaxed atomics, which
/// compile to plain moves), as [`SimpleSlot`]'s are.
///
/// # Safety
/// The collector frees memory on the strength of what slots tell it: a
/// slot that hides a reference lets the page it points into be freed while
/// it still points there. An implementation promises:
/// - `load` returns the reference the slot holds (the last one stored by
///   `store`, `compare_exchange` or the embedder), and `None` only when it
///   holds none;
/// - `store(v)` makes the slot hold `v`, so that the next `load` returns
///   it; `compare_exchange(current, new)` stores `new` exactly when the
///   slot holds `current` and says whether it did, as one atomic
///   compare-and-swap where [`Slot::COMPARE_EXCHANGE`] is `true`;
/// - the slot's memory may be read and written from any thread for as long
///   as the runtime uses the slot (see [`SimpleSlot::new`]), every access
///   through the slot is atomic, and `address` is where that memory is
///   (the address [`Binding::slot_at`](crate::Binding::slot_at) is given
///   back).
///
/// A trait whose lie could only give wrong answers would stay safe; this
/// one's frees live memory, so implementing it is `unsafe` (as
/// `GlobalAlloc` is):
///
/// ```compile_fail,E0200
/// # use hotmem::{Address, ObjectReference, Slot};
/// #[derive(Copy, Clone, Debug)]
/// struct Liar;
/// impl Slot for Liar { // error: the trait requires an `unsafe impl`
///     fn load(&self) -> Option<ObjectReference> { None }
///     fn store(&self, _: ObjectReference) {}
///     fn address(&self) -> Address { Address::new(8) }
/// }
/// ```
pub unsafe trait Slot: Copy + Send + Sync + fmt::Debug {
    /// The reference the slot holds now; `None` for null (or a
    /// non-reference value such as a tagged integer).
    fn load(&self) -> Option<ObjectReference>;

    /// Stores `value` (the collector stores only into slots that held a
    /// reference, the moved object's new address).
    fn store(&self, value: ObjectReference);

    /// Where the slot is, for error messages.
    fn address(&self) -> Address;

    /// Whether [`Slot::compare_exchange`] is one atomic compare-and-swap of
    /// the slot's word. The concurrent collector moves objects only for a
    /// binding whose slots say so: it heals a slot that holds a moved
    /// object's old address while mutators may store into it, and a heal
    /// must never overwrite a mutator's store. Default: `false`.
    const COMPARE_EXCHANGE: bool = false;

    /// Stores `new` if the slot holds `current`; whether it did. Atomic
    /// (one compare-and-swap of the word) where
    /// [`Slot::COMPARE_EXCHANGE`] says so. The default is a load and a
    /// store, which the runtime uses only while every mutator is stopped.
    fn compare_exchange(&self, current: ObjectReference, new: ObjectReference) -> bool {
        if self.load() == Some(current) {
            self.store(new);
            true
        } else {
            false
        }
    }
}

/// A slot that is one aligned word holding an object's address, or 0 for
/// null. Other values (misaligned, or pointing anywhere but at an object)
/// are reported by the collector as errors.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct SimpleSlot {
    word: *mut usize,
}

// SAFETY: a `SimpleSlot` is an address; its creator promised
// (`SimpleSlot::new`) that the word may be read and written from any thread
// while the runtime uses it, and every access is a relaxed atomic one, so
// a concurrent collector's load racing a mutator's store is no data race.
unsafe impl Send for SimpleSlot {}
// SAFETY: as for `Send`.
unsafe impl Sync for SimpleSlot {}

impl SimpleSlot {
    /// The slot in the word at `word`.
    ///
    /// # Safety
    /// `word` must be 8-byte aligned and valid for reads and writes of a
    /// `usize` for as long as the runtime may use the slot: during the
    /// [`SlotVisitor::visit_slot`] call for a root slot, until the end of
    /// the collection phase for a slot of an object (the object's memory is
    /// the heap's, and the binding reports only slots inside the object).
    /// Other threads access the word only atomically meanwhile (through
    /// slots, or atomics).
    #[inline]
    pub unsafe fn new(word: Address) -> SimpleSlot {
        debug_assert!(word.is_aligned(8), "slot {word} is not word-aligned");
        SimpleSlot {
            word: word.as_ptr(),
        }
    }

    /// The slot of a Rust value.
    ///
    /// # Safety
    /// As [`SimpleSlot::new`] for the address of `*word`.
    #[inline]
    pub unsafe fn from_ref(word: &mut usize) -> SimpleSlot {
        SimpleSlot { word }
    }
}

// SAFETY: `load` and `store` are relaxed atomic accesses of the one word
// the slot names, which `SimpleSlot::new`'s caller promised is valid and
// only atomically accessed while the runtime uses it; `compare_exchange`
// is one compare-and-swap of it; `address` is its address.
unsafe impl Slot for SimpleSlot {
    #[inline]
    fn load(&self) -> Option<ObjectReference> {
        // SAFETY: `SimpleSlot::new`'s contract: a valid, aligned word that
        // others access only atomically while the runtime uses it.
        let raw = unsafe { AtomicUsize::from_ptr(self.word) }.load(Ordering::Relaxed);
        // A garbage, misaligned value is not null: the collector must see it
        // to report it, so it is passed through `from_raw`.
        ObjectReference::from_raw(raw)
    }

    #[inline]
    fn store(&self, value: ObjectReference) {
        // SAFETY: as in `load`.
        unsafe { AtomicUsize::from_ptr(self.word) }.store(value.get(), Ordering::Relaxed);
    }

    fn address(&self) -> Address {
        Address::from_ptr(self.word)
    }

    const COMPARE_EXCHANGE: bool = true;

    #[inline]
    fn compare_exchange(&self, current: ObjectReference, new: ObjectReference) -> bool {
        // SAFETY: as in `load`.
        unsafe { AtomicUsize::from_ptr(self.word) }
            .compare_exchange(
                current.get(),
                new.get(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

impl fmt::Debug for SimpleSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimpleSlot({:p})", self.word)
    }
}

/// Receives the slots a binding reports: the runtime's marker during
/// marking, its updater during the update phase.
pub trait SlotVisitor<S: Slot> {
    /// Called once for each reference slot.
    fn visit_slot(&mut self, slot: S);
}

impl<S: Slot, F: FnMut(S)> SlotVisitor<S> for F {
    #[inline]
    fn visit_slot(&mut self, slot: S) {
        self(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_slots_load_and_store() {
        let mut word = 0usize;
        // SAFETY: a local word, used only here.
        let slot = unsafe { SimpleSlot::from_ref(&mut word) };
        assert_eq!(slot.load(), None);
        let r = ObjectReference::from_address(Address::new(0x2000)).unwrap();
        slot.store(r);
        assert_eq!(slot.load(), Some(r));
        assert_eq!(word, 0x2000);
    }
}
