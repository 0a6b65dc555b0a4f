//! The concurrent collector's barriers: the snapshot-at-the-beginning
//! store barrier (while marking runs, a mutator logs the reference it
//! overwrites, see [`satb`](super::satb)) and the load barrier (from a
//! cycle's Pause Relocate Start to the next cycle's Pause Mark End, a
//! reference into the relocation set is forwarded and its slot healed).
//!
//! The collector's side is [`ConcurrentBarriers`]: the phase the barriers
//! read, the logs they write, the pages allocated since mark start, and
//! the installed relocation set with its granule index. The mutator's side
//! is [`ConcurrentBarrier`], one per mutator.

use super::relocation_index::RelocationIndex;
use super::satb::{SatbBuffer, SatbQueues};
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::heap::GcAllocator;
use crate::gc::core::meta::NewPages;
use crate::gc::core::relocation_set::{RelocationSet, Relocator, heal};
use crate::gc::core::tlab::Tlab;
use crate::sync::{Arc, Mutex};
use crate::vm::{ObjectReference, Slot};
use crate::weak::KeepAlive;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Which cycle installed a relocation set in the load barrier (each
/// keeps its own until the cycle that heals every reference into it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetOwner {
    /// A full cycle.
    Full,
    /// A young cycle between full cycles.
    Young,
    /// A young cycle inside a full cycle's marking: the young set of
    /// before that full cycle stays installed meanwhile (the full
    /// marking heals into it).
    YoungInFull,
}

impl From<CollectionKind> for SetOwner {
    fn from(kind: CollectionKind) -> SetOwner {
        match kind {
            CollectionKind::Full => SetOwner::Full,
            CollectionKind::Young => SetOwner::Young,
        }
    }
}

/// How many sets the barrier holds at most.
const SETS: usize = 3;

/// Where the barrier keeps the set `owner` installed.
fn set_slot(owner: SetOwner) -> usize {
    match owner {
        SetOwner::Full => 0,
        SetOwner::Young => 1,
        SetOwner::YoungInFull => 2,
    }
}

/// The relocation sets installed in the load barrier, by owner, each
/// possibly absent.
#[derive(Clone, Default)]
pub(crate) struct Installed([Option<std::sync::Arc<RelocationSet>>; SETS]);

impl Installed {
    /// The set `owner` installed, if any.
    pub(crate) fn of(&self, owner: impl Into<SetOwner>) -> Option<&RelocationSet> {
        self.0[set_slot(owner.into())].as_deref()
    }
    /// The set holding the page `addr` lies in, and that page's index in
    /// it.
    #[inline]
    pub(crate) fn page_of(&self, addr: usize) -> Option<(&RelocationSet, usize)> {
        self.0
            .iter()
            .flatten()
            .find_map(|set| set.page_in_set(addr).map(|pi| (&**set, pi)))
    }

    /// Where `r`'s object is: `r` if it lies in no installed set, its copy
    /// if it does (`None` if it was never relocated).
    pub(crate) fn forwarded(&self, r: ObjectReference) -> Option<ObjectReference> {
        match self.page_of(r.get()) {
            None => Some(r),
            Some((set, pi)) => set.forwarded(pi, r),
        }
    }
}

/// What the mutators' barriers must do now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BarrierPhase {
    /// No concurrent work: the store barriers log nothing.
    Idle = 0,
    /// Concurrent marking: overwritten references are logged.
    Marking = 1,
}

/// The collector's side of the concurrent barriers, shared with every
/// mutator's [`ConcurrentBarrier`].
pub(crate) struct ConcurrentBarriers {
    /// [`BarrierPhase`] as a byte: what the barriers read. Changed only at
    /// safepoints, so the mutators see each change when they run again.
    phase: AtomicU8,
    /// The mutators' logs of overwritten references.
    pub(crate) satb: SatbQueues,
    /// Pages allocated since mark start (the mutators' page source records
    /// them).
    pub(crate) new_pages: std::sync::Arc<NewPages>,
    /// The relocation sets the load barrier forwards references into, a
    /// full cycle's and young ones' ([`set_slot`]): each from its cycle's
    /// Pause Relocate Start to the Pause Mark End of the next cycle that
    /// heals every reference into it (any cycle for a young set, whose
    /// references from old objects the young cycle healed itself; the next
    /// full cycle for a full set, whose references from old objects only a
    /// full marking visits); null otherwise. Changed only at safepoints.
    relocation: [AtomicPtr<RelocationSet>; SETS],
    /// The owners of what `relocation` points to.
    installed: parking_lot::Mutex<[Option<std::sync::Arc<RelocationSet>>; SETS]>,
    /// The installed sets' granules, for the barrier's test.
    pub(crate) index: RelocationIndex,
}

