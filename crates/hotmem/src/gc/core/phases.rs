//! The declared list of phases (mmtk-core's `WorkBucketStage`): every
//! phase a collector runs, in the order it runs them, with its name,
//! whether it runs with the mutators stopped or while they run, and which
//! collectors run it. Declared once, here: each collector's phases start
//! in this order ([`PhaseTimes`] checks it), their times are recorded by
//! phase, a concurrent collector stops the world exactly for the phases
//! declared [`PhaseMode::Pause`], and the `gc,phases` log lines and the
//! report page's charts walk the same list. A leaf: it imports nothing
//! from the crate but the names of the collectors.

use super::collector_mode::CollectorMode;
use serde::Serialize;
use std::time::Instant;

/// Whether a phase runs with the mutators stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum PhaseMode {
    /// In a pause: every mutator stopped at a safepoint.
    Pause,
    /// While the mutators run.
    Concurrent,
}

/// A phase of a collection, as `gc,phases` names it. Every phase is
/// declared once, with its [name](GcPhase::name), its
/// [mode](GcPhase::mode) and the collectors that
/// [run it](GcPhase::runs_in); [`GcPhase::of`] lists a collector's phases
/// in the order it runs them.
///
/// ```
/// use hotmem::CollectorMode;
/// use hotmem::log::{GcPhase, PhaseMode};
/// let pauses: Vec<&str> = GcPhase::of(CollectorMode::Concurrent)
///     .filter(|p| p.mode() == PhaseMode::Pause)
///     .map(GcPhase::name)
///     .collect();
/// assert_eq!(pauses, ["Pause Mark Start", "Pause Mark End", "Pause Relocate Start"]);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum GcPhase {
    /// Marking: roots, then the parallel trace.
    Mark,
    /// Copying live objects out of the selected pages.
    Relocate,
    /// Every reference to a moved object given its new address (the slots
    /// marking remembered, or every live object's), and every root.
    UpdateReferences,
    /// A concurrent cycle's first pause: the roots.
    PauseMarkStart,
    /// A concurrent cycle's marking while the mutators run.
    ConcurrentMark,
    /// A concurrent cycle's second pause: the mutators' logs, the end of
    /// the trace, the references that are not strong.
    PauseMarkEnd,
    /// A concurrent cycle's processing of the weak sets
    /// ([`WeakSet`](crate::WeakSet)) after Pause Mark End, while the
    /// mutators run: their dead entries cleared, and the weak handles whose
    /// object died (unless finalization kept objects alive: then Pause Mark
    /// End clears them, before finalization).
    ConcurrentProcessNonStrong,
    /// A concurrent cycle's choice of pages to evacuate, after the empty
    /// ones are freed, while the mutators run.
    ConcurrentSelectRelocationSet,
    /// A concurrent cycle's third pause: the roots into the relocation
    /// set forwarded.
    PauseRelocateStart,
    /// A concurrent cycle's copying while the mutators run.
    ConcurrentRelocate,
}

/// Which figure of [`CollectStats`](crate::CollectStats) a phase's time
/// is counted in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Figure {
    /// `mark_ns`.
    Mark,
    /// `relocation_ns`.
    Relocation,
    /// `update_ns`.
    Update,
    /// Only the phase's own time (a concurrent cycle's pauses and
    /// selection, in its [`ConcurrentPhases`](crate::ConcurrentPhases)).
    Own,
}

/// One entry of the list.
struct Declared {
    phase: GcPhase,
    name: &'static str,
    mode: PhaseMode,
    /// The collectors that run it.
    collectors: &'static [CollectorMode],
    /// The safepoint it runs in (for a phase of a collector that stops the
    /// world throughout, the one its collection takes); `""` for a phase
    /// that runs while the mutators run.
    safepoint: &'static str,
    figure: Figure,
}

const STOP_THE_WORLD: &[CollectorMode] = &[CollectorMode::StopTheWorld];
const CONCURRENT: &[CollectorMode] = &[
    CollectorMode::Concurrent,
    CollectorMode::ConcurrentNonMoving,
];
const MOVING_CONCURRENT: &[CollectorMode] = &[CollectorMode::Concurrent];

