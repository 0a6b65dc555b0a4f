//! The concurrent collector: marking while the mutators run.
//!
//! A concurrent cycle (run by the runtime's GC thread) is:
//! 1. **Pause Mark Start**: the mutators' allocation is retired, the heap's
//!    pages are mapped, the roots are marked, and the mutators' barriers
//!    start keeping the snapshot ([`Phase::Marking`]);
//! 2. **Concurrent Mark**: the GC workers trace the graph while the
//!    mutators run. A mutator that overwrites a reference first logs the
//!    value it overwrites (snapshot at the beginning, SATB: see
//!    [`satb`]), so that everything reachable at mark start is marked.
//!    Objects allocated meanwhile are live: they lie in pages allocated
//!    after the map was made, which marking does not examine
//!    ([`new_pages`]);
//! 3. **Pause Mark End**: every mutator's log is drained and traced, then
//!    the references that are not strong are processed (weak handles,
//!    ephemerons, finalizers, the binding's hook);
//! 4. **Concurrent Select Relocation Set**: the pages where marking found
//!    nothing go back (the last cycle's relocation set among them), and the
//!    pages worth evacuating are chosen as the stop-the-world collector
//!    chooses them ([`relocation_set`]);
//! 5. **Pause Relocate Start**: the barrier starts forwarding references
//!    into those pages, and every root into them is forwarded (the object
//!    relocated now if needed);
//! 6. **Concurrent Relocate**: the GC workers copy the rest while the
//!    mutators run. A mutator that loads a reference into the set gets the
//!    new copy, relocating the object itself if no worker has, and heals
//!    the slot with a compare-and-swap (the load barrier).
//!
//! The other stale references are healed lazily, by the next cycle's
//! marking (as ZGC remaps), which visits every reachable slot anyway; a
//! concurrent update phase (Shenandoah's) would visit them all once more
//! per cycle. With [`CollectorMode::ConcurrentNonMoving`] steps 5 and 6 do
//! not run and a page is reclaimed once empty.

pub(crate) mod cset_index;
pub(crate) mod cycle;
#[cfg(all(test, hotmem_loom))]
mod loom_models;
pub(crate) mod new_pages;
mod relocate;
pub(crate) mod relocation_set;
pub(crate) mod satb;

use crate::refs::KeepAlive;
use crate::vm::ObjectReference;
use cset_index::CsetIndex;
use new_pages::NewPages;
use parking_lot::Mutex;
use relocation_set::RelocationSet;
use satb::SatbQueues;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Which collector the runtime runs.
///
/// ```
/// use hotmem::{CollectorMode, Runtime};
/// let rt = Runtime::builder().collector(CollectorMode::ConcurrentNonMoving).build()?;
/// assert_eq!(rt.config().collector(), CollectorMode::ConcurrentNonMoving);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CollectorMode {
    /// Every collection stops the mutators for all of its work (the
    /// default).
    #[default]
    StopTheWorld,
    /// Marking and relocation run while the mutators run, between three
    /// short pauses (mark start: the roots; mark end: the mutators' logs
    /// and the weak references; relocate start: the roots into the pages
    /// to evacuate), on the runtime's GC thread and workers. A cycle
    /// starts early enough, from the allocation rate and the last cycle's
    /// duration, that mutators rarely wait for it (an allocation that
    /// must wait is an allocation stall, counted in
    /// [`GcTotals::stalls`](crate::GcTotals::stalls)).
    ///
    /// What it asks of the embedder:
    /// - every load of a reference from a heap slot goes through the load
    ///   barrier ([`Mutator::load_ref`](crate::Mutator::load_ref)): objects
    ///   move while the mutators run, and a slot may hold an old copy's
    ///   address until the barrier (or the next cycle's marking) heals it;
    /// - every store into a heap slot goes through the store barriers
    ///   ([`Mutator::store_ref`](crate::Mutator::store_ref),
    ///   [`Mutator::before_overwrite`](crate::Mutator::before_overwrite));
    /// - slots load, store and compare-and-swap atomically
    ///   ([`Slot::COMPARE_EXCHANGE`](crate::Slot::COMPARE_EXCHANGE)): the
    ///   runtime refuses to build otherwise.
    ///
    /// Single-generation only for now ([`Generations::Single`](crate::Generations::Single)).
    Concurrent,
    /// Marking runs while the mutators run, as with
    /// [`CollectorMode::Concurrent`], but nothing moves: a page is
    /// reclaimed once marking finds it empty, and the heap may fragment.
    /// For an embedder whose loads do not all go through the load barrier
    /// (or whose slots cannot compare-and-swap); the store barriers are
    /// still required.
    ConcurrentNonMoving,
}

impl CollectorMode {
    /// Whether marking runs while the mutators run.
    pub fn is_concurrent(self) -> bool {
        matches!(
            self,
            CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving
        )
    }
}

/// What the mutators' barriers must do now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// No concurrent work: the barriers do nothing.
    Idle = 0,
    /// Concurrent marking: overwritten references are logged.
    Marking = 1,
}

