//! What collections report: one collection's [`CollectStats`], the
//! runtime's [`GcTotals`], and the causes and scopes they name.

use super::generations::CollectionKind;
use super::phases::{Figure, GcPhase, PhaseMode, PhaseTimes};
use super::workers::PhaseSummary;
use serde::Serialize;

/// Why a collection ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum GcCause {
    /// Asked for by [`Runtime::collect`](crate::Runtime::collect) or
    /// [`Mutator::collect`](crate::Mutator::collect).
    Explicit,
    /// An allocation found the heap full.
    AllocationFailure,
    /// The concurrent collector: the mutators allocate fast enough that a
    /// cycle must start now to finish before their budget runs out.
    AllocationRate,
    /// The concurrent collector: an allocation found the budget used up
    /// and waits for a cycle.
    AllocationStall,
    /// A young cycle after a round of a full cycle's marking
    /// ([`YoungInFull::EachRound`](crate::YoungInFull::EachRound)).
    FullMarkRound,
}

impl GcCause {
    /// The cause as the `gc` log line names it (HotSpot's names).
    pub fn name(self) -> &'static str {
        match self {
            GcCause::Explicit => "Explicit",
            GcCause::AllocationFailure => "Allocation Failure",
            GcCause::AllocationRate => "Allocation Rate",
            GcCause::AllocationStall => "Allocation Stall",
            GcCause::FullMarkRound => "Full Mark Round",
        }
    }
}

/// Which slots a collection's update phase visited, besides every root.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum UpdateScope {
    /// No page was evacuated: nothing moved, nothing to update.
    Nothing,
    /// Only young pages (new objects, age eden) were evacuated: the slots
    /// that marking found referring into young pages, and every slot of the
    /// moved objects. Cheap when few old objects refer to new ones.
    Remembered {
        /// Remembered slots.
        slots: u64,
    },
    /// An older page was evacuated too: every slot of every live object.
    AllLiveObjects,
}

/// What one collection did.
#[derive(Clone, Debug, Serialize)]
pub struct CollectStats {
    /// The collection's number, from 1.
    pub cycle: u64,
    /// Why it ran.
    pub cause: GcCause,
    /// Young (only young objects marked) or full.
    pub kind: CollectionKind,
    /// Live objects: those marking reached (in a young collection, the
    /// young ones).
    pub live_objects: u64,
    /// Their bytes.
    pub live_bytes: u64,
    /// Heap pages examined.
    pub pages: usize,
    /// Pages with no live object, freed without copying.
    pub pages_freed_empty: usize,
    /// Pages evacuated (live objects copied away, page freed). A concurrent
    /// cycle frees the pages it evacuates in the next cycle, with the
    /// empty ones (see [`ConcurrentPhases::relocation_set_pages`]).
    pub pages_evacuated: usize,
    /// Pages selected whose evacuation could not finish because no target
    /// memory was left; they stay, their moved objects are forwarded.
    pub pages_evacuation_incomplete: usize,
    /// Objects copied.
    pub objects_relocated: u64,
    /// Bytes copied.
    pub bytes_relocated: u64,
    /// Heap bytes in use before the collection.
    pub used_before: usize,
    /// Heap bytes in use after.
    pub used_after: usize,
    /// Time from asking for the safepoint until all mutators were stopped.
    pub time_to_safepoint_ns: u64,
    /// Time the mutators were stopped for the collection's work.
    pub pause_ns: u64,
    /// Time spent marking (roots and the parallel trace).
    pub mark_ns: u64,
    /// Objects marked (reachable objects found by the trace).
    pub objects_marked: u64,
    /// GC workers that marked.
    pub mark_workers: usize,
    /// Time spent relocating on the workers.
    pub relocation_ns: u64,
    /// Time spent updating references (the slots of [`Self::update_scope`],
    /// every root).
    pub update_ns: u64,
    /// Which slots the update visited.
    pub update_scope: UpdateScope,
    /// The relocation phase on the workers.
    pub relocation: PhaseSummary,
    /// Weak references, ephemerons and finalizers: what their processing
    /// found and did, and its time.
    pub refs: RefStats,
    /// A concurrent cycle's phases ([`CollectorMode::Concurrent`](crate::CollectorMode));
    /// `None` for a collection that stopped the world throughout. For a
    /// concurrent cycle `pause_ns` is the sum of its three pauses,
    /// `mark_ns` its concurrent marking and `relocation_ns` its concurrent
    /// relocation.
    pub concurrent: Option<ConcurrentPhases>,
}