/// Every phase, in the order a collection runs them: entry `i` is the
/// phase whose discriminant is `i`.
const PHASES: [Declared; 10] = [
    Declared {
        phase: GcPhase::Mark,
        name: "Mark",
        mode: PhaseMode::Pause,
        collectors: STOP_THE_WORLD,
        safepoint: "GC",
        figure: Figure::Mark,
    },
    Declared {
        phase: GcPhase::Relocate,
        name: "Relocate",
        mode: PhaseMode::Pause,
        collectors: STOP_THE_WORLD,
        safepoint: "GC",
        figure: Figure::Relocation,
    },
    Declared {
        phase: GcPhase::UpdateReferences,
        name: "Update References",
        mode: PhaseMode::Pause,
        collectors: STOP_THE_WORLD,
        safepoint: "GC",
        figure: Figure::Update,
    },
    Declared {
        phase: GcPhase::PauseMarkStart,
        name: "Pause Mark Start",
        mode: PhaseMode::Pause,
        collectors: CONCURRENT,
        safepoint: "GC Mark Start",
        figure: Figure::Own,
    },
    Declared {
        phase: GcPhase::ConcurrentMark,
        name: "Concurrent Mark",
        mode: PhaseMode::Concurrent,
        collectors: CONCURRENT,
        safepoint: "",
        figure: Figure::Mark,
    },
    Declared {
        phase: GcPhase::PauseMarkEnd,
        name: "Pause Mark End",
        mode: PhaseMode::Pause,
        collectors: CONCURRENT,
        safepoint: "GC Mark End",
        figure: Figure::Own,
    },
    Declared {
        phase: GcPhase::ConcurrentProcessNonStrong,
        name: "Concurrent Process Non-Strong References",
        mode: PhaseMode::Concurrent,
        collectors: CONCURRENT,
        safepoint: "",
        figure: Figure::Own,
    },
    Declared {
        phase: GcPhase::ConcurrentSelectRelocationSet,
        name: "Concurrent Select Relocation Set",
        mode: PhaseMode::Concurrent,
        collectors: CONCURRENT,
        safepoint: "",
        figure: Figure::Own,
    },
    Declared {
        phase: GcPhase::PauseRelocateStart,
        name: "Pause Relocate Start",
        mode: PhaseMode::Pause,
        collectors: MOVING_CONCURRENT,
        safepoint: "GC Relocate Start",
        figure: Figure::Own,
    },
    Declared {
        phase: GcPhase::ConcurrentRelocate,
        name: "Concurrent Relocate",
        mode: PhaseMode::Concurrent,
        collectors: MOVING_CONCURRENT,
        safepoint: "",
        figure: Figure::Relocation,
    },
];

/// How many phases are declared.
const COUNT: usize = PHASES.len();

impl GcPhase {
    fn declared(self) -> &'static Declared {
        &PHASES[self as usize]
    }

    /// Every declared phase, in the order a collection runs them.
    pub fn all() -> impl Iterator<Item = GcPhase> {
        PHASES.iter().map(|d| d.phase)
    }

    /// The phases `collector` runs, in the order it runs them (a cycle
    /// may skip some: a concurrent cycle that finds nothing worth moving
    /// does not relocate).
    pub fn of(collector: CollectorMode) -> impl Iterator<Item = GcPhase> {
        GcPhase::all().filter(move |p| p.runs_in(collector))
    }

    /// The name in the text line.
    pub fn name(self) -> &'static str {
        self.declared().name
    }

    /// Whether it runs with the mutators stopped.
    pub fn mode(self) -> PhaseMode {
        self.declared().mode
    }

    /// Whether `collector` runs it.
    pub fn runs_in(self, collector: CollectorMode) -> bool {
        self.declared().collectors.contains(&collector)
    }

    /// The name of the safepoint it runs in (`""` for a phase that runs
    /// while the mutators run).
    pub(crate) fn safepoint(self) -> &'static str {
        self.declared().safepoint
    }

    /// The figure of the statistics its time is counted in.
    pub(crate) fn figure(self) -> Figure {
        self.declared().figure
    }
}

/// A phase started (see [`PhaseTimes::start`]).
#[must_use = "a phase is timed until it is stopped"]
pub(crate) struct Running {
    phase: GcPhase,
    at: Instant,
}

/// The phases one collection ran and their times, in nanoseconds. Phases
/// start in the declared order: a collector that started one out of it
/// (or one it does not run) fails the debug assertion here.
#[derive(Clone, Debug)]
pub(crate) struct PhaseTimes {
    collector: CollectorMode,
    ns: [Option<u64>; COUNT],
    /// The last phase started.
    last: Option<usize>,
}

