//! The barriers: every reference a mutator loads from or stores into a
//! heap object goes through [`Mutator::load_ref`] and
//! [`Mutator::store_ref`] (and every other overwrite of a heap slot through
//! [`Mutator::before_overwrite`]). The store barrier feeds the young
//! generation's remembered set and, while the concurrent collector marks,
//! logs the overwritten reference (SATB); the load barrier forwards and
//! heals references into the pages the concurrent collector evacuates.

use super::Mutator;
use crate::gc::concurrent::ConcurrentState;
use crate::gc::concurrent::cset_index::CsetView;
use crate::gc::concurrent::relocation_set::{GcAllocator, Relocator, heal};
use crate::gc::concurrent::satb::SatbBuffer;
use crate::gc::generations::{GenerationalState, SlotBuffer};
use crate::sync::{Arc, Mutex};
use crate::vm::{ObjectReference, Slot};
use std::ptr::NonNull;

impl Mutator {
    /// The load barrier: reads a reference field through it.
    ///
    /// With the concurrent collector ([`CollectorMode::Concurrent`](crate::CollectorMode::Concurrent)),
    /// from a cycle's Pause Relocate Start to the next cycle's Pause Mark
    /// End, a reference into a page being evacuated is stale: the barrier
    /// returns the object's new address, relocating the object itself if
    /// no GC worker has yet, and heals the slot with a compare-and-swap
    /// that replaces only the stale value. The fast path is a load, a
    /// test of the runtime's relocation set (null between cycles), and an
    /// address lookup in a table when there is a set. Otherwise a plain
    /// load.
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
        match &self.concurrent {
            // SAFETY: the table lives as long as the runtime, which this
            // mutator keeps alive.
            Some(c) if unsafe { c.cset.lookup(r.get()) } != 0 => self.after_load_slow(slot, r),
            _ => r,
        }
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
    fn after_load_slow<S: Slot>(&self, slot: &S, r: ObjectReference) -> ObjectReference {
        let Some(c) = &self.concurrent else {
            return r;
        };
        let r = match self.handle.ensure_managed() {
            true => match slot.load() {
                Some(now) => now,
                None => return r,
            },
            false => r,
        };
        c.load_slow(slot, r, &self.runtime.inner.gc.gc_alloc)
    }

    /// The load barrier for a reference the embedder read itself (from a
    /// slot that has no [`Slot`] type, or read earlier): where `obj`'s
    /// object is now. [`Mutator::load_ref`] also heals the slot. Any
    /// value is accepted: one that is not the address of an object the
    /// collector is moving comes back as it is.
    #[inline]
    pub fn resolve(&self, obj: ObjectReference) -> ObjectReference {
        match &self.concurrent {
            // SAFETY: the table lives as long as the runtime, which this
            // mutator keeps alive.
            Some(c) if unsafe { c.cset.lookup(obj.get()) } != 0 => self.resolve_slow(obj),
            _ => obj,
        }
    }

