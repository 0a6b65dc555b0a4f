//! One concurrent cycle as its phases: Pause Mark Start, Concurrent Mark,
//! Pause Mark End, Concurrent Select Relocation Set, Pause Relocate Start,
//! Concurrent Relocate (see the [module docs](super)). The cycle's state is
//! its own ([`ConcurrentCycle`], [`Marked`]) around the core's
//! [`Collection`].

use super::concurrent_relocate;
use super::stalls::ConcurrentState;
use super::young_in_full::YoungRunner;
use super::young_promotion::{self, Survivors};
use crate::GcError;
use crate::error::BadReference;
use crate::gc::barriers::{
    BarrierPhase, ConcurrentBarriers, Installed, RememberedSet, SetOwner, sorted,
};
use crate::gc::core::binding_panic::call_model;
use crate::gc::core::collection::{Collection, CollectionRequest};
use crate::gc::core::driver::DriverContext;
use crate::gc::core::ephemeron_marking::{EphemeronScan, EphemeronStart};
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::heap::GcHeap;
use crate::gc::core::in_collection;
use crate::gc::core::mark::{MarkPolicy, Marker, Traced};
use crate::gc::core::meta::{ForwardingTables, HeapMap, NewPages};
use crate::gc::core::pause::Pause;
use crate::gc::core::phases::{GcPhase, PhaseMode, PhaseTimes};
use crate::gc::core::relocation_set::{RelocationSet, heal};
use crate::gc::core::root_scan::rebuild_slots;
use crate::gc::core::root_tables::{ConcurrentTables, RootTableVisit};
use crate::gc::core::stats::{CollectStats, ConcurrentPhases, GcCause, StrengthCounts};
use crate::gc::core::weak_processing::{EphemeronClearing, HandleClearing};
use crate::gc::core::workers::GcWorkers;
use crate::vm::{Binding, ObjectReference, Slot};
use crate::weak::{FinalizerStart, SetMarking, Sweeps};
use hotmem_os::Address;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Puts the barriers back to idle and forgets the logs when a cycle ends,
/// also when it fails half-way.
struct BackToIdle<'a>(&'a ConcurrentBarriers);

impl Drop for BackToIdle<'_> {
    fn drop(&mut self) {
        self.0.set_phase(BarrierPhase::Idle);
        self.0.new_pages.stop();
        self.0.satb.clear();
    }
}

/// Concurrent marking's [`MarkPolicy`]: the pages allocated since mark
/// start hold live objects, not examined; a reference into the last
/// cycle's relocation set is stale, followed to the object's new address
/// and its slot healed (ZGC's remapping during the next marking); no slot
/// is remembered (a concurrent cycle updates no slot, and remembering one
/// per reference into a young page cost a whole heap's worth of vectors).
struct ConcurrentMarking<'a> {
    new_pages: &'a NewPages,
    /// A full cycle asks its own record of new pages: young cycles inside
    /// its marking start theirs again.
    kind: CollectionKind,
    remap: &'a Installed,
}

impl MarkPolicy for ConcurrentMarking<'_> {
    const REMEMBER_YOUNG_SLOTS: bool = false;

    #[inline]
    fn current(&self, r: ObjectReference) -> Result<ObjectReference, BadReference> {
        self.remap.forwarded(r).ok_or(BadReference::NotRelocated)
    }

    /// Marking's side of lazy remapping: if `t`, just loaded from `slot`,
    /// lies in the last cycle's relocation set, the slot gets the object's
    /// new address (unless a mutator stored another value meanwhile: a heal
    /// never overwrites a store) and the new address is what marking
    /// follows.
    #[inline]
    fn heal<S: Slot>(&self, slot: &S, t: ObjectReference) -> Result<ObjectReference, BadReference> {
        let Some((set, pi)) = self.remap.page_of(t.get()) else {
            return Ok(t);
        };
        let to = set.forwarded(pi, t).ok_or(BadReference::NotRelocated)?;
        heal(slot, t, to);
        Ok(to)
    }

    #[inline]
    fn allocated_since_map(&self, r: ObjectReference) -> bool {
        match self.kind {
            CollectionKind::Full => self.new_pages.contains_since_full(r.get()),
            CollectionKind::Young => self.new_pages.contains(r.get()),
        }
    }
}