/// The state the concurrent collector shares with the mutators.
pub(crate) struct ConcurrentState {
    /// [`Phase`] as a byte: what the barriers read. Changed only at
    /// safepoints, so the mutators see each change when they run again.
    phase: AtomicU8,
    /// The mutators' logs of overwritten references.
    pub(crate) satb: SatbQueues,
    /// Pages allocated since mark start (the mutators' page source records
    /// them).
    pub(crate) new_pages: Arc<NewPages>,
    /// The relocation set the load barrier forwards references into: the
    /// last cycle's, from its Pause Relocate Start to the next cycle's
    /// Pause Mark End; null otherwise. Changed only at safepoints.
    relocation: AtomicPtr<RelocationSet>,
    /// The owner of what `relocation` points to.
    installed: Mutex<Option<Arc<RelocationSet>>>,
    /// The installed set's granules, for the barrier's test.
    pub(crate) cset: CsetIndex,
    /// Whether cycles move objects.
    pub(crate) mode: CollectorMode,
    /// How many times cycles freed memory (after Concurrent Select
    /// Relocation Set, and at each cycle's end), and where stalled
    /// allocations wait for the count to move.
    freed: parking_lot::Mutex<u64>,
    freed_moved: parking_lot::Condvar,
    /// Allocations stalled now: while any is, the cycle's concurrent
    /// phases take every GC worker (the stalled mutators leave their CPUs
    /// idle), as ZGC boosts its workers on a stall.
    stalled: std::sync::atomic::AtomicUsize,
    /// Allocation stalls so far (each one counted when it begins).
    stalls: std::sync::atomic::AtomicU64,
}

impl ConcurrentState {
    pub(crate) fn new(
        mode: CollectorMode,
        base: usize,
        len: usize,
        unit: usize,
    ) -> ConcurrentState {
        ConcurrentState {
            phase: AtomicU8::new(Phase::Idle as u8),
            satb: SatbQueues::default(),
            new_pages: Arc::new(NewPages::new(base, len, unit)),
            relocation: AtomicPtr::new(std::ptr::null_mut()),
            installed: Mutex::new(None),
            cset: CsetIndex::new(base, len),
            mode,
            freed: parking_lot::Mutex::new(0),
            freed_moved: parking_lot::Condvar::new(),
            stalled: std::sync::atomic::AtomicUsize::new(0),
            stalls: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Allocation stalls so far.
    pub(crate) fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::Relaxed)
    }

    /// An allocation stalls until the guard is dropped.
    pub(crate) fn stall(&self) -> Stalled<'_> {
        self.stalls.fetch_add(1, Ordering::Relaxed);
        self.stalled.fetch_add(1, Ordering::Relaxed);
        Stalled(self)
    }

    /// The workers a concurrent phase takes out of a pool of `pool`: a
    /// quarter of the CPUs (at least one, ZGC's concurrent worker
    /// heuristic), or the whole pool while an allocation stalls.
    pub(crate) fn concurrent_workers(&self, pool: usize) -> usize {
        if self.stalled.load(Ordering::Relaxed) > 0 {
            return pool.max(1);
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.div_ceil(4).clamp(1, pool.max(1))
    }

    /// How many times cycles freed memory so far.
    pub(crate) fn freed_count(&self) -> u64 {
        *self.freed.lock()
    }

    /// A cycle freed memory (or ended): stalled allocations retry.
    pub(crate) fn memory_freed(&self) {
        *self.freed.lock() += 1;
        self.freed_moved.notify_all();
    }

    /// Waits until cycles freed memory more than `seen` times.
    pub(crate) fn wait_freed_past(&self, seen: u64) {
        let mut freed = self.freed.lock();
        while *freed <= seen {
            self.freed_moved.wait(&mut freed);
        }
    }

    /// Makes `set` the one the load barrier forwards into (at a safepoint:
    /// the mutators see it when they run again).
    pub(crate) fn install(&self, set: Arc<RelocationSet>) {
        let mut installed = self.installed.lock();
        self.relocation
            .store(Arc::as_ptr(&set).cast_mut(), Ordering::Release);
        for (pi, start, size) in set.page_ranges() {
            self.cset.set(start, size, Some(pi));
        }
        *installed = Some(set);
    }

    /// Takes the installed set out of the barrier (at a safepoint, once
    /// nothing reachable refers into it); the caller drops it after the
    /// safepoint.
    pub(crate) fn uninstall(&self) -> Option<Arc<RelocationSet>> {
        let mut installed = self.installed.lock();
        self.relocation
            .store(std::ptr::null_mut(), Ordering::Release);
        installed.take()
    }

    /// The installed set, for the collector.
    pub(crate) fn installed(&self) -> Option<Arc<RelocationSet>> {
        self.installed.lock().clone()
    }

    /// The installed set, for the load barrier.
    ///
    /// # Safety
    /// The caller is a mutator's thread outside a safe region, and drops
    /// the reference before it next polls for a safepoint: the set is
    /// uninstalled and dropped only at and after a safepoint, which such a
    /// thread cannot be inside of meanwhile.
    #[inline]
    pub(crate) unsafe fn relocation_for_barrier(&self) -> Option<&RelocationSet> {
        let p = self.relocation.load(Ordering::Acquire);
        // SAFETY: non-null, `p` came from the `Arc` in `installed`, which
        // is dropped only after a safepoint the caller has not reached (its
        // promise).
        unsafe { p.as_ref() }
    }

    /// Whether mutators must log overwritten references.
    #[inline]
    pub(crate) fn marking(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == Phase::Marking as u8
    }

    /// Sets the phase (at a safepoint).
    pub(crate) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }
}

/// An allocation stalled (see [`ConcurrentState::stall`]).
pub(crate) struct Stalled<'a>(&'a ConcurrentState);

impl Drop for Stalled<'_> {
    fn drop(&mut self) {
        self.0.stalled.fetch_sub(1, Ordering::Relaxed);
    }
}

impl KeepAlive for ConcurrentState {
    /// While marking runs, `obj` (read from a weak reference) is logged,
    /// so that this cycle marks it: a mutator may now make it strongly
    /// reachable, which the snapshot would not see.
    fn keep_alive(&self, obj: ObjectReference) {
        if self.marking() && !self.new_pages.contains(obj.get()) {
            self.satb.log_shared(obj);
        }
    }
}