    /// [`Mutator::resolve`] for a reference that may lie in the relocation
    /// set, in managed code (as [`Mutator::after_load`]'s slow path).
    #[cold]
    #[inline(never)]
    fn resolve_slow(&self, obj: ObjectReference) -> ObjectReference {
        let _ = self.handle.ensure_managed();
        match &self.concurrent {
            Some(c) => c.resolved(obj, &self.runtime.inner.gc.gc_alloc),
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
        if let Some(barrier) = &self.barrier {
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
        if let Some(c) = &self.concurrent {
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
        if let Some(c) = &self.concurrent {
            c.keep_alive(obj);
        }
    }
}

/// A mutator's side of the concurrent collector: the phase and the
/// relocation set it reads, the log it writes.
pub(crate) struct ConcurrentBarrier {
    /// The runtime's concurrent state.
    state: NonNull<ConcurrentState>,
    /// Its table of the relocation set's granules.
    pub(super) cset: CsetView,
    buffer: Arc<Mutex<SatbBuffer>>,
}

impl ConcurrentBarrier {
    /// The barrier of a mutator of a runtime whose concurrent state is
    /// `state`. The mutator keeps the runtime, and so `state`, alive.
    pub(crate) fn new(state: &ConcurrentState) -> ConcurrentBarrier {
        ConcurrentBarrier {
            cset: state.cset.view(),
            buffer: state.satb.register(),
            state: NonNull::from(state),
        }
    }

    #[inline]
    fn state(&self) -> &ConcurrentState {
        // SAFETY: `state` points into the runtime's shared `Inner`, which
        // the mutator owning this barrier keeps alive (it holds a `Runtime`)
        // and never moves; the state is only read through shared
        // references and atomics.
        unsafe { self.state.as_ref() }
    }

    /// The load barrier's slow path: `r`, loaded from `slot`, may lie in
    /// the relocation set. Its object is relocated if nobody has, and the
    /// slot healed ([`heal`]: only if it still holds `r`, so that a heal
    /// never overwrites another thread's store).
    fn load_slow<S: Slot>(
        &self,
        slot: &S,
        r: ObjectReference,
        alloc: &GcAllocator,
    ) -> ObjectReference {
        // SAFETY: called from `Mutator::after_load_slow`, on the mutator's
        // thread (a `Mutator` is neither `Send` nor `Sync`) outside a safe
        // region (a region borrows the mutator mutably, and one leaked
        // with `mem::forget` was left just before), and the set is not
        // kept past the return.
        let Some(set) = (unsafe { self.state().relocation_for_barrier() }) else {
            return r;
        };
        let Some(pi) = set.page_in_set(r.get()) else {
            return r;
        };
        let to = set.forward(pi, r, alloc, Relocator::Mutator).to;
        heal(slot, r, to);
        to
    }

    /// Where `obj`'s object is now.
    fn resolved(&self, obj: ObjectReference, alloc: &GcAllocator) -> ObjectReference {
        // SAFETY: as in `load_slow` (called from `Mutator::resolve_slow`,
        // which left a leaked region first).
        let Some(set) = (unsafe { self.state().relocation_for_barrier() }) else {
            return obj;
        };
        match set.page_in_set(obj.get()) {
            None => obj,
            Some(pi) => set.forward(pi, obj, alloc, Relocator::Mutator).to,
        }
    }

    /// Before `slot` is overwritten: logs what it holds while marking runs.
    #[inline]
    pub(crate) fn before_overwrite<S: Slot>(&self, slot: &S) {
        if self.state().marking() {
            self.log(slot);
        }
    }

    /// While marking runs, logs `obj` (read from a weak reference).
    #[inline]
    fn keep_alive(&self, obj: ObjectReference) {
        let state = self.state();
        if state.marking() && !state.new_pages.contains(obj.get()) {
            state.satb.log(&self.buffer, obj);
        }
    }

    /// The slow path: logs the slot's reference, unless the slot lies in
    /// an object allocated since mark start (no reference it ever held
    /// needs keeping for the snapshot, and a fresh object's words may be
    /// uninitialized).
    #[cold]
    #[inline(never)]
    fn log<S: Slot>(&self, slot: &S) {
        let state = self.state();
        if state.new_pages.contains(slot.address().get()) {
            return;
        }
        if let Some(old) = slot.load() {
            state.satb.log(&self.buffer, old);
        }
    }
}

/// A mutator's side of the store barrier.
pub(super) struct StoreBarrier {
    state: std::sync::Arc<GenerationalState>,
    buffer: std::sync::Arc<parking_lot::Mutex<SlotBuffer>>,
    /// [`OldTable::unit_shift`](crate::gc::generations::OldTable::unit_shift), kept here so that the common store (slot
    /// and value in the same page) is decided without a load.
    shift: u32,
}

impl StoreBarrier {
    pub(super) fn new(state: &std::sync::Arc<GenerationalState>) -> StoreBarrier {
        StoreBarrier {
            buffer: state.register(),
            shift: state.old.unit_shift(),
            state: state.clone(),
        }
    }

    /// After `slot` was given `value`: remembers the slot if it lies in an
    /// old page and `value` in a young one. A slot and a value in the same
    /// page are both old or both young: no table lookup.
    #[inline]
    pub(super) fn stored(&self, slot: usize, value: usize) {
        if (slot ^ value) >> self.shift == 0 {
            return;
        }
        let old = &self.state.old;
        if old.is_old(slot) && old.is_young(value) {
            GenerationalState::remember(&self.buffer, slot);
        }
    }
}