/// One concurrent cycle: the runtime's parts it works with, the
/// collector's shared state, the phases' times.
pub(super) struct ConcurrentCycle<'a, 's, B: Binding> {
    pub(super) binding: &'a B,
    /// Young (only the pages found young at mark start are marked, freed,
    /// evacuated and aged) or full.
    pub(super) kind: CollectionKind,
    /// With generations: the store barrier's remembered set.
    pub(super) remembered: Option<&'a RememberedSet>,
    pub(super) heap: &'a GcHeap,
    pub(super) cx: &'a DriverContext<'s>,
    pub(super) barriers: &'a ConcurrentBarriers,
    pub(super) state: &'a ConcurrentState,
    /// Whether the cycle moves objects (see
    /// [`ConcurrentCollector`](super::ConcurrentCollector)).
    pub(super) moves: bool,
    /// Where the cycle visits the root tables.
    pub(super) tables: RootTableVisit,
    /// The collection's number.
    pub(super) number: u64,
    /// The longest time to safepoint of the cycle's pauses.
    pub(super) ttsp: Duration,
    /// What the phases counted besides their times.
    pub(super) phases: ConcurrentPhases,
    /// The declared phases' times, as they run.
    pub(super) times: PhaseTimes,
    /// A full cycle that may run young cycles inside its marking: how.
    pub(super) young_inside: Option<&'a YoungRunner<'a, 's, B>>,
    /// A young cycle inside a full cycle's marking: marks for the full
    /// cycle every log this one takes. Such a cycle leaves the barriers
    /// as the full cycle needs them (marking, no relocation set taken out).
    pub(super) full_log: Option<&'a (dyn Fn(Vec<usize>) + Sync)>,
}

/// What marking leaves to the rest of the cycle: the collection, the
/// objects that strong roots visited in Pause Mark Start referred to, and
/// the root tables visited after the pauses.
struct Marked<'a, B: Binding> {
    collection: Collection<'a, B>,
    /// With generations: the store barrier's remembered set (its table of
    /// old pages forgets the pages freed).
    remembered: Option<&'a RememberedSet>,
    /// A young cycle that evacuates: the addresses of the slots it marked
    /// from, remembered again at its end (their references into the pages
    /// it evacuated are healed by the next cycle's marking).
    snapshot: Vec<usize>,
    rooted: Vec<ObjectReference>,
    tables: Option<ConcurrentTables>,
}

impl<'a, 's, B: Binding> ConcurrentCycle<'a, 's, B> {
    /// Runs the cycle on the calling (the GC) thread, which holds the
    /// collection lock (`workers`) and is no mutator. Mutators run between
    /// the pauses.
    pub(super) fn run(
        mut self,
        workers: &mut GcWorkers,
        cause: GcCause,
    ) -> Result<CollectStats, GcError> {
        let _inside = in_collection::enter(self.heap);
        let started = Instant::now();
        let stalls_before = self.state.stalls();
        // A young cycle inside a full one leaves the barriers to it.
        let _idle = self.full_log.is_none().then(|| BackToIdle(self.barriers));
        let mut marked = self.mark(workers, cause)?;
        let moves = self.moves;
        let evacuates_young = self.evacuates_young(marked.collection.kind);
        // While mutators wait for memory, what the pause frees matters more
        // than its length: no budget then.
        let budget = if self.state.stalls() > stalls_before {
            usize::MAX
        } else {
            ROOT_COPY_BUDGET
        };
        let set = self.select(&mut marked, moves, budget)?;
        let forwarded = match set {
            Some(set) => {
                let tables = marked.tables.take();
                let snapshot = std::mem::take(&mut marked.snapshot);
                self.relocate(&mut marked.collection, workers, set, tables, snapshot)
            }
            // Nothing worth moving: the young pages all stay, aged or
            // promoted in a pause.
            None if evacuates_young => {
                self.promote_in_place(&marked.collection.map, &marked.snapshot)
            }
            None => Ok(()),
        };
        let mut stats = marked.collection.finish();
        stats.count_phase_times(&self.times);
        stats.time_to_safepoint_ns = stats.time_to_safepoint_ns.max(self.ttsp.as_nanos() as u64);
        let p = &mut self.phases;
        p.set_times(&self.times);
        p.generation = self.remembered.map(|_| stats.kind);
        p.cycle_ns = started.elapsed().as_nanos() as u64;
        stats.concurrent = Some(self.phases);
        forwarded.map(|()| stats)
    }

    /// Whether a cycle of `kind` is a young cycle that evacuates young
    /// pages (with generations, when the cycle moves objects). Such a
    /// cycle keeps the young pages young for the store barrier until Pause
    /// Relocate Start, then remembers the promoted survivors' slots into
    /// young pages ([`young_promotion`](super::young_promotion)); a young cycle
    /// that does not move makes them old at Pause Mark Start.
    fn evacuates_young(&self, kind: CollectionKind) -> bool {
        self.remembered.is_some() && self.moves && kind == CollectionKind::Young
    }

