//! The embedder's side of a collection: the binding.
//!
//! The embedder describes its objects; the runtime traces, moves and
//! updates them. A [`Binding`] says how big an object is
//! ([`Binding::object_size`]), which of its words hold references
//! ([`Binding::scan_object`], reporting each one as a [`Slot`] to a
//! [`SlotVisitor`]), and where the roots are ([`Binding::scan_global_roots`],
//! [`Binding::scan_mutator_roots`]). Everything on a per-object path is
//! generic (static dispatch): the runtime monomorphizes its collector for
//! the binding type once, in
//! [`RuntimeBuilder::binding`](crate::RuntimeBuilder::binding), and calls it
//! through one virtual call per collection.
//!
//! # What a collection does with the binding
//! A collection runs at a safepoint (every mutator stopped at a poll or in
//! native code):
//! 1. **roots**: the runtime visits the global roots, every attached
//!    mutator's roots, its own [`Handle`](crate::Handle)s and the pinned
//!    objects;
//! 2. **mark**: GC workers trace from the roots in parallel (work stealing),
//!    calling `object_size` and `scan_object` once for every reachable
//!    object, and record each object in its page's live map;
//! 3. **relocate**: sparse pages (live bytes below the fragmentation limit,
//!    no pinned object) are evacuated on workers bound to the page's NUMA
//!    node; each move is recorded in the page's forwarding table;
//! 4. **update**: the runtime visits the slots of every live object and
//!    every root again and stores the new address into each slot whose
//!    target moved ([`Slot::store`]);
//! 5. empty and evacuated pages are freed.
//!
//! # Where concurrency attaches
//! Today every phase runs with the mutators stopped, and the barriers
//! ([`Mutator::load_ref`](crate::Mutator::load_ref),
//! [`Mutator::store_ref`](crate::Mutator::store_ref)) are no-ops. ZGC-style
//! concurrent marking attaches to the store barrier (SATB: the overwritten
//! value is pushed to the marking queues while marking is active), and
//! concurrent relocation to the load barrier (a reference into a page being
//! evacuated is looked up in, or inserted into, the page's forwarding
//! table with the same compare-and-swap the workers use, then healed by
//! storing the new address back into the slot). Neither changes this trait:
//! the embedder keeps describing objects and slots.

use hotmem_os::Address;
use hotmem_safepoint::MutatorId;
use std::fmt;
use std::num::NonZeroUsize;

/// A reference to an object in the heap: a non-null, word-aligned address,
/// distinct from [`Address`] so that a reference is never confused with an
/// arbitrary address (an interior pointer, a page boundary).
///
/// An `ObjectReference` is only a value: holding one does not keep the
/// object alive or in place. It stays valid until the next collection, which
/// may move or free the object (see [`Mutator::alloc`](crate::Mutator::alloc)).
///
/// The only way to make one is [`ObjectReference::from_address`], which
/// refuses null and misaligned addresses:
///
/// ```
/// # use hotmem::{Address, ObjectReference};
/// assert!(ObjectReference::from_address(Address::new(0x1000)).is_some());
/// assert!(ObjectReference::from_address(Address::new(0x1001)).is_none());
/// ```
///
/// ```compile_fail,E0423
/// # use hotmem::ObjectReference;
/// let r = ObjectReference(std::num::NonZeroUsize::new(0x1001).unwrap()); // private
/// ```
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectReference(NonZeroUsize);

impl ObjectReference {
    /// The alignment of every object reference (a heap word).
    pub const ALIGN: usize = 8;

    /// `addr` as a reference; `None` for null or an address that is not
    /// word-aligned.
    #[inline]
    pub fn from_address(addr: Address) -> Option<ObjectReference> {
        if addr.get() % Self::ALIGN != 0 {
            return None;
        }
        NonZeroUsize::new(addr.get()).map(ObjectReference)
    }

    /// The object's address.
    #[inline]
    pub fn to_address(self) -> Address {
        Address::new(self.0.get())
    }

    /// The address as an integer.
    #[inline]
    pub fn get(self) -> usize {
        self.0.get()
    }
}

impl fmt::Debug for ObjectReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectReference({:#x})", self.0)
    }
}

impl fmt::Display for ObjectReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A place that holds a reference: a field of an object, an entry of a
/// shadow stack, a global. The runtime reads it during marking and writes
/// the moved object's new address into it during the update phase.
///
/// A slot decides its own encoding: [`SimpleSlot`] is a plain word holding
/// an address or 0; a binding with tagged or compressed references writes
/// its own `Slot` that decodes in `load` and encodes in `store`.
pub trait Slot: Copy + Send + Sync + fmt::Debug {
    /// The reference the slot holds now; `None` for null (or a
    /// non-reference value such as a tagged integer).
    fn load(&self) -> Option<ObjectReference>;

    /// Stores `value` (the collector stores only into slots that held a
    /// reference, the moved object's new address).
    fn store(&self, value: ObjectReference);

