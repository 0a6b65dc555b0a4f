//! The barriers' public entry points: every reference a mutator loads from
//! or stores into a heap object goes through [`Mutator::load_ref`] and
//! [`Mutator::store_ref`] (and every other overwrite of a heap slot through
//! [`Mutator::before_overwrite`]). The store barrier feeds the young
//! generation's remembered set and, while the concurrent collector marks,
//! logs the overwritten reference (SATB); the load barrier forwards and
//! heals references into the pages the concurrent collector evacuates.
//! Each is one call into the barriers' room,
//! [`gc::barriers`](crate::gc::barriers), where the fast paths sit beside
//! the collector's side they feed; here is only what needs the mutator: a
//! slow path leaves a leaked native region before it reads the
//! collector's relocation set.

use super::Mutator;
use crate::vm::{ObjectReference, Slot};

impl Mutator {
    /// The load barrier: reads a reference field through it.
    ///
    /// With the concurrent collector ([`CollectorMode::Concurrent`](crate::CollectorMode::Concurrent)),
    /// from a cycle's Pause Relocate Start to the next cycle's Pause Mark
    /// End, a reference into a page being evacuated is stale: the barrier
    /// returns the object's new address, relocating the object itself if
    /// no GC worker has yet, and heals the slot with a compare-and-swap
    /// that replaces only the stale value. The fast path is a load and
    /// one lookup of the address in the relocation set's table of the
    /// heap's granules (all zero between cycles). With any other collector
    /// one test of which barriers the runtime has.
    ///
    /// Every load of a reference from a heap slot must come through here
    /// with the concurrent collector; reading a slot directly may return
    /// the address of an object's old copy.
    #[inline]
    pub fn load_ref<S: Slot>(&self, slot: S) -> Option<ObjectReference> {
        let r = slot.load()?;
        Some(self.after_load(&slot, r))
    }

    /// The load barrier for `r`, which the embedder just loaded from
    /// `slot` itself: what [`Mutator::load_ref`] returns for it. For a
    /// slot of tagged values, read once and decoded by the embedder (a
    /// second, atomic load of the same word would not be folded away):
    ///
    /// ```
    /// # use hotmem::{Mutator, ObjectReference, Slot};
    /// fn field<S: Slot>(me: &Mutator, slot: S, word: u64) -> Option<ObjectReference> {
    ///     // `word` was read from `slot`; decode it as the binding does.
    ///     let r = ObjectReference::from_address(hotmem::Address::new(word as usize))?;
    ///     Some(me.after_load(&slot, r))
    /// }
    /// ```
    #[inline]
    pub fn after_load<S: Slot>(&self, slot: &S, r: ObjectReference) -> ObjectReference {
        match self.may_be_stale(r.get()) {
            true => self.after_load_slow(slot, r),
            false => r,
        }
    }

    /// The load barrier's test on an address the embedder decoded itself
    /// from a word it just loaded from a heap slot: `false` when a
    /// reference to `addr` needs nothing (use the word as loaded), `true`
    /// when it may be stale and must go through [`Mutator::after_load`]
    /// (which tests again, and returns it unchanged if not). Any value is
    /// accepted. With a collector that moves nothing while the mutators
    /// run it is always `false`; with the concurrent collector it is one
    /// lookup in the relocation set's table, true only for an address in
    /// a page being (or just) evacuated.
    ///
    /// For a binding whose slots hold tagged values, the fast path needs
    /// neither an [`ObjectReference`] (whose checks it saves) nor a
    /// re-encoding of the word:
    ///
    /// ```
    /// # use hotmem::{Address, Mutator, ObjectReference, Slot};
    /// // `word` was read from `slot`; the binding's references are its
    /// // words with the low bit set, the address in the others.
    /// fn field<S: Slot>(me: &Mutator, slot: S, word: u64) -> u64 {
    ///     let addr = (word & !1) as usize;
    ///     if word & 1 == 0 || !me.may_be_stale(addr) {
    ///         return word; // a number, or a reference that is current
    ///     }
    ///     let r = ObjectReference::from_address(Address::new(addr)).unwrap();
    ///     me.after_load(&slot, r).get() as u64 | 1
    /// }
    /// ```
    #[inline]
    pub fn may_be_stale(&self, addr: usize) -> bool {
        // Which barriers the runtime has first: without the concurrent
        // collector that one test is the whole barrier. Code compiled for
        // the concurrent set skips it (`BarrierSet::may_be_stale`).
        self.barriers.concurrent.is_some() && self.barriers.may_be_relocating(addr)
    }