    /// Whether Pause Mark Start leaves the mutators the pages they
    /// allocate in ([`GcHeap::keep_mutator_allocation`]): when the cycle
    /// moves nothing and the heap has one generation. With two, the pages
    /// mapped at mark start become old: objects allocated there later
    /// would be old from birth, and their first stores, which an embedder
    /// may make without the barrier (see `Mutator::store_ref`), would not
    /// be remembered.
    fn keeps_mutator_pages(&self) -> bool {
        !self.moves && self.remembered.is_none()
    }

    /// A young cycle that evacuates, with nothing worth evacuating: every
    /// young page stays, aged or promoted in a pause (see
    /// [`young_promotion`](super::young_promotion)), and the promoted
    /// survivors' slots into young pages are remembered.
    fn promote_in_place(&mut self, map: &HeapMap, snapshot: &[usize]) -> Result<(), GcError> {
        let remembered = self.remembered.expect("a generational cycle");
        let pause = self.pause(GcPhase::PauseRelocateStart)?;
        let (promoted, found) = young_promotion::promote_in_place(map, None, remembered);
        self.end_pause(GcPhase::PauseRelocateStart, pause);
        self.phases.young_survival = Some(found);
        let slots = young_promotion::remember_survivors(
            self.binding,
            map,
            None,
            Survivors::Young(promoted),
            remembered,
            snapshot.to_vec(),
        );
        self.heap.poison.on_error(slots)
    }

    /// The mutators' logs just taken, `logs`: a young cycle inside a full
    /// cycle's marking first hands the full marking a copy (every
    /// overwritten reference of its snapshot is logged once, whoever takes
    /// the log).
    fn share(&self, logs: Vec<usize>) -> Vec<usize> {
        if let Some(full) = self.full_log {
            full(logs.clone());
        }
        logs
    }

    /// Begins the pause of `phase` (a phase the list declares a pause).
    fn pause(&mut self, phase: GcPhase) -> Result<Pause<'s, 'a>, GcError> {
        debug_assert_eq!(phase.mode(), PhaseMode::Pause, "{}", phase.name());
        let pause = Pause::begin(self.cx, self.heap, phase.safepoint(), None)?;
        self.cx.log.gc_safepoint(pause.safepoint_id(), self.number);
        self.ttsp = self.ttsp.max(pause.time_to_safepoint());
        Ok(pause)
    }

    /// Ends the pause of `phase`, recording its time.
    fn end_pause(&mut self, phase: GcPhase, pause: Pause<'s, 'a>) {
        let ns = nanos(pause.end(self.cx));
        self.times.record(phase, ns);
    }