impl ConcurrentBarriers {
    /// The barriers of a heap reserved at `base..base+len` whose pages are
    /// multiples of `unit` bytes: idle, no set installed.
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> ConcurrentBarriers {
        ConcurrentBarriers {
            phase: AtomicU8::new(BarrierPhase::Idle as u8),
            satb: SatbQueues::default(),
            new_pages: std::sync::Arc::new(NewPages::new(base, len, unit)),
            relocation: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            installed: parking_lot::Mutex::new([None, None, None]),
            index: RelocationIndex::new(base, len),
        }
    }

    /// Makes `set` the one the load barrier forwards into (at a safepoint:
    /// the mutators see it when they run again).
    pub(crate) fn install(&self, owner: SetOwner, set: std::sync::Arc<RelocationSet>) {
        let mut installed = self.installed.lock();
        debug_assert!(
            installed[set_slot(owner)].is_none(),
            "{owner:?}'s set taken out first"
        );
        self.relocation[set_slot(owner)]
            .store(std::sync::Arc::as_ptr(&set).cast_mut(), Ordering::Release);
        for (pi, start, size) in set.page_ranges() {
            self.index.set(start, size, Some(pi));
        }
        installed[set_slot(owner)] = Some(set);
    }

    /// Takes the set `owner` installed out of the barrier (at a
    /// safepoint, once nothing reachable refers into it); the caller drops
    /// it after the safepoint. Its granules leave the index: left there,
    /// every load of an object later allocated on them took the slow path
    /// and found no set. No other installed set covers them: the sets'
    /// pages are disjoint, and a set's pages are not reused while it is
    /// installed.
    pub(crate) fn uninstall(&self, owner: SetOwner) -> Option<std::sync::Arc<RelocationSet>> {
        let mut installed = self.installed.lock();
        self.relocation[set_slot(owner)].store(std::ptr::null_mut(), Ordering::Release);
        let set = installed[set_slot(owner)].take();
        if let Some(set) = &set {
            for (_, start, size) in set.page_ranges() {
                self.index.set(start, size, None);
            }
        }
        set
    }

    /// The installed sets, for the collector. Their pages are disjoint (a
    /// young set's pages were allocated after the full cycle that made the
    /// full one began, a young set's inside a full cycle after the young
    /// set of before that full cycle).
    pub(crate) fn installed(&self) -> Installed {
        Installed(self.installed.lock().clone())
    }

    /// The installed set, for the load barrier.
    ///
    /// # Safety
    /// The caller is a mutator's thread outside a safe region, and drops
    /// the reference before it next polls for a safepoint: the set is
    /// uninstalled and dropped only at and after a safepoint, which such a
    /// thread cannot be inside of meanwhile.
    #[inline]
    unsafe fn relocation_for_barrier(&self, addr: usize) -> Option<(&RelocationSet, usize)> {
        self.relocation.iter().find_map(|p| {
            let p = p.load(Ordering::Acquire);
            // SAFETY: non-null, `p` came from the `Arc` in `installed`,
            // which is dropped only after a safepoint the caller has not
            // reached (its promise).
            let set = unsafe { p.as_ref() }?;
            set.page_in_set(addr).map(|pi| (set, pi))
        })
    }

    /// Whether mutators must log overwritten references.
    #[inline]
    pub(crate) fn marking(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == BarrierPhase::Marking as u8
    }

    /// Sets the phase (at a safepoint).
    pub(crate) fn set_phase(&self, phase: BarrierPhase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }
}

impl KeepAlive for ConcurrentBarriers {
    /// While marking runs, `obj` (read from a weak reference) is logged,
    /// so that this cycle marks it: a mutator may now make it strongly
    /// reachable, which the snapshot would not see.
    fn keep_alive(&self, obj: ObjectReference) {
        if self.marking() && !self.new_pages.contains(obj.get()) {
            self.satb.log_shared(obj);
        }
    }
}

