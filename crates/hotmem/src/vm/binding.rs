//! [`Binding`]: what the runtime needs to know about the embedder's
//! objects, roots and weak references. Its root hooks are one side of the
//! roots (the runtime's own roots are in `roots/`, the phase that scans
//! all of them in `gc/core/root_scan.rs`); its weak hooks one side of the
//! weak references (the runtime's own in `weak/`, the views the hooks
//! receive in `vm/weak.rs`, the phase in `gc/core/weak_processing.rs`).

use super::{ObjectReference, Slot, SlotVisitor, WeakForwarding, WeakPass, WeakRefs};
use crate::RootTable;
use hotmem_os::Address;
use hotmem_safepoint::MutatorId;
use std::sync::Arc;

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

    /// Reports the binding's [`RootTable`]s: tables of roots that a
    /// concurrent collector visits after its pauses, while the mutators
    /// run, so that its pauses do not grow with the roots they hold (the
    /// stop-the-world collector visits them in its pauses, with the other
    /// roots). Called in a collection's pauses, on the collecting thread;
    /// a concurrent cycle asks once, in Pause Mark Start: a table made
    /// later holds only current references, which need no visit until the
    /// next cycle. Default: none.
    fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
        let _ = report;
    }

    /// Reports the roots of one attached mutator (its shadow stack, its
    /// registers spilled at the poll), identified by
    /// [`Mutator::id`](crate::Mutator::id). Called for every attached
    /// mutator. Default: none.
    fn scan_mutator_roots<V: SlotVisitor<Self::Slot>>(&self, mutator: MutatorId, visitor: &mut V) {
        let _ = (mutator, visitor);
    }

    /// The slot whose [`Slot::address`] is `addr`: a slot a mutator stored
    /// into through [`Mutator::store_ref`](crate::Mutator::store_ref), or a
    /// word of a [`ShadowStack`](crate::ShadowStack).
    /// Young collections ([`Generations::YoungAndOld`](crate::Generations))
    /// need it: they mark from, and update, the slots of old objects that
    /// the store barrier remembered, and the barrier keeps only addresses;
    /// shadow stacks need it to decode their words.
    ///
    /// Called from the collecting thread, only with an 8-aligned address
    /// whose word lies inside the used part of an old heap page that stays
    /// allocated for the whole collection, or inside the part in use of a
    /// shadow stack: at a safepoint (a stop-the-world collection's pause),
    /// where no mutator writes the word meanwhile; or, for the remembered
    /// slots of a concurrent young cycle, once in its Pause Mark Start and
    /// for the rest just after it, while the mutators run and may write
    /// the word: make the slot from the address without reading the word
    /// (the cycle loads the slot later, as it loads every slot it traces).
    /// Answer for every address or for none. Default: `None`: the runtime cannot rebuild the binding's
    /// slots, and runs full collections only (and a shadow stack fails the
    /// collection with [`GcError::ShadowStackWithoutSlotAt`](crate::GcError::ShadowStackWithoutSlotAt)).
    fn slot_at(&self, addr: Address) -> Option<Self::Slot> {
        let _ = addr;
        None
    }

    /// The binding's own weak references, ephemerons and finalization (a
    /// weak string-intern table, a `WeakMap`, a finalizer list): called
    /// after marking from the strong roots, at the safepoint, on the
    /// collecting thread, in young and full collections.
    ///
    /// `refs` says whether an object is live ([`WeakRefs::is_live`]) and
    /// keeps more objects alive ([`WeakRefs::retain`]: the object and
    /// everything it reaches, traced on the GC workers before the next
    /// call). The runtime calls the hook again while it answers
    /// [`WeakPass::Again`] or retains anything, so a binding with
    /// ephemerons retains each value whose key is live and answers `Again`
    /// until a pass retains nothing; then it clears its weak references to
    /// dead objects and answers [`WeakPass::Done`]. A binding with plain
    /// weak references only clears and answers `Done` in one call.
    ///
    /// Weak slots are the binding's to process: [`Binding::scan_object`]
    /// and the root scans do not report them (a reported slot is strong),
    /// a store into one needs no barrier, and after relocation
    /// [`Binding::forward_weak_refs`] gives each survivor its new address.
    /// The runtime's own [`WeakHandle`](crate::WeakHandle)s,
    /// [`Ephemeron`](crate::Ephemeron)s and finalizers are processed beside
    /// this hook: its ephemerons reach their fixpoint before each call, its
    /// weak handles are cleared and its finalizers run after the last call.
    /// Default: no weak references.
    fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
        let _ = refs;
        WeakPass::Done
    }

    /// After relocation, when some objects moved: replace each weak
    /// reference that [`Binding::process_weak_refs`] left in place (to a
    /// live object) by `refs.forwarded(r)`, its object's new address. The
    /// binding's tables are found where they are now (every strong slot and
    /// root was updated already). Default: nothing.
    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        let _ = refs;
    }
}