impl PhaseTimes {
    /// No phase of a collection of `collector` ran yet.
    pub(crate) fn new(collector: CollectorMode) -> PhaseTimes {
        PhaseTimes {
            collector,
            ns: [None; COUNT],
            last: None,
        }
    }

    /// The collector whose phases these are.
    pub(crate) fn collector(&self) -> CollectorMode {
        self.collector
    }

    /// Starts `phase` now.
    pub(crate) fn start(&mut self, phase: GcPhase) -> Running {
        self.enter(phase);
        Running {
            phase,
            at: Instant::now(),
        }
    }

    /// Stops a running phase: its time.
    pub(crate) fn stop(&mut self, running: Running) -> u64 {
        let ns = running.at.elapsed().as_nanos() as u64;
        self.ns[running.phase as usize] = Some(ns);
        ns
    }

    /// Takes `ns` off a phase that ran: time it spent on something
    /// counted elsewhere (a young cycle inside a full cycle's marking).
    pub(crate) fn deduct(&mut self, phase: GcPhase, ns: u64) {
        if let Some(t) = &mut self.ns[phase as usize] {
            *t = t.saturating_sub(ns);
        }
    }

    /// Records `ns` for `phase`, which was timed elsewhere (a pause,
    /// timed by its safepoint).
    pub(crate) fn record(&mut self, phase: GcPhase, ns: u64) {
        self.enter(phase);
        self.ns[phase as usize] = Some(ns);
    }

    fn enter(&mut self, phase: GcPhase) {
        let i = phase as usize;
        debug_assert!(
            phase.runs_in(self.collector),
            "{} is not a phase of {:?}",
            phase.name(),
            self.collector
        );
        debug_assert!(
            self.last.is_none_or(|last| last < i),
            "{} started out of the declared order",
            phase.name()
        );
        self.last = Some(i);
    }

    /// `phase`'s time, if it ran.
    pub(crate) fn ns(&self, phase: GcPhase) -> Option<u64> {
        self.ns[phase as usize]
    }

    /// The phases that ran, with their times, in the declared order.
    pub(crate) fn ran(&self) -> impl Iterator<Item = (GcPhase, u64)> + '_ {
        GcPhase::all().filter_map(|p| self.ns(p).map(|ns| (p, ns)))
    }

    /// The time of the phases that ran in a pause.
    pub(crate) fn pause_ns(&self) -> u64 {
        (self.ran())
            .filter(|(p, _)| p.mode() == PhaseMode::Pause)
            .map(|(_, ns)| ns)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_indexed_by_phase_and_every_collector_runs_phases() {
        for (i, d) in PHASES.iter().enumerate() {
            assert_eq!(d.phase as usize, i, "{}", d.name);
            assert_eq!(d.mode == PhaseMode::Pause, !d.safepoint.is_empty());
        }
        for c in [
            CollectorMode::StopTheWorld,
            CollectorMode::Concurrent,
            CollectorMode::ConcurrentNonMoving,
        ] {
            assert!(GcPhase::of(c).count() >= 3, "{c:?}");
        }
        let moving: Vec<_> = GcPhase::of(CollectorMode::Concurrent).collect();
        let non_moving: Vec<_> = GcPhase::of(CollectorMode::ConcurrentNonMoving).collect();
        assert_eq!(&moving[..5], &non_moving[..]);
    }

    #[test]
    fn times_add_up_by_mode() {
        let mut t = PhaseTimes::new(CollectorMode::Concurrent);
        t.record(GcPhase::PauseMarkStart, 10);
        let running = t.start(GcPhase::ConcurrentMark);
        let marked = t.stop(running);
        t.record(GcPhase::PauseMarkEnd, 20);
        assert_eq!(t.pause_ns(), 30);
        let ran: Vec<GcPhase> = t.ran().map(|(p, _)| p).collect();
        assert_eq!(
            ran,
            [
                GcPhase::PauseMarkStart,
                GcPhase::ConcurrentMark,
                GcPhase::PauseMarkEnd
            ]
        );
        assert_eq!(t.ns(GcPhase::ConcurrentMark), Some(marked));
        assert_eq!(t.ns(GcPhase::ConcurrentRelocate), None);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "out of the declared order")]
    fn a_phase_out_of_order_is_a_bug() {
        let mut t = PhaseTimes::new(CollectorMode::StopTheWorld);
        t.record(GcPhase::Relocate, 1);
        t.record(GcPhase::Mark, 1);
    }
}