/// The phases of a concurrent cycle, as ZGC's `gc,phases` names them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConcurrentPhases {
    /// With [`Generations::YoungAndOld`](crate::Generations): a young
    /// cycle or a full one (the log calls them minor and major, and
    /// prefixes their phases `Y:` and `O:`, as generational ZGC does);
    /// `None` in a single-generation runtime.
    pub generation: Option<CollectionKind>,
    /// Pause Mark Start: the roots.
    pub mark_start_ns: u64,
    /// Concurrent Mark: tracing while the mutators run.
    pub concurrent_mark_ns: u64,
    /// Entries of root tables (handles, the binding's
    /// [`RootTable`](crate::RootTable)s) marked in Concurrent Mark, after
    /// Pause Mark Start ([`RootTableVisit::Concurrent`](crate::RootTableVisit)).
    pub root_table_entries: u64,
    /// Rounds of Concurrent Mark: a trace, then what the mutators logged
    /// meanwhile. Marking leaves for Pause Mark End after a round that
    /// found nothing new to mark, or after
    /// `MAX_CONCURRENT_MARK_ROUNDS` (64) rounds, whatever the mutators do.
    pub mark_rounds: u32,
    /// Pause Mark End: the mutators' logs, the end of the trace, the
    /// references that are not strong.
    pub mark_end_ns: u64,
    /// Concurrent Process Non-Strong References: the weak sets' dead
    /// entries cleared, and the dead weak handles unless finalization kept
    /// objects alive.
    pub process_non_strong_ns: u64,
    /// Concurrent Select Relocation Set: the pages found empty freed (the
    /// last cycle's relocation set among them), the pages to evacuate
    /// chosen.
    pub select_ns: u64,
    /// Pause Relocate Start: the roots into the relocation set forwarded
    /// (0 when nothing was worth moving, or the binding's slots cannot be
    /// healed atomically).
    pub relocate_start_ns: u64,
    /// Concurrent Relocate: the relocation set copied while the mutators
    /// run.
    pub concurrent_relocate_ns: u64,
    /// Pages in the relocation set: their live objects were copied while
    /// the mutators ran; the next cycle frees them (they count in its
    /// `pages_freed_empty`) once no reachable slot refers into them.
    pub relocation_set_pages: usize,
    /// Pages worth evacuating that stayed because the objects strong roots
    /// referred to in them would have made Pause Relocate Start copy more
    /// than its budget (1 MiB; none while allocations stall).
    pub pages_kept_for_roots: usize,
    /// Objects the mutators' load barriers copied (they loaded a
    /// reference to an object no worker had copied yet); counted in
    /// `objects_relocated` too.
    pub relocated_by_mutators: u64,
    /// Objects relocated for root tables' entries after Pause Relocate
    /// Start, by the GC thread or by a thread that read the entry first;
    /// counted in `objects_relocated` too.
    pub relocated_for_root_tables: u64,
    /// The whole cycle, from the first pause's request to the end of
    /// Concurrent Relocate.
    pub cycle_ns: u64,
    /// A young cycle that evacuates: what it found live in the young
    /// generation, and which of the young pages it kept where they are it
    /// promoted; `None` for any other cycle.
    pub young_survival: Option<YoungSurvival>,
    /// A full cycle: the young cycles that ran inside its Concurrent Mark
    /// ([`YoungInFull`](crate::YoungInFull)), each counted and logged as a
    /// collection of its own. Concurrent Mark's time leaves theirs out;
    /// `cycle_ns` holds it.
    pub young_cycles_inside: u32,
}

