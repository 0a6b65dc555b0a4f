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
//! 4. **Concurrent Free**: the pages where marking found nothing go back
//!    while the mutators run.
//!
//! Relocation does not run in a concurrent cycle yet: a page is reclaimed
//! when it is empty. See [`CollectorMode::Concurrent`].

pub(crate) mod cycle;
pub(crate) mod new_pages;
pub(crate) mod satb;

use crate::refs::KeepAlive;
use crate::vm::ObjectReference;
use new_pages::NewPages;
use satb::SatbQueues;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Which collector the runtime runs.
///
/// ```
/// use hotmem::{CollectorMode, Runtime};
/// let rt = Runtime::builder().collector(CollectorMode::Concurrent).build()?;
/// assert_eq!(rt.config().collector(), CollectorMode::Concurrent);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CollectorMode {
    /// Every collection stops the mutators for all of its work (the
    /// default).
    #[default]
    StopTheWorld,
    /// Marking runs while the mutators run, between two short pauses
    /// (mark start: the roots; mark end: the mutators' logs and the weak
    /// references), on the runtime's GC thread and workers; a cycle starts
    /// early enough, from the allocation rate and the last cycle's
    /// duration, that mutators rarely wait for it (an allocation that
    /// must wait is an allocation stall, counted in
    /// [`GcTotals::stalls`](crate::GcTotals::stalls)). Every store into a
    /// heap slot must go through the barriers
    /// ([`Mutator::store_ref`](crate::Mutator::store_ref),
    /// [`Mutator::before_overwrite`](crate::Mutator::before_overwrite)),
    /// and slots load and store atomically (see [`Slot`](crate::Slot)).
    /// Single-generation only for now ([`Generations::Single`](crate::Generations::Single)),
    /// and pages are reclaimed once empty: objects are not moved yet.
    Concurrent,
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
}

impl ConcurrentState {
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> ConcurrentState {
        ConcurrentState {
            phase: AtomicU8::new(Phase::Idle as u8),
            satb: SatbQueues::default(),
            new_pages: Arc::new(NewPages::new(base, len, unit)),
        }
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