    /// Where the slot is, for error messages.
    fn address(&self) -> Address;
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
// while the runtime uses it (at a safepoint, mutators do not touch it).
unsafe impl Send for SimpleSlot {}
// SAFETY: as for `Send`: loads and stores are word-sized and atomic-free
// only because the runtime never uses a slot from two threads at once.
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
    /// Nothing else may write the word meanwhile.
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

impl Slot for SimpleSlot {
    #[inline]
    fn load(&self) -> Option<ObjectReference> {
        // SAFETY: `SimpleSlot::new`'s contract: a valid, aligned word that
        // nobody else writes while the runtime uses it.
        let raw = unsafe { self.word.read() };
        // A garbage, misaligned value is not null: the collector must see it
        // to report it, so it is passed through `from_raw`.
        ObjectReference::from_raw(raw)
    }

    #[inline]
    fn store(&self, value: ObjectReference) {
        // SAFETY: as in `load`.
        unsafe { self.word.write(value.get()) }
    }

    fn address(&self) -> Address {
        Address::from_ptr(self.word)
    }
}

impl fmt::Debug for SimpleSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimpleSlot({:p})", self.word)
    }
}

impl ObjectReference {
    /// A raw word as a reference, misaligned values included (the collector
    /// rejects those with an error naming the slot); `None` only for 0.
    #[inline]
    pub(crate) fn from_raw(raw: usize) -> Option<ObjectReference> {
        NonZeroUsize::new(raw).map(ObjectReference)
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

/// What the runtime needs to know about the embedder's objects. Implement it
/// for your object model and pass it to
/// [`RuntimeBuilder::binding`](crate::RuntimeBuilder::binding).
///
/// The methods are called during collections, at a safepoint, from the
/// collecting thread (roots) and from GC worker threads concurrently
/// (`object_size`, `scan_object`). They must not allocate, collect, attach
/// mutators or wait for mutators (those calls return
/// [`InsideCollection`](crate::GcError::InsideCollection) errors, or would
/// wait forever for a lock a stopped mutator holds). A panic is caught: the
/// collection returns [`GcError::ObjectModelPanicked`](crate::GcError::ObjectModelPanicked)
/// or [`GcError::WorkerPanicked`](crate::GcError::WorkerPanicked), and no
/// memory that may still be referenced is freed.
///
/// Bad answers are errors, not corruption: a reference outside the heap,
/// into a free page, past the used part of a page, misaligned, or into the
/// middle of another live object, and a size that does not fit the
/// object's page stop the collection with a [`GcError`](crate::GcError)
/// naming the object and the slot before anything is moved.
///
/// How interior pointers are found: each page's live map records the first
/// and the last word of every marked object, and a walk of both bitmaps
/// before anything moves finds two marked objects that overlap
/// ([`GcError::OverlappingObjects`](crate::GcError::OverlappingObjects)).
/// The runtime keeps no object-start table (it would cost every allocation
/// an atomic store), so a reference into the middle of an object that
/// nothing else keeps alive is taken for an object start: its size is
/// checked against its page, and the bytes it covers are the dead object's.
/// That is the binding's bug to fix, but it never makes the runtime copy an
/// object twice or free memory that a live slot refers to.
pub trait Binding: Send + Sync + 'static {
    /// How the binding's references are stored.
    type Slot: Slot;

    /// The size in bytes of the object at `obj`, header included (rounded up
    /// to 8 by the runtime). Called once per object per collection, during
    /// marking, with the object at its current address.
    fn object_size(&self, obj: ObjectReference) -> usize;

    /// Reports every reference slot of the object at `obj` to `visitor`.
    /// Called during marking and again during the update phase (then with
    /// the object at its new address when it moved); it must report the
    /// same slots both times.
    fn scan_object<V: SlotVisitor<Self::Slot>>(&self, obj: ObjectReference, visitor: &mut V);

    /// Reports the global roots (statics, interned strings, JNI-style
    /// global handles). Default: none.
    fn scan_global_roots<V: SlotVisitor<Self::Slot>>(&self, visitor: &mut V) {
        let _ = visitor;
    }

    /// Reports the roots of one attached mutator (its shadow stack, its
    /// registers spilled at the poll), identified by
    /// [`Mutator::id`](crate::Mutator::id). Called for every attached
    /// mutator. Default: none.
    fn scan_mutator_roots<V: SlotVisitor<Self::Slot>>(&self, mutator: MutatorId, visitor: &mut V) {
        let _ = (mutator, visitor);
    }

    /// The slot whose [`Slot::address`] is `addr`: a slot a mutator stored
    /// into through [`Mutator::store_ref`](crate::Mutator::store_ref).
    /// Young collections ([`Generations::YoungAndOld`](crate::Generations))
    /// need it: they mark from, and update, the slots of old objects that
    /// the store barrier remembered, and the barrier keeps only addresses.
    ///
    /// Called at a safepoint, from the collecting thread, only with an
    /// 8-aligned address whose word lies inside the used part of an old
    /// heap page that stays allocated for the whole collection, and that no
    /// mutator writes meanwhile. Default: `None`: the runtime cannot rebuild
    /// the binding's slots, and runs full collections only.
    fn slot_at(&self, addr: Address) -> Option<Self::Slot> {
        let _ = addr;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_non_null_and_aligned() {
        assert_eq!(ObjectReference::from_address(Address::NULL), None);
        assert_eq!(ObjectReference::from_address(Address::new(0x1004)), None);
        let r = ObjectReference::from_address(Address::new(0x1008)).unwrap();
        assert_eq!(r.to_address(), Address::new(0x1008));
        assert_eq!(std::mem::size_of::<Option<ObjectReference>>(), 8);
    }

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