    /// [`Mutator::after_load`] for a reference that may lie in the
    /// relocation set: out of line, so that the inlined barrier stays a
    /// test of the mutator's state and one table lookup.
    ///
    /// The relocation set it reads lives only until the next pause, so
    /// the thread must be in managed code, where no pause begins without
    /// it: a native region leaked with `mem::forget` is left first (the
    /// same check as [`Mutator::alloc`]'s). Leaving it may stop for a
    /// pause in progress, after which `r` may be stale: the slot is read
    /// again.
    #[cold]
    #[inline(never)]
    pub(crate) fn after_load_slow<S: Slot>(&self, slot: &S, r: ObjectReference) -> ObjectReference {
        let Some(c) = &self.barriers.concurrent else {
            return r;
        };
        let r = match self.handle.ensure_managed() {
            true => match slot.load() {
                Some(now) => now,
                None => return r,
            },
            false => r,
        };
        // SAFETY: on the mutator's thread (a `Mutator` is neither `Send`
        // nor `Sync`) in managed code: a safe region borrows the mutator
        // mutably, and one leaked with `mem::forget` was left just above;
        // `load_slow` keeps nothing of the set past its return.
        unsafe { c.load_slow(slot, r, &self.runtime.inner.gc.gc_alloc) }
    }

    /// The load barrier for a reference the embedder read itself (from a
    /// slot that has no [`Slot`] type, or read earlier): where `obj`'s
    /// object is now. [`Mutator::load_ref`] also heals the slot. Any
    /// value is accepted: one that is not the address of an object the
    /// collector is moving comes back as it is.
    #[inline]
    pub fn resolve(&self, obj: ObjectReference) -> ObjectReference {
        match self.may_be_stale(obj.get()) {
            true => self.resolve_slow(obj),
            false => obj,
        }
    }

    /// [`Mutator::resolve`] for a reference that may lie in the relocation
    /// set, in managed code (as [`Mutator::after_load`]'s slow path).
    #[cold]
    #[inline(never)]
    fn resolve_slow(&self, obj: ObjectReference) -> ObjectReference {
        let _ = self.handle.ensure_managed();
        match &self.barriers.concurrent {
            // SAFETY: as in `after_load_slow`: the mutator's thread, in
            // managed code (a leaked region was left just above).
            Some(c) => unsafe { c.resolved(obj, &self.runtime.inner.gc.gc_alloc) },
            None => obj,
        }
    }

    /// The store barrier: writes a reference field through it.
    ///
    /// With [`Generations::YoungAndOld`](crate::Generations::YoungAndOld),
    /// a store into an old object of a reference to a young one also
    /// remembers the slot's address, which the next young collection treats
    /// as a root (and updates when the young object moves). Every store of a
    /// reference into an object that may be old must come through here; a
    /// store into an object allocated since the last call that may collect
    /// (young, unless allocated old or large) need not. With
    /// [`Generations::Single`](crate::Generations::Single) it is a plain
    /// store.
    ///
    /// With the concurrent collector
    /// ([`CollectorMode::Concurrent`](crate::CollectorMode)), while marking
    /// runs, the reference being overwritten is logged first (snapshot at
    /// the beginning), so that everything reachable at mark start is
    /// marked.
    #[inline]
    pub fn store_ref<S: Slot>(&self, slot: S, value: ObjectReference) {
        self.before_overwrite(&slot);
        slot.store(value);
        if let Some(barrier) = &self.barriers.store {
            barrier.stored(slot.address().get(), value.get());
        }
    }

    /// The barrier before an overwrite of a heap slot with a value that is
    /// not a reference (a number, null, a tagged value): with the
    /// concurrent collector, while marking runs, the reference the slot
    /// holds is logged (as [`Mutator::store_ref`] does); otherwise nothing.
    /// A binding whose slots hold tagged values calls it before every
    /// store into a heap slot that does not go through `store_ref`. A slot
    /// of an object allocated since the last call that may collect needs
    /// neither.
    #[inline]
    pub fn before_overwrite<S: Slot>(&self, slot: &S) {
        if let Some(c) = &self.barriers.concurrent {
            c.before_overwrite(slot);
        }
    }

    /// Keeps `obj`, just read from a weak reference of the binding's own (a
    /// weak intern table's entry, a cache), alive in the concurrent cycle
    /// that marks now: the mutator may make it strongly reachable, which
    /// the snapshot taken at mark start would not see. The runtime's own
    /// [`WeakHandle`](crate::WeakHandle)s and [`Ephemeron`](crate::Ephemeron)s
    /// do this themselves. Nothing without the concurrent collector or
    /// outside marking.
    #[inline]
    pub fn keep_alive(&self, obj: ObjectReference) {
        if let Some(c) = &self.barriers.concurrent {
            c.keep_alive(obj);
        }
    }
}