    /// Pause Mark Start, Concurrent Mark, Pause Mark End: the collection,
    /// its pages marked and its references that are not strong processed.
    /// The last cycle's relocation set, whose stale references marking
    /// forwards and heals, is taken out of the barrier at mark end.
    fn mark(&mut self, workers: &mut GcWorkers, cause: GcCause) -> Result<Marked<'a, B>, GcError> {
        let (heap, barriers) = (self.heap, self.barriers);
        let previous = barriers.installed();
        // Pause Mark Start: the roots, then the barriers keep the snapshot.
        let pause = self.pause(GcPhase::PauseMarkStart)?;
        // Inside a full cycle's marking: what the mutators logged so far is
        // the full marking's alone.
        if let Some(full) = self.full_log {
            full(barriers.satb.take_all());
        }
        let kept = match self.keeps_mutator_pages() {
            true => heap.keep_mutator_allocation(),
            false => {
                heap.retire_mutator_allocation();
                Vec::new()
            }
        };
        let request = CollectionRequest {
            number: self.number,
            cause,
            kind: self.kind,
            time_to_safepoint: pause.time_to_safepoint(),
        };
        let count = workers.count().max(1);
        let (mut collection, taken) = self.start(request, count)?;
        // SAFETY: in Pause Mark Start: the mutators are stopped and the GC
        // workers idle, so nobody allocates with the GC allocator.
        unsafe { collection.retire_target_pages() };
        let policy = ConcurrentMarking {
            new_pages: &barriers.new_pages,
            kind: collection.kind,
            remap: &previous,
        };
        let young_only = collection.young_only();
        let marker = Marker::new(self.binding, &collection.map, count, young_only, policy);
        let mut rooted = Vec::new();
        collection.mark_roots(&marker, &[], self.tables, |r| rooted.push(r))?;
        let tables = match self.tables {
            RootTableVisit::Concurrent => {
                Some(ConcurrentTables::begin_marking(self.binding, heap)?)
            }
            RootTableVisit::InPause => None,
        };
        // The non-moving space's current pages are not retired, nor the
        // mutators' that were kept: what is allocated above their tops
        // from now on is new.
        let mut growing = heap.non_moving.growing();
        growing.extend(kept);
        match collection.kind {
            CollectionKind::Full => barriers.new_pages.start_full(&growing),
            CollectionKind::Young => barriers.new_pages.start(&growing),
        }
        barriers.satb.forget_recent();
        barriers.set_phase(BarrierPhase::Marking);
        // A weak set's lookups keep alive only what marking has not
        // reached (the pages allocated from now on count as reached).
        let reached = |r: ObjectReference| marker.is_live(r);
        let set_marking = SetMarking::begin(heap.weak.sets.live(), &reached);
        self.end_pause(GcPhase::PauseMarkStart, pause);
        let (snapshot, ephemerons, finalizers) =
            self.mark_concurrently(&marker, workers, taken, tables.as_ref())?;
        // Pause Mark End: every log, the rest of the trace, the references
        // that are not strong. Every reachable slot that referred into the
        // last relocation set was healed: the barrier stops forwarding.
        let pause = self.pause(GcPhase::PauseMarkEnd)?;
        let fresh = mark_logged(&marker, self.share(barriers.satb.take_all()));
        // The logs marked only what reaches nothing else, or little: traced
        // here; more goes to the workers. (Work may be left from the last
        // round, which ended on the round limit.)
        let left = fresh > 0 || marker.pending();
        if left && marker.trace_here(heap, PAUSE_TRACE_HERE)? == Traced::Partly {
            marker.trace(heap, workers)?;
        }
        let ephemerons = match ephemerons {
            Some(scan) => EphemeronStart::Scanned(scan),
            None => EphemeronStart::All,
        };
        let processed = collection.process_weak_refs(
            &marker,
            workers,
            HandleClearing::AfterPause,
            ephemerons,
            EphemeronClearing::AfterPause,
            finalizers,
        )?;
        let mut refs = processed.stats;
        // The weak sets, the ephemerons whose key died, and the weak
        // handles unless finalization kept objects alive, are swept after
        // the pause by this marking's verdict: the pause only flips their
        // state.
        let live = |r: ObjectReference| marker.is_live(r);
        let handles =
            (processed.handles == HandleClearing::AfterPause).then(|| heap.weak.handles.clone());
        let ephemerons = (heap.weak.ephemerons.clone(), processed.ephemerons_to_clear);
        let sweeps = Sweeps::begin(heap.weak.sets.live(), handles, Some(ephemerons), &live);
        drop(set_marking);
        // A young cycle visited only the young objects' slots and the
        // remembered ones: old objects may still hold stale references into
        // the last full cycle's set, which the next full marking heals.
        // Into the last young cycle's set none is left: that cycle had its
        // survivors' slots remembered, and they were healed just now. But
        // a young cycle inside a full cycle's marking leaves the young set
        // of before that full cycle: the full cycle took those slots and
        // heals them by its end. A full cycle heals into the sets that were
        // installed when it began, not into those its young cycles
        // installed since.
        let began_with = |owner| previous.of(owner).map(|s| s as *const RelocationSet);
        let retired = match (self.full_log, young_only) {
            (Some(_), _) => vec![barriers.uninstall(SetOwner::YoungInFull)],
            (None, true) => vec![
                barriers.uninstall(SetOwner::Young),
                barriers.uninstall(SetOwner::YoungInFull),
            ],
            (None, false) => {
                let inside = barriers.installed();
                let mut retired = vec![
                    barriers.uninstall(SetOwner::Full),
                    barriers.uninstall(SetOwner::Young),
                ];
                let now = inside
                    .of(SetOwner::YoungInFull)
                    .map(|s| s as *const RelocationSet);
                if now.is_some() && now == began_with(SetOwner::YoungInFull) {
                    retired.push(barriers.uninstall(SetOwner::YoungInFull));
                }
                retired
            }
        };
        if self.full_log.is_none() {
            barriers.set_phase(BarrierPhase::Idle);
            barriers.new_pages.stop();
        }
        let marked = marker.marked();
        self.end_pause(GcPhase::PauseMarkEnd, pause);
        let running = self.times.start(GcPhase::ConcurrentProcessNonStrong);
        let swept = sweeps.run();
        self.times.stop(running);
        let counts = |(found, cleared)| StrengthCounts {
            found,
            cleared,
            ..StrengthCounts::default()
        };
        refs.weak_set = counts(swept.sets);
        refs.ephemeron.cleared = swept.ephemerons;
        if let Some(handles) = swept.handles {
            refs.weak = counts(handles);
        }
        drop(marker);
        collection.stats.objects_marked = marked;
        collection.stats.live_objects = marked;
        collection.stats.refs = refs;
        drop((retired, previous));
        Ok(Marked {
            collection,
            remembered: self.remembered,
            snapshot,
            rooted,
            tables,
        })
    }

    /// Pause Mark Start's first step, with the mutators' allocation
    /// retired: maps the heap and, with generations, takes the slots the
    /// store barrier remembered since the last cycle's mark start (a young
    /// cycle's roots besides the others, sorted and rebuilt after the pause
    /// so that the pause does not grow with them; a full cycle marks
    /// through them anyway and drops them) and, unless the cycle is young
    /// and evacuates (see [`ConcurrentCycle::evacuates_young`]), makes
    /// every page old for the barrier: from here on a store into an object
    /// of the heap as it is now of a reference to an object allocated later
    /// is remembered, for the next cycle. The pages allocated during the
    /// cycle stay young. Returns the collection and a young cycle's slots
    /// as taken.
    fn start(
        &self,
        request: CollectionRequest,
        count: usize,
    ) -> Result<(Collection<'a, B>, Vec<Vec<usize>>), GcError> {
        let (binding, heap) = (self.binding, self.heap);
        let Some(remembered) = self.remembered else {
            let c = Collection::start(binding, heap, request, count, |_| false);
            return Ok((c, Vec::new()));
        };
        let mut taken = remembered.take_unsorted();
        let old = &remembered.old;
        let mut c = Collection::start(binding, heap, request, count, |start| old.is_old(start));
        if c.kind == CollectionKind::Young {
            // A binding answers for every slot or for none: one asked here,
            // at the safepoint, says which (the rest are made after it).
            if let Some(&a) = taken.iter().flatten().next() {
                if call_model(|| binding.slot_at(Address::new(a)).is_none())? {
                    c.become_full();
                }
            }
        }
        if c.kind == CollectionKind::Full {
            taken.clear();
        }
        if !self.evacuates_young(c.kind) {
            remembered.all_old(&heap.pages.pages());
        }
        Ok((c, taken))
    }

    /// A young cycle's remembered slots, as [`ConcurrentCycle::start`]
    /// took them: sorted, without repeats, without those inside the last
    /// full cycle's old copies (see
    /// [`drop_moved_slots`](young_promotion::drop_moved_slots)), rebuilt by
    /// the binding; with their addresses.
    fn remembered_slots(
        &self,
        map: &HeapMap,
        taken: Vec<Vec<usize>>,
    ) -> Result<(Vec<B::Slot>, Vec<usize>), GcError> {
        let mut addresses = sorted(taken);
        let installed = self.barriers.installed();
        young_promotion::drop_moved_slots(&mut addresses, installed.of(CollectionKind::Full));
        let slots = rebuild_slots(self.binding, map, &addresses)?.ok_or(GcError::SlotAtPartial)?;
        Ok((slots, addresses))
    }

    /// Concurrent Mark: the workers mark the root tables' entries
    /// (`tables`, when they were left out of the pause; one table per
    /// job), then trace while the mutators run; the logs of full buffers
    /// are traced as they come, in rounds, until a round finds nothing new
    /// to mark; each round also retains the values of the ephemerons whose
    /// key is marked ([`EphemeronScan`]), and tracing goes on from them.
    /// Mutators that keep logging (a loop of
    /// stores, weak handles read in a loop) cannot hold marking here:
    /// after the last round allowed, Pause Mark End takes what is left, as
    /// SATB collectors finish. Returns the slots to remember again, the
    /// ephemerons' scan, if one ran, and the registered finalizers Pause
    /// Mark End is to look at (those marking has not reached).
    fn mark_concurrently<P: MarkPolicy>(
        &mut self,
        marker: &Marker<'_, B, P>,
        workers: &mut GcWorkers,
        taken: Vec<Vec<usize>>,
        tables: Option<&ConcurrentTables>,
    ) -> Result<(Vec<usize>, Option<EphemeronScan>, FinalizerStart), GcError> {
        let running = self.times.start(GcPhase::ConcurrentMark);
        // The remembered slots' values now: a value overwritten since mark
        // start was logged by the snapshot barrier.
        let (remembered, addresses) = match taken.is_empty() {
            true => (Vec::new(), Vec::new()),
            false => self.remembered_slots(marker.map(), taken)?,
        };
        for slot in &remembered {
            marker.mark_slot(slot)?;
        }
        // The tables' entries: the first round's jobs.
        let mut roots = tables.map_or_else(Vec::new, |t| t.marking_jobs());
        let pool = workers.count();
        let state = self.state;
        let allowed = || state.concurrent_workers(pool);
        let mut ephemerons = None;
        // Young cycles inside this marking: when one is due (see
        // `YoungRunner::due`), until one frees nothing.
        let inside = self.young_inside;
        let source = self.heap.mutator_alloc.source();
        let since = AtomicU64::new(source.taken());
        let productive = AtomicBool::new(true);
        let due = || {
            inside.is_some_and(|r| {
                productive.load(Ordering::Relaxed) && r.due(since.load(Ordering::Relaxed))
            })
        };
        let mut inside_ns = 0u64;
        loop {
            let visited = marker.trace_concurrently(self.heap, workers, &allowed, &roots, &due)?;
            if !roots.is_empty() {
                self.phases.root_table_entries = visited;
                roots.clear();
            }
            let mut young = None;
            if due() {
                young = Some(match state.stalled_now() {
                    true => GcCause::AllocationStall,
                    false => GcCause::AllocationRate,
                });
            } else if marker.pending() {
                // Stopped for a young cycle no longer due (a stall that
                // ended).
                continue;
            } else if inside.is_some_and(|r| r.each_round()) {
                young = Some(GcCause::FullMarkRound);
            }
            if let (Some(r), Some(cause)) = (inside, young) {
                let began = Instant::now();
                let full_log = |logs| {
                    mark_logged(marker, logs);
                };
                let freed = r.run(workers, cause, &full_log)?;
                inside_ns += began.elapsed().as_nanos() as u64;
                self.phases.young_cycles_inside += 1;
                since.store(source.taken(), Ordering::Relaxed);
                if !freed {
                    productive.store(false, Ordering::Relaxed);
                }
                if cause != GcCause::FullMarkRound {
                    // The round goes on where it stopped.
                    continue;
                }
            }
            self.phases.mark_rounds += 1;
            let logged = mark_logged(marker, self.share(self.barriers.satb.take_full()));
            // After a round whose logs held nothing new, and after rounds
            // 1, 2, 4, ..., 64 whatever they held: a mutator that reads
            // ephemerons or weak handles in a loop logs something every
            // round, and each pass takes the GC thread's time and, chunk by
            // chunk, the table's lock from the mutators.
            let rounds = self.phases.mark_rounds;
            let table = &self.heap.weak.ephemerons;
            let retained = match logged == 0 || rounds.is_power_of_two() {
                true => EphemeronScan::pass(&mut ephemerons, table, marker)?,
                false => 0,
            };
            // What young cycles inside it handed over waits in the queues.
            let fresh = logged + retained + u64::from(marker.pending());
            if fresh == 0 || self.phases.mark_rounds >= MAX_CONCURRENT_MARK_ROUNDS {
                break;
            }
        }
        let finalizers = self.heap.weak.finalizers.candidates(|r| marker.is_live(r));
        self.times.stop(running);
        self.times.deduct(GcPhase::ConcurrentMark, inside_ns);
        // A young cycle that evacuates remembers them again at its end.
        let evacuates = self.evacuates_young(CollectionKind::Young) && marker.young_only();
        let slots = if evacuates { addresses } else { Vec::new() };
        Ok((slots, ephemerons, finalizers))
    }

    /// Concurrent Select Relocation Set: the pages found empty (the last
    /// relocation set's among them) go back, and stalled allocations
    /// retry; the pages worth evacuating are chosen.
    fn select(
        &mut self,
        marked: &mut Marked<'a, B>,
        moves: bool,
        budget: usize,
    ) -> Result<Option<RelocationSet>, GcError> {
        let running = self.times.start(GcPhase::ConcurrentSelectRelocationSet);
        let (mut set, kept) = marked.select(moves, budget)?;
        if let (Some(set), Some(r)) = (&mut set, self.remembered) {
            set.mark_copies_old(r.old.clone());
        }
        self.times.stop(running);
        self.phases.pages_kept_for_roots = kept;
        self.state.memory_freed();
        Ok(set)
    }

    /// Pause Relocate Start, then Concurrent Relocate. A root the binding
    /// could not forward (its hook panicked) is the error returned, after
    /// the relocation, which always completes; it poisons the runtime.
    /// The root tables visited after the pauses (`tables`) are forwarded
    /// in Concurrent Relocate, beside the pages, and read through the set
    /// until then.
    fn relocate(
        &mut self,
        collection: &mut Collection<'a, B>,
        workers: &mut GcWorkers,
        mut set: RelocationSet,
        mut tables: Option<ConcurrentTables>,
        snapshot: Vec<usize>,
    ) -> Result<(), GcError> {
        let heap = self.heap;
        let kind = collection.kind;
        let young = self.remembered.filter(|_| self.evacuates_young(kind));
        let finalizers = &heap.weak.finalizers;
        let registered = match self.tables {
            RootTableVisit::Concurrent => Some(finalizers.note_relocation_set(|r| set.holds(r))),
            RootTableVisit::InPause => None,
        };
        let pause = self.pause(GcPhase::PauseRelocateStart)?;
        set.unpin(&heap.roots.pins.snapshot());
        let promoted = young.map(|r| {
            let (promoted, found) = young_promotion::promote_in_place(set.map(), Some(&set), r);
            self.phases.young_survival = Some(found);
            promoted
        });
        let set = Arc::new(set);
        let owner = match self.full_log {
            Some(_) => SetOwner::YoungInFull,
            None => SetOwner::from(kind),
        };
        self.barriers.install(owner, set.clone());
        let mut forwarded =
            concurrent_relocate::forward_roots(self.binding, heap, &set, self.tables);
        // One forwarder for the root tables and the finalizer registry.
        let to = (tables.is_some() || registered.is_some())
            .then(|| concurrent_relocate::TableForwarder::for_set(set.clone(), heap));
        if let (Some(t), Some(to)) = (&mut tables, &to) {
            forwarded = forwarded.and(t.begin_forwarding(self.binding, heap, to.clone()));
        }
        let registry = registered.zip(to).map(|(entries, to)| {
            concurrent_relocate::FinalizersForwarding::begin(finalizers, entries, &set, to)
        });
        self.end_pause(GcPhase::PauseRelocateStart, pause);
        let running = self.times.start(GcPhase::ConcurrentRelocate);
        drop(registry);
        let pool = workers.count();
        let state = self.state;
        let allowed = || state.concurrent_workers(pool);
        let jobs = tables.as_ref().map(ConcurrentTables::forwarding_jobs);
        let done = concurrent_relocate::relocate(
            heap,
            workers,
            &set,
            jobs.as_deref().unwrap_or(&[]),
            &allowed,
        );
        drop(jobs);
        drop(tables);
        self.times.stop(running);
        let (by_mutators, by_mutators_bytes) = set.copied_by_mutators();
        let (in_pause, in_pause_bytes) = set.copied_in_pause();
        let (for_tables, for_tables_bytes) = set.copied_for_root_tables();
        let stats = &mut collection.stats;
        stats.objects_relocated = done.objects + by_mutators + in_pause + for_tables;
        stats.bytes_relocated = done.bytes + by_mutators_bytes + in_pause_bytes + for_tables_bytes;
        stats.relocation = done.summary;
        stats.pages_evacuation_incomplete = set.incomplete_pages();
        self.phases.relocation_set_pages = set.page_count();
        self.phases.relocated_by_mutators = by_mutators;
        self.phases.relocated_for_root_tables = for_tables;
        // With generations, the slots that may refer to young objects: a
        // young cycle's survivors', a full cycle's copies'.
        let which = match promoted {
            Some(promoted) => Survivors::Young(promoted),
            None => Survivors::Copied,
        };
        let survivors = match self.remembered {
            Some(r) => young_promotion::remember_survivors(
                self.binding,
                set.map(),
                Some(&set),
                which,
                r,
                snapshot,
            ),
            None => Ok(()),
        };
        // A root or weak reference the binding could not forward still
        // names an old copy, which mutators may read without a barrier; a
        // survivor's slot left unremembered may name a freed object later.
        heap.poison.on_error(forwarded.and(survivors))
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Objects Pause Mark End traces on the GC thread before it wakes the
/// workers for the rest (see [`Marker::trace_here`]): about 0.2 ms at the
/// 5-6k objects per millisecond one worker marks (binary_trees, depth 20).
const PAUSE_TRACE_HERE: u64 = 1024;

/// Rounds of Concurrent Mark at most (see [`ConcurrentPhases::mark_rounds`]).
/// A round that marks something is followed by another: each marks
/// objects of the snapshot (a mutator logs nothing allocated since mark
/// start), so rounds end by themselves; this only bounds them. 8 left a
/// program that looks up a weak set's 65k strings in a loop (each found
/// string logged until marking reaches it) with 40-75k entries for Pause
/// Mark End to mark (1-3 ms); it needed 14.
const MAX_CONCURRENT_MARK_ROUNDS: u32 = 64;

/// Marks what the mutators logged (references they overwrote, objects
/// read from weak references), each once; how many were not marked yet.
/// A logged value that is no reference to an object (a weak handle made
/// of a stale address, say) keeps nothing alive and is passed over: the
/// slot or handle that holds it is reported where it is scanned, if it is.
fn mark_logged<B: Binding, P: MarkPolicy>(
    marker: &Marker<'_, B, P>,
    mut logged: Vec<usize>,
) -> u64 {
    logged.sort_unstable();
    logged.dedup();
    let mut fresh = 0;
    for word in logged {
        if let Some(r) = ObjectReference::from_address(Address::new(word)) {
            if let Ok(true) = marker.mark_root(r, None) {
                fresh += 1;
            }
        }
    }
    fresh
}

/// Bytes of objects referred to by roots that Pause Relocate Start may
/// copy when no allocation stalled during the cycle: 1 MiB, a few hundred
/// microseconds of copying at most.
const ROOT_COPY_BUDGET: usize = 1 << 20;

impl<B: Binding> Marked<'_, B> {
    /// Concurrent Select Relocation Set: counts the live bytes of every
    /// mapped page, frees the pages where marking found nothing and, when
    /// the cycle `moves`, chooses the pages to evacuate as the
    /// stop-the-world collector does. The set takes the collection's map
    /// (its live maps locate the objects to copy); `None` when nothing is
    /// worth moving. Also returns how many pages left the set for the
    /// pause's budget (see [`Marked::bound_root_copies`]).
    fn select(
        &mut self,
        moves: bool,
        budget: usize,
    ) -> Result<(Option<RelocationSet>, usize), GcError> {
        if !moves {
            self.free_unmarked_pages();
            return Ok((None, 0));
        }
        let c = &mut self.collection;
        c.select_relocation_set();
        if let Some(r) = self.remembered {
            r.freed(&c.empty);
        }
        // SAFETY: after Pause Mark End, marking is complete: the snapshot
        // at mark start, every object allocated since lying in pages the
        // map does not hold, and every mutator's log traced with the
        // mutators stopped; nothing reachable refers into a page it found
        // empty (the last relocation set's among them: every reachable
        // slot into it was healed, and the load barrier stopped forwarding
        // there). Both allocators were retired at Pause Mark Start, so
        // nobody allocates in a mapped page but the non-moving space,
        // whose pages are freed only once it let go of them (`unused`).
        unsafe { c.free_empty_pages() };
        let kept = self.bound_root_copies(budget);
        let c = &mut self.collection;
        if !c.forwarding.any() {
            return Ok((None, kept));
        }
        c.check_selected_pages()?;
        let map = std::mem::replace(&mut c.map, HeapMap::empty(&c.heap.memory));
        let forwarding = std::mem::replace(&mut c.forwarding, ForwardingTables::empty());
        Ok((Some(RelocationSet::new(map, forwarding)), kept))
    }

    /// Bounds what Pause Relocate Start copies: the objects that strong
    /// roots referred to at mark start, in pages of the relocation set,
    /// are relocated in that pause (the roots are forwarded there). The
    /// selected pages holding such objects are admitted fewest rooted
    /// bytes first, while the total stays within `budget` bytes; the
    /// others leave the set (they stay, as pinned pages do). Returns how
    /// many left. Roots made since mark start may still refer into the
    /// set: their objects are copied in the pause too.
    fn bound_root_copies(&mut self, budget: usize) -> usize {
        let rooted = std::mem::take(&mut self.rooted);
        let c = &mut self.collection;
        let mut bytes = vec![0usize; c.map.pages.len()];
        for r in rooted {
            let Ok((pi, wi)) = c.map.locate(r) else {
                continue;
            };
            if c.forwarding.get(pi).is_none() {
                continue;
            }
            if let Some(last) = c.map.pages[pi].live.end_of(wi) {
                bytes[pi] += (last - wi + 1) * 8;
            }
        }
        let mut pages: Vec<usize> = (0..bytes.len()).filter(|&pi| bytes[pi] > 0).collect();
        pages.sort_unstable_by_key(|&pi| bytes[pi]);
        let (mut total, mut removed) = (0usize, 0usize);
        for pi in pages {
            if total.saturating_add(bytes[pi]) <= budget {
                total += bytes[pi];
            } else {
                c.forwarding.remove(pi);
                removed += 1;
            }
        }
        removed
    }

    /// Counts the live bytes of every mapped page and frees the pages where
    /// marking found nothing (a cycle that does not move: a page is
    /// reclaimed once empty), but those still in use (`Collection::unused`).
    fn free_unmarked_pages(&mut self) {
        let c = &mut self.collection;
        let mut live_bytes = 0u64;
        for p in &c.map.pages {
            // A young cycle marked only young pages.
            if c.kind == CollectionKind::Young && !p.young {
                continue;
            }
            let bytes = p.live.live_bytes();
            live_bytes += bytes as u64;
            if p.live.live_objects() == 0 && c.unused(p) {
                c.empty.push(p.page.clone());
            }
        }
        c.stats.live_bytes = live_bytes;
        if let Some(r) = self.remembered {
            r.freed(&c.empty);
        }
        // SAFETY: marking is complete (after Pause Mark End, as in
        // `Marked::select`); the GC allocator was retired at Pause Mark
        // Start and the mutators' allocator kept only pages it still holds
        // installed, which `unused` passed over; the non-moving space let
        // go of its empty pages.
        unsafe { c.free_empty_pages() };
    }
}