/// A mutator's side of the concurrent barriers: the phase and the
/// relocation set it reads, the log it writes.
pub(crate) struct ConcurrentBarrier {
    /// The runtime's side of the barriers.
    barriers: NonNull<ConcurrentBarriers>,
    buffer: Arc<Mutex<SatbBuffer>>,
    /// The mutator's allocation buffer: a slot in what was allocated from
    /// it lies in an object allocated since mark start, found without the
    /// table lookup of [`NewPages`]. Kept here rather than passed by the
    /// mutator: as an argument of the inlined `before_overwrite` it cost
    /// the Lox interpreter's concurrent copy instructions on every store
    /// (callgrind: methods.lox 225.02M -> 226.48M, closures.lox 203.9M ->
    /// 202.5-206.5M).
    tlab: std::sync::Arc<Tlab>,
}

impl ConcurrentBarrier {
    /// The barrier of a mutator of a runtime whose concurrent barriers are
    /// `barriers`, and whose allocation buffer is `tlab`. The mutator keeps
    /// the runtime, and so `barriers`, alive.
    pub(crate) fn new(
        barriers: &ConcurrentBarriers,
        tlab: std::sync::Arc<Tlab>,
    ) -> ConcurrentBarrier {
        ConcurrentBarrier {
            buffer: barriers.satb.register(),
            barriers: NonNull::from(barriers),
            tlab,
        }
    }

    #[inline]
    fn barriers(&self) -> &ConcurrentBarriers {
        // SAFETY: `barriers` points into the `Arc` the runtime's shared
        // `Inner` holds, which the mutator owning this barrier keeps alive
        // (it holds a `Runtime`) and whose contents never move; they are
        // only read through shared references and atomics.
        unsafe { self.barriers.as_ref() }
    }

    /// The load barrier's slow path: `r`, loaded from `slot`, may lie in
    /// the relocation set. Its object is relocated if nobody has, and the
    /// slot healed ([`heal`]: only if it still holds `r`, so that a heal
    /// never overwrites another thread's store).
    ///
    /// # Safety
    /// Called on the mutator's thread, in managed code (outside a safe
    /// region, a leaked one left first), and the set is not kept past the
    /// return: see [`ConcurrentBarriers::relocation_for_barrier`].
    pub(crate) unsafe fn load_slow<S: Slot>(
        &self,
        slot: &S,
        r: ObjectReference,
        alloc: &GcAllocator,
    ) -> ObjectReference {
        // SAFETY: the caller's promise: a mutator's thread in managed
        // code, which drops the set it finds (a full cycle's or a young
        // one's) before it returns, before any poll.
        let Some((set, pi)) = (unsafe { self.barriers().relocation_for_barrier(r.get()) }) else {
            return r;
        };
        let to = set.forward(pi, r, alloc, Relocator::Mutator).to;
        heal(slot, r, to);
        to
    }

    /// Where `obj`'s object is now.
    ///
    /// # Safety
    /// As [`ConcurrentBarrier::load_slow`].
    pub(crate) unsafe fn resolved(
        &self,
        obj: ObjectReference,
        alloc: &GcAllocator,
    ) -> ObjectReference {
        // SAFETY: as in `load_slow` (the caller's promise): the set found
        // is dropped before this returns.
        match unsafe { self.barriers().relocation_for_barrier(obj.get()) } {
            None => obj,
            Some((set, pi)) => set.forward(pi, obj, alloc, Relocator::Mutator).to,
        }
    }

    /// Before `slot` is overwritten: logs what it holds while marking runs.
    #[inline]
    pub(crate) fn before_overwrite<S: Slot>(&self, slot: &S) {
        if self.barriers().marking() {
            self.log(slot);
        }
    }

    /// While marking runs, logs `obj` (read from a weak reference).
    #[inline]
    pub(crate) fn keep_alive(&self, obj: ObjectReference) {
        let barriers = self.barriers();
        if barriers.marking() && !barriers.new_pages.contains(obj.get()) {
            barriers.satb.log(&self.buffer, obj);
        }
    }

    /// The slow path: logs the slot's reference, unless the slot lies in
    /// an object allocated since mark start (no reference it ever held
    /// needs keeping for the snapshot, and a fresh object's words may be
    /// uninitialized).
    #[cold]
    #[inline(never)]
    fn log<S: Slot>(&self, slot: &S) {
        let addr = slot.address().get();
        // Most overwrites that reach here are a fresh object's first
        // stores, in the mutator's own buffer: a range test before the
        // page table's lookup.
        if self.tlab.allocated_from(addr) {
            return;
        }
        let barriers = self.barriers();
        if barriers.new_pages.contains(addr) {
            return;
        }
        if let Some(old) = slot.load() {
            barriers.satb.log(&self.buffer, old);
        }
    }
}