/// What a concurrent young cycle found live in the young generation, and
/// what it did with the young pages it kept where they are (the log's
/// `gc,age` line). Such a page ages by one cycle, and is promoted (its
/// objects become old) once it has survived the cycle's tenuring
/// threshold: 2 cycles while most young bytes die, 1 when the cycle found
/// at least half of them live (a program building a large long-lived
/// structure: ageing it would only mark it once more as young).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct YoungSurvival {
    /// Bytes of the objects marking found live in the pages young at mark
    /// start, those the cycle evacuated included.
    pub live_bytes: usize,
    /// Bytes allocated in those pages.
    pub used_bytes: usize,
    /// Young cycles a page kept where it is must have survived, this one
    /// included, to be promoted by this cycle.
    pub tenuring_threshold: u8,
    /// Young pages kept where they are and promoted.
    pub pages_promoted: usize,
    /// Young pages kept where they are that stay young, one cycle older.
    pub pages_aged: usize,
}

impl CollectStats {
    /// The statistics of collection `cycle` before its phases add to them:
    /// `pages` examined, `used_before` heap bytes in use.
    pub(crate) fn begin(
        cycle: u64,
        cause: GcCause,
        kind: CollectionKind,
        pages: usize,
        used_before: usize,
    ) -> CollectStats {
        CollectStats {
            cycle,
            cause,
            kind,
            live_objects: 0,
            live_bytes: 0,
            pages,
            pages_freed_empty: 0,
            pages_evacuated: 0,
            pages_evacuation_incomplete: 0,
            objects_relocated: 0,
            bytes_relocated: 0,
            used_before,
            used_after: used_before,
            time_to_safepoint_ns: 0,
            pause_ns: 0,
            mark_ns: 0,
            objects_marked: 0,
            mark_workers: 0,
            relocation_ns: 0,
            update_ns: 0,
            update_scope: UpdateScope::Nothing,
            relocation: PhaseSummary::default(),
            refs: RefStats::default(),
            concurrent: None,
        }
    }

    /// Counts the times of the phases a collection ran in the figures the
    /// declared list says they belong to (marking, relocation, update);
    /// for a collector some of whose phases run while the mutators run,
    /// the pause time is the sum of its phases that ran in a pause (a
    /// collector that stops the world throughout measures its one pause
    /// itself).
    pub(crate) fn count_phase_times(&mut self, times: &PhaseTimes) {
        for (phase, ns) in times.ran() {
            match phase.figure() {
                Figure::Mark => self.mark_ns += ns,
                Figure::Relocation => self.relocation_ns += ns,
                Figure::Update => self.update_ns += ns,
                Figure::Own => {}
            }
        }
        let collector = times.collector();
        if GcPhase::of(collector).any(|p| p.mode() == PhaseMode::Concurrent) {
            self.pause_ns = times.pause_ns();
        }
    }

    /// Marking throughput: objects marked per millisecond per marking worker
    /// (0 when nothing was marked).
    pub fn marking_rate(&self) -> f64 {
        if self.mark_ns == 0 || self.mark_workers == 0 {
            return 0.0;
        }
        self.objects_marked as f64 / (self.mark_ns as f64 / 1e6) / self.mark_workers as f64
    }
}

impl ConcurrentPhases {
    /// Takes the times of the phases a concurrent cycle ran.
    pub(crate) fn set_times(&mut self, times: &PhaseTimes) {
        for (phase, ns) in times.ran() {
            if let Some(field) = self.time_mut(phase) {
                *field = ns;
            }
        }
    }

    /// The time of `phase` in this cycle, if it ran: the relocation phases
    /// run only when pages were worth moving (`relocation_set_pages`).
    pub(crate) fn time(&self, phase: GcPhase) -> Option<u64> {
        let relocation = matches!(
            phase,
            GcPhase::PauseRelocateStart | GcPhase::ConcurrentRelocate
        );
        if relocation && self.relocation_set_pages == 0 {
            return None;
        }
        let mut copy = *self;
        copy.time_mut(phase).map(|ns| *ns)
    }

