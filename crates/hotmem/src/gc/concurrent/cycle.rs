//! One concurrent cycle as its phases: Pause Mark Start, Concurrent Mark,
//! Pause Mark End, Concurrent Select Relocation Set, Pause Relocate Start,
//! Concurrent Relocate (see the [module docs](super)).

use super::relocation_set::RelocationSet;
use super::{CollectorMode, ConcurrentState, Phase};
use crate::GcError;
use crate::gc::cycle::{Cycle, CycleRequest, RootedPages};
use crate::gc::driver::DriverContext;
use crate::gc::generations::CollectionKind;
use crate::gc::heap::GcHeap;
use crate::gc::in_collection;
use crate::gc::mark::Marker;
use crate::gc::meta::{ForwardingTables, HeapMap};
use crate::gc::stats::{CollectStats, ConcurrentPhases, GcCause};
use crate::gc::workers::GcWorkers;
use crate::pause_gate::Closed;
use crate::vm::{Binding, ObjectReference, Slot};
use hotmem_os::Address;
use hotmem_safepoint::SafepointGuard;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Puts the barriers back to idle and forgets the logs when a cycle ends,
/// also when it fails half-way.
struct BackToIdle<'a>(&'a ConcurrentState);

impl Drop for BackToIdle<'_> {
    fn drop(&mut self) {
        self.0.set_phase(Phase::Idle);
        self.0.new_pages.stop();
        self.0.satb.clear();
    }
}

/// A pause of a concurrent cycle: the safepoint and the closed pause gate,
/// when it was asked for and when it began.
struct Pause<'s, 'h> {
    guard: SafepointGuard<'s>,
    closed: Closed<'h>,
    began: Instant,
    time_to_safepoint: Duration,
}

impl<'s, 'h> Pause<'s, 'h> {
    /// Begins the pause `name` of collection `cycle` of `heap`: the
    /// mutators stopped, then the gate closed (see `PauseGate`).
    fn begin(
        cx: &DriverContext<'s>,
        heap: &'h GcHeap,
        name: &'static str,
        cycle: u64,
    ) -> Result<Pause<'s, 'h>, GcError> {
        let asked = Instant::now();
        let guard = cx.safepoints.begin(name).map_err(GcError::Safepoint)?;
        let closed = heap.gate.close();
        let began = Instant::now();
        cx.log.safepoints(cx.safepoints);
        cx.log.gc_safepoint(guard.id(), cycle);
        Ok(Pause {
            guard,
            closed,
            began,
            time_to_safepoint: began - asked,
        })
    }

    /// Ends the pause: its duration.
    fn end(self, cx: &DriverContext<'_>) -> Duration {
        let took = self.began.elapsed();
        drop(self.closed);
        self.guard.end();
        cx.log.safepoints(cx.safepoints);
        took
    }
}

/// What one concurrent cycle shares between its phases besides the
/// [`Cycle`]: the runtime's parts, the concurrent state, the phases' times.
struct Concurrent<'a, 's, B: Binding> {
    binding: &'a B,
    heap: &'a GcHeap,
    cx: &'a DriverContext<'s>,
    state: &'a ConcurrentState,
    number: u64,
    /// The longest time to safepoint of the cycle's pauses.
    ttsp: Duration,
    phases: ConcurrentPhases,
}

/// Runs one concurrent cycle of `heap` with `binding` on the calling (the
/// GC) thread, which holds the collection lock (`workers`) and is no
/// mutator. Mutators run between the pauses.
pub(crate) fn collect<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    workers: &mut GcWorkers,
    cx: &DriverContext<'_>,
    number: u64,
    cause: GcCause,
) -> Result<CollectStats, GcError> {
    let state = heap
        .concurrent
        .as_ref()
        .expect("a concurrent cycle runs on a runtime with the concurrent collector");
    let _inside = in_collection::enter(heap);
    let started = Instant::now();
    let stalls_before = state.stalls();
    let mut c = Concurrent {
        binding,
        heap,
        cx,
        state,
        number,
        ttsp: Duration::ZERO,
        phases: ConcurrentPhases::default(),
    };
    let _idle = BackToIdle(state);
    let mut cycle = c.mark(workers, cause)?;
    // While mutators wait for memory, what the pause frees matters more
    // than its length: no budget then.
    let budget = if state.stalls() > stalls_before {
        usize::MAX
    } else {
        ROOT_COPY_BUDGET
    };
    let set = c.select(&mut cycle, budget)?;
    let forwarded = match set {
        Some(set) => c.relocate(&mut cycle, workers, set),
        None => Ok(()),
    };
    let mut stats = cycle.finish(started);
    let p = &mut c.phases;
    p.cycle_ns = started.elapsed().as_nanos() as u64;
    stats.time_to_safepoint_ns = stats.time_to_safepoint_ns.max(c.ttsp.as_nanos() as u64);
    stats.pause_ns = p.mark_start_ns + p.mark_end_ns + p.relocate_start_ns;
    stats.mark_ns = p.concurrent_mark_ns;
    stats.relocation_ns = p.concurrent_relocate_ns;
    stats.concurrent = Some(c.phases);
    forwarded.map(|()| stats)
}