    /// Where the time of `phase` is kept (none for a phase that is no
    /// concurrent cycle's).
    fn time_mut(&mut self, phase: GcPhase) -> Option<&mut u64> {
        Some(match phase {
            GcPhase::PauseMarkStart => &mut self.mark_start_ns,
            GcPhase::ConcurrentMark => &mut self.concurrent_mark_ns,
            GcPhase::PauseMarkEnd => &mut self.mark_end_ns,
            GcPhase::ConcurrentProcessNonStrong => &mut self.process_non_strong_ns,
            GcPhase::ConcurrentSelectRelocationSet => &mut self.select_ns,
            GcPhase::PauseRelocateStart => &mut self.relocate_start_ns,
            GcPhase::ConcurrentRelocate => &mut self.concurrent_relocate_ns,
            _ => return None,
        })
    }
}

/// What one collection's reference processing did with references of one
/// strength.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StrengthCounts {
    /// References examined (weak handles, ephemeron pairs, registered
    /// finalizers) that were not cleared before.
    pub found: u64,
    /// Cleared: the referent (the key, for an ephemeron) was unreachable.
    pub cleared: u64,
    /// Objects kept alive by them (ephemeron values whose key lives,
    /// finalizable objects and what they reach) that were not live
    /// otherwise.
    pub retained: u64,
    /// Queued for the embedder (finalizable objects).
    pub enqueued: u64,
}

impl StrengthCounts {
    fn add(&mut self, o: &StrengthCounts) {
        self.found += o.found;
        self.cleared += o.cleared;
        self.retained += o.retained;
        self.enqueued += o.enqueued;
    }
}

/// Reference processing in one collection (after marking, as HotSpot's
/// "Reference Processing"): the runtime's weak handles, ephemerons and
/// finalizers, and the binding's own hook.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RefStats {
    /// [`WeakHandle`](crate::WeakHandle)s.
    pub weak: StrengthCounts,
    /// [`Ephemeron`](crate::Ephemeron)s.
    pub ephemeron: StrengthCounts,
    /// Objects registered for finalization.
    pub finalizable: StrengthCounts,
    /// Entries of [`WeakSet`](crate::WeakSet)s (swept after Pause Mark
    /// End in a concurrent cycle).
    pub weak_set: StrengthCounts,
    /// Calls of [`Binding::process_weak_refs`](crate::Binding::process_weak_refs).
    pub binding_passes: u32,
    /// Objects the binding's hook retained that were not live otherwise.
    pub binding_retained: u64,
    /// Time of the whole processing (after marking, and the forwarding
    /// after relocation), nanoseconds.
    pub ns: u64,
}

impl RefStats {
    fn add(&mut self, o: &RefStats) {
        self.weak.add(&o.weak);
        self.ephemeron.add(&o.ephemeron);
        self.finalizable.add(&o.finalizable);
        self.weak_set.add(&o.weak_set);
        self.binding_passes += o.binding_passes;
        self.binding_retained += o.binding_retained;
        self.ns += o.ns;
    }
}