impl<'a, 's, B: Binding> Concurrent<'a, 's, B> {
    /// Begins pause `name`.
    fn pause(&mut self, name: &'static str) -> Result<Pause<'s, 'a>, GcError> {
        let pause = Pause::begin(self.cx, self.heap, name, self.number)?;
        self.ttsp = self.ttsp.max(pause.time_to_safepoint);
        Ok(pause)
    }

    /// Pause Mark Start, Concurrent Mark, Pause Mark End: the cycle, its
    /// pages marked and its references that are not strong processed. The
    /// last cycle's relocation set, whose stale references marking
    /// forwards and heals, is taken out of the barrier at mark end.
    fn mark(&mut self, workers: &mut GcWorkers, cause: GcCause) -> Result<Cycle<'a, B>, GcError> {
        let (heap, state) = (self.heap, self.state);
        let previous = state.installed();
        // Pause Mark Start: the roots, then the barriers keep the snapshot.
        let pause = self.pause("GC Mark Start")?;
        heap.retire_mutator_allocation();
        let request = CycleRequest {
            number: self.number,
            cause,
            kind: CollectionKind::Full,
            time_to_safepoint: pause.time_to_safepoint,
        };
        let mut cycle = Cycle::start(self.binding, heap, workers.count().max(1), request)?;
        cycle.rooted_pages = RootedPages::Budgeted;
        let marker = Marker::new(self.binding, &cycle.map, workers.count().max(1), false)
            .with_new_pages(&state.new_pages)
            .with_remap(previous.as_deref())
            .without_remembered_slots();
        cycle.mark_roots(&marker)?;
        state.new_pages.start();
        state.satb.forget_recent();
        state.set_phase(Phase::Marking);
        self.phases.mark_start_ns = nanos(pause.end(self.cx));
        // Concurrent Mark: the workers trace while the mutators run; the
        // logs of full buffers are traced as they come, in rounds, until a
        // round finds nothing new to mark. Mutators that keep logging (a
        // loop of stores, weak handles read in a loop) cannot hold marking
        // here: after the last round allowed, Pause Mark End takes what
        // is left, as SATB collectors finish.
        let concurrent = Instant::now();
        let pool = workers.count();
        let allowed = || state.concurrent_workers(pool);
        loop {
            marker.trace_concurrently(heap, workers, &allowed)?;
            self.phases.mark_rounds += 1;
            let fresh = mark_logged(&marker, state.satb.take_full());
            if fresh == 0 || self.phases.mark_rounds >= MAX_CONCURRENT_MARK_ROUNDS {
                break;
            }
        }
        self.phases.concurrent_mark_ns = nanos(concurrent.elapsed());
        // Pause Mark End: every log, the rest of the trace, the references
        // that are not strong. Every reachable slot that referred into the
        // last relocation set was healed: the barrier stops forwarding.
        let pause = self.pause("GC Mark End")?;
        mark_logged(&marker, state.satb.take_all());
        marker.trace(heap, workers)?;
        let refs = cycle.process_weak_refs(&marker, workers)?;
        state.set_phase(Phase::Idle);
        state.new_pages.stop();
        let retired = state.uninstall();
        cycle.stats.objects_marked = marker.marked();
        cycle.stats.live_objects = marker.marked();
        cycle.stats.refs = refs;
        drop(marker);
        self.phases.mark_end_ns = nanos(pause.end(self.cx));
        drop((retired, previous));
        Ok(cycle)
    }

    /// Concurrent Select Relocation Set: the pages found empty (the last
    /// relocation set's among them) go back, and stalled allocations
    /// retry; the pages worth evacuating are chosen.
    fn select(
        &mut self,
        cycle: &mut Cycle<'a, B>,
        budget: usize,
    ) -> Result<Option<RelocationSet>, GcError> {
        let select = Instant::now();
        let (set, kept) = cycle.select_concurrently(budget)?;
        self.phases.select_ns = nanos(select.elapsed());
        self.phases.pages_kept_for_roots = kept;
        self.state.memory_freed();
        Ok(set)
    }

    /// Pause Relocate Start, then Concurrent Relocate. A root the binding
    /// could not forward (its hook panicked) is the error returned, after
    /// the relocation, which always completes; it poisons the runtime.
    fn relocate(
        &mut self,
        cycle: &mut Cycle<'a, B>,
        workers: &mut GcWorkers,
        mut set: RelocationSet,
    ) -> Result<(), GcError> {
        let (heap, state) = (self.heap, self.state);
        let pause = self.pause("GC Relocate Start")?;
        set.unpin(&heap.roots.pins.snapshot());
        let set = Arc::new(set);
        state.install(set.clone());
        let forwarded = super::relocate::forward_roots(self.binding, heap, &set);
        self.phases.relocate_start_ns = nanos(pause.end(self.cx));
        let relocating = Instant::now();
        let count = state.concurrent_workers(workers.count());
        let done = super::relocate::relocate(heap, workers, &set, count);
        self.phases.concurrent_relocate_ns = nanos(relocating.elapsed());
        let (by_mutators, by_mutators_bytes) = set.copied_by_mutators();
        let (in_pause, in_pause_bytes) = set.copied_in_pause();
        let stats = &mut cycle.stats;
        stats.objects_relocated = done.objects + by_mutators + in_pause;
        stats.bytes_relocated = done.bytes + by_mutators_bytes + in_pause_bytes;
        stats.relocation = done.summary;
        stats.pages_evacuation_incomplete = set.incomplete_pages();
        self.phases.relocation_set_pages = set.page_count();
        self.phases.relocated_by_mutators = by_mutators;
        // A root or weak reference the binding could not forward still
        // names an old copy, which mutators may read without a barrier.
        heap.poison.on_error(forwarded)
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Rounds of Concurrent Mark at most (see [`ConcurrentPhases::mark_rounds`]).
const MAX_CONCURRENT_MARK_ROUNDS: u32 = 8;

/// Marks what the mutators logged (references they overwrote, objects
/// read from weak references), each once; how many were not marked yet.
/// A logged value that is no reference to an object (a weak handle made
/// of a stale address, say) keeps nothing alive and is passed over: the
/// slot or handle that holds it is reported where it is scanned, if it is.
fn mark_logged<B: Binding>(marker: &Marker<'_, B>, mut logged: Vec<usize>) -> u64 {
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

impl<B: Binding> Cycle<'_, B> {
    /// Concurrent Select Relocation Set: counts the live bytes of every
    /// mapped page, frees the pages where marking found nothing and, for a
    /// binding whose slots heal atomically ([`Slot::COMPARE_EXCHANGE`]),
    /// chooses the pages to evacuate as the stop-the-world collector does.
    /// The set takes the cycle's map (its live maps locate the objects to
    /// copy); `None` when nothing is worth moving.
    /// Also returns how many pages left the set for the pause's budget
    /// (see [`Cycle::bound_root_copies`]).
    fn select_concurrently(
        &mut self,
        budget: usize,
    ) -> Result<(Option<RelocationSet>, usize), GcError> {
        let moving = self.heap.concurrent.as_ref().map(|c| c.mode);
        if moving != Some(CollectorMode::Concurrent) || !B::Slot::COMPARE_EXCHANGE {
            self.free_unmarked_pages();
            return Ok((None, 0));
        }
        self.select_relocation_set();
        self.free_empty_pages();
        let kept = self.bound_root_copies(budget);
        if !self.forwarding.any() {
            return Ok((None, kept));
        }
        self.check_relocation_set()?;
        let map = std::mem::replace(&mut self.map, HeapMap::empty(&self.heap.memory));
        let forwarding = std::mem::replace(&mut self.forwarding, ForwardingTables::empty());
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
        let rooted = std::mem::take(&mut *self.rooted.lock());
        let mut bytes = vec![0usize; self.map.pages.len()];
        for r in rooted {
            let Ok((pi, wi)) = self.map.locate(r) else {
                continue;
            };
            if self.forwarding.get(pi).is_none() {
                continue;
            }
            if let Some(last) = self.map.pages[pi].live.end_of(wi) {
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
                self.forwarding.remove(pi);
                removed += 1;
            }
        }
        removed
    }

    /// Counts the live bytes of every mapped page and frees the pages where
    /// marking found nothing (a binding whose slots cannot be healed
    /// atomically: nothing moves, a page is reclaimed once empty).
    fn free_unmarked_pages(&mut self) {
        let mut live_bytes = 0u64;
        for p in &self.map.pages {
            let bytes = p.live.live_bytes();
            live_bytes += bytes as u64;
            if p.live.live_objects() == 0 {
                self.empty.push(p.page.clone());
            }
        }
        self.stats.live_bytes = live_bytes;
        self.free_empty_pages();
    }
}