/// Totals over every collection of a runtime.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcTotals {
    /// Collections run.
    pub cycles: u64,
    /// Of which caused by allocation failure.
    pub allocation_failures: u64,
    /// Of which young collections ([`CollectionKind::Young`]).
    pub young_collections: u64,
    /// Objects copied.
    pub objects_relocated: u64,
    /// Bytes copied.
    pub bytes_relocated: u64,
    /// Pages freed, empty or evacuated.
    pub pages_freed: u64,
    /// Sum of pauses.
    pub pause_ns: u64,
    /// Longest pause.
    pub max_pause_ns: u64,
    /// Sum of marking times.
    pub mark_ns: u64,
    /// Sum of relocation times.
    pub relocation_ns: u64,
    /// Sum of update times.
    pub update_ns: u64,
    /// Objects marked.
    pub objects_marked: u64,
    /// Sum over collections of marking time times marking workers: the
    /// worker time marking had.
    pub mark_worker_ns: u64,
    /// Collections whose update visited only remembered slots
    /// ([`UpdateScope::Remembered`]).
    pub remembered_updates: u64,
    /// Collections whose update visited every live object
    /// ([`UpdateScope::AllLiveObjects`]).
    pub full_updates: u64,
    /// Reference processing, summed.
    pub refs: RefStats,
    /// Concurrent cycles ([`CollectorMode::Concurrent`](crate::CollectorMode)).
    pub concurrent_cycles: u64,
    /// Allocations that waited for a concurrent cycle to finish
    /// (allocation stalls).
    pub stalls: u64,
    /// Time those allocations waited.
    pub stall_ns: u64,
    /// The same stalls by the kind of concurrent cycle running when each
    /// began.
    pub stalls_by_cycle: StallsByCycle,
    /// Objects that mutators' load barriers relocated in concurrent cycles
    /// (counted in `objects_relocated` too).
    pub relocated_by_mutators: u64,
}

/// Allocation stalls that began while one kind of concurrent cycle ran
/// (or none): how many, and how long they waited in all.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StallTotal {
    /// Stalls.
    pub stalls: u64,
    /// Time they waited.
    pub ns: u64,
}

/// Allocation stalls by the kind of concurrent cycle running when each
/// began. A stall may outlast that cycle (it waits until a cycle makes
/// room), so a kind's time bounds from above what its cycles cost the
/// mutators.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StallsByCycle {
    /// Stalls begun during a young cycle.
    pub young: StallTotal,
    /// Stalls begun during a full cycle.
    pub full: StallTotal,
    /// Stalls begun between cycles (the stall asks for one).
    pub between: StallTotal,
}

impl StallsByCycle {
    /// Counts a stall of `ns` nanoseconds that began while `running` ran.
    pub(crate) fn add(&mut self, running: Option<CollectionKind>, ns: u64) {
        let total = match running {
            Some(CollectionKind::Young) => &mut self.young,
            Some(CollectionKind::Full) => &mut self.full,
            None => &mut self.between,
        };
        total.stalls += 1;
        total.ns += ns;
    }
}

impl GcTotals {
    /// Marking throughput over every collection: objects marked per
    /// millisecond per marking worker (0 before the first mark).
    pub fn marking_rate(&self) -> f64 {
        if self.mark_worker_ns == 0 {
            return 0.0;
        }
        self.objects_marked as f64 / (self.mark_worker_ns as f64 / 1e6)
    }

    pub(crate) fn add(&mut self, s: &CollectStats) {
        self.cycles += 1;
        if s.cause == GcCause::AllocationFailure {
            self.allocation_failures += 1;
        }
        if s.kind == CollectionKind::Young {
            self.young_collections += 1;
        }
        self.objects_relocated += s.objects_relocated;
        self.bytes_relocated += s.bytes_relocated;
        self.pages_freed += (s.pages_freed_empty + s.pages_evacuated) as u64;
        self.pause_ns += s.pause_ns;
        self.max_pause_ns = self.max_pause_ns.max(s.pause_ns);
        self.mark_ns += s.mark_ns;
        self.relocation_ns += s.relocation_ns;
        self.update_ns += s.update_ns;
        self.objects_marked += s.objects_marked;
        self.mark_worker_ns += s.mark_ns * s.mark_workers as u64;
        self.refs.add(&s.refs);
        if let Some(c) = &s.concurrent {
            self.concurrent_cycles += 1;
            self.relocated_by_mutators += c.relocated_by_mutators;
        }
        match s.update_scope {
            UpdateScope::Remembered { .. } => self.remembered_updates += 1,
            UpdateScope::AllLiveObjects => self.full_updates += 1,
            UpdateScope::Nothing => {}
        }
    }
}
