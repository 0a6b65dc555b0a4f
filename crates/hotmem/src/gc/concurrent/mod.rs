//! The concurrent collector: marking and relocation while the mutators
//! run, over the shared [`core`](crate::gc::core), with the snapshot and
//! load barriers of [`barriers`](crate::gc::barriers).
//!
//! A concurrent cycle (run by the runtime's GC thread) is:
//! 1. **Pause Mark Start**: the mutators' allocation is retired, the heap's
//!    pages are mapped, the roots are marked, and the mutators' barriers
//!    start keeping the snapshot
//!    ([`BarrierPhase::Marking`](crate::gc::barriers::BarrierPhase));
//! 2. **Concurrent Mark**: the GC workers trace the graph while the
//!    mutators run. A mutator that overwrites a reference first logs the
//!    value it overwrites (snapshot at the beginning, SATB: see
//!    [`satb`](crate::gc::barriers::satb)), so that everything reachable
//!    at mark start is marked. Objects allocated meanwhile are live: they
//!    lie in pages allocated after the map was made, or above the top at
//!    mark start of a page kept across it, which marking does not examine
//!    ([`NewPages`](crate::gc::core::meta::NewPages));
//! 3. **Pause Mark End**: every mutator's log is drained and traced, then
//!    the references that are not strong are processed (weak handles,
//!    ephemerons, finalizers, the binding's hook);
//! 4. **Concurrent Select Relocation Set**: the pages where marking found
//!    nothing go back (the last cycle's relocation set among them), and the
//!    pages worth evacuating are chosen as the stop-the-world collector
//!    chooses them ([`select`](crate::gc::core::select)), into a
//!    [`RelocationSet`](crate::gc::core::relocation_set::RelocationSet);
//! 5. **Pause Relocate Start**: the barrier starts forwarding references
//!    into those pages, and every root into them is forwarded (the object
//!    relocated now if needed);
//! 6. **Concurrent Relocate**: the GC workers copy the rest while the
//!    mutators run, and forward the root tables' entries (one job per
//!    table, beside the pages: the objects they name are relocated by
//!    whoever reaches them first). A mutator that loads a reference into the set gets the
//!    new copy, relocating the object itself if no worker has, and heals
//!    the slot with a compare-and-swap (the load barrier).
//!
//! The other stale references are healed lazily, by the next cycle's
//! marking (as ZGC remaps), which visits every reachable slot anyway; a
//! concurrent update phase (Shenandoah's) would visit them all once more
//! per cycle. With [`CollectorMode::ConcurrentNonMoving`] steps 5 and 6 do
//! not run and a page is reclaimed once empty; with one generation, step 1
//! takes the mutators' buffers but leaves them the pages they allocate in,
//! where what they allocate above the tops at mark start is new (a page
//! retired at every cycle kept a page in use for each cycle's survivors).
//!
//! With [`Generations::YoungAndOld`] the collector also runs young cycles
//! (the [`GenerationalPolicy`] chooses, as for the stop-the-world
//! collector). Pause Mark Start takes the slots the generational store
//! barrier remembered; marking follows only young objects, from the roots
//! and those slots (healing them); the young pages found empty are freed,
//! the mostly-dead ones evacuated to old pages (the copies are old), and
//! the rest aged where they are, in Pause Relocate Start, and promoted
//! once they survived `young_promotion::TENURING_THRESHOLD` young cycles
//! (one, when the cycle found at least half of the young bytes live).
//! After the relocation the promoted survivors' slots that refer into
//! young pages are remembered, with the slots the cycle marked from
//! ([`young_promotion`]): the next cycle's marking heals every reference
//! into the young relocation set left in an old object, so that set leaves
//! the load barrier at the next Pause Mark End. A full cycle's set stays
//! until the next full cycle's (old objects keep stale references into it
//! that only a full marking visits): the load barrier holds both
//! ([`Installed`](crate::gc::barriers::Installed)), as generational ZGC
//! keeps a forwarding per generation, and a third for the young cycles
//! that run inside a full cycle's marking. A full cycle makes every page old at
//! Pause Mark Start and remembers its copies' slots after its relocation. A
//! young cycle that does not move (`ConcurrentNonMoving`) makes every page
//! old at Pause Mark Start instead. Young cycles may also run inside a full
//! cycle's marking, which stops meanwhile ([`YoungInFull`], off by
//! default; [`young_in_full`] says why the full marking stays correct).
//!
//! Each generation is paced by its own figures: a young cycle starts from
//! what the mutators allocated during the last young cycle, a full one
//! from what they allocated during the last full cycle
//! ([`pacing`](crate::gc::core::pacing)); a full cycle comes when the old
//! generation (what a cycle leaves in use, less the pages the mutators
//! took while it ran) and a full cycle's allocation would reach the
//! sizing policy's target, or when a cycle ended with less room than a
//! stalled allocation needs. A stall alone does not make the next cycle
//! full: with more mutators than CPUs, young cycles that made room stall
//! too (other mutators took the room first).
//!
//! The cycle is [`concurrent_cycle`], relocation (steps 5 and 6)
//! [`concurrent_relocate`], and the state the collector shares with the
//! mutators that wait for it [`stalls`]; this file holds the collector and
//! its constraints.

mod concurrent_cycle;
mod concurrent_relocate;
#[cfg(all(test, hotmem_loom))]
mod loom_models;
mod stalls;
mod young_in_full;
mod young_promotion;

pub(crate) use stalls::ConcurrentState;
pub use young_in_full::YoungInFull;

use crate::GcError;
use crate::gc::barriers::{ConcurrentBarriers, RememberedSet, SetOwner};
use crate::gc::core::collector::{Collector, Constraints, Moves, NeededBarriers};
use crate::gc::core::collector_mode::CollectorMode;
use crate::gc::core::cpu_time::{cpus, thread_cpu_ns};
use crate::gc::core::driver::{DriverContext, GcRequest};
use crate::gc::core::generational_policy::{CycleLeft, GenerationalPolicy};
use crate::gc::core::generations::{CollectionKind, Generations};
use crate::gc::core::heap::GcHeap;
use crate::gc::core::mem_balancer::Cost;
use crate::gc::core::phases::PhaseTimes;
use crate::gc::core::root_tables::RootTableVisit;
use crate::gc::core::stats::{CollectStats, ConcurrentPhases, GcCause};
use crate::gc::core::workers::GcWorkers;
use crate::vm::{Binding, Slot};
use concurrent_cycle::ConcurrentCycle;
use hotmem_safepoint::SafeRegion;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use young_in_full::YoungRunner;

/// What the concurrent collector in `mode` asks and does, with
/// `generations` (young and old cycles feed on the generational store
/// barrier's remembered set).
pub(crate) fn constraints(mode: CollectorMode, generations: Generations) -> Constraints {
    let moving = mode == CollectorMode::Concurrent;
    Constraints {
        barriers: NeededBarriers {
            remembered_set: generations == Generations::YoungAndOld,
            snapshot: true,
            load: moving,
        },
        moves: if moving {
            Moves::WhileMutatorsRun
        } else {
            Moves::Never
        },
        generational: true,
        concurrent: true,
    }
}

/// Why the concurrent collector in `mode` cannot run with a binding whose
/// slots compare-and-swap atomically or not (`heals_atomically`).
pub(crate) fn check(mode: CollectorMode, heals_atomically: bool) -> Result<(), String> {
    let c = constraints(mode, Generations::Single);
    if c.moves == Moves::WhileMutatorsRun && !heals_atomically {
        return Err(
            "the concurrent collector moves objects and heals slots with a compare-and-swap: \
             the binding's Slot must implement compare_exchange (Slot::COMPARE_EXCHANGE), \
             or use CollectorMode::ConcurrentNonMoving or CollectorMode::StopTheWorld"
                .into(),
        );
    }
    Ok(())
}

/// Young and old cycles: the store barrier's remembered set, and the
/// choice between young and full cycles.
struct Generational {
    remembered: Arc<RememberedSet>,
    policy: GenerationalPolicy,
    /// When young cycles run inside a full cycle's marking.
    young_in_full: YoungInFull,
    /// A young cycle ran as one (the binding rebuilds remembered slots):
    /// until then none runs inside a full cycle.
    young_works: AtomicBool,
}

/// The readings a cycle's record starts from.
struct Bookkeeping {
    cpu_ns: (u64, u64),
    allocated: u64,
    taken: u64,
}

impl Bookkeeping {
    fn before(heap: &GcHeap, workers: &GcWorkers) -> Bookkeeping {
        Bookkeeping {
            cpu_ns: (workers.cpu_ns(), thread_cpu_ns()),
            allocated: heap.pages.counters().page_bytes_allocated,
            taken: heap.mutator_alloc.source().taken(),
        }
    }
}

/// The concurrent collector for binding `B`.
pub(crate) struct ConcurrentCollector<B: Binding> {
    binding: Arc<B>,
    mode: CollectorMode,
    tables: RootTableVisit,
    barriers: Arc<ConcurrentBarriers>,
    state: Arc<ConcurrentState>,
    /// With generations: the remembered set and the young-or-full policy.
    generations: Option<Generational>,
}

impl<B: Binding> ConcurrentCollector<B> {
    /// The collector in `mode` (moving or not), visiting the root tables
    /// where `tables` says, with the barriers its mutators run and the
    /// state its waiting mutators read; generational when given the store
    /// barrier's `remembered` set, running young cycles inside full ones
    /// when `young_in_full` says.
    pub(crate) fn new(
        binding: Arc<B>,
        mode: CollectorMode,
        tables: RootTableVisit,
        barriers: Arc<ConcurrentBarriers>,
        state: Arc<ConcurrentState>,
        remembered: Option<Arc<RememberedSet>>,
        young_in_full: YoungInFull,
    ) -> Self {
        ConcurrentCollector {
            binding,
            mode,
            tables,
            barriers,
            state,
            generations: remembered.map(|remembered| Generational {
                remembered,
                policy: GenerationalPolicy::default(),
                young_in_full,
                young_works: AtomicBool::new(false),
            }),
        }
    }

    /// Whether cycles move objects: in the moving mode, with a binding
    /// whose slots heal atomically.
    fn moves(&self) -> bool {
        constraints(self.mode, Generations::Single).moves == Moves::WhileMutatorsRun
            && B::Slot::COMPARE_EXCHANGE
    }
}

impl<B: Binding> ConcurrentCollector<B> {
    /// A cycle of `kind` numbered `number` with this collector's parts,
    /// moving as it does; it runs no young cycle inside and is none.
    fn cycle<'a, 's>(
        &'a self,
        heap: &'a GcHeap,
        cx: &'a DriverContext<'s>,
        kind: CollectionKind,
        number: u64,
    ) -> ConcurrentCycle<'a, 's, B> {
        ConcurrentCycle {
            binding: &*self.binding,
            kind,
            remembered: self.generations.as_ref().map(|g| &*g.remembered),
            heap,
            cx,
            barriers: &self.barriers,
            state: &self.state,
            moves: self.moves(),
            tables: self.tables,
            number,
            ttsp: Duration::ZERO,
            phases: ConcurrentPhases::default(),
            times: PhaseTimes::new(self.mode),
            young_inside: None,
            full_log: None,
        }
    }

    /// After a cycle (also one run inside a full cycle's marking): records
    /// it and gives the mutators their next budget, or logs its failure;
    /// then stalled allocations retry.
    fn after_cycle(
        &self,
        heap: &GcHeap,
        cx: &DriverContext<'_>,
        workers: &GcWorkers,
        before: Bookkeeping,
        (kind, cause): (CollectionKind, GcCause),
        result: &Result<CollectStats, GcError>,
    ) {
        match result {
            Err(e) => {
                // The remembered slots were taken: only full cycles until
                // one succeeds.
                if let Some(g) = &self.generations {
                    g.policy.failed();
                }
                cx.log.collection_failed(kind, cause, e)
            }
            Ok(stats) => {
                let allocated = heap.pages.counters().page_bytes_allocated - before.allocated;
                let young = heap.mutator_alloc.source().taken() - before.taken;
                // What a concurrent cycle costs the mutators is its whole
                // length (its workers take CPUs), not only its pauses; but
                // they stop only for its pauses, and allocate through the
                // rest.
                let cpu_ns = (workers.cpu_ns() - before.cpu_ns.0)
                    + thread_cpu_ns().saturating_sub(before.cpu_ns.1);
                let cost = Cost {
                    length_ns: stats.concurrent.map_or(stats.pause_ns, |c| c.cycle_ns),
                    stopped_ns: stats.pause_ns,
                    // The GC thread's CPU time in the pauses is counted
                    // twice: at most the pauses' length more.
                    machine_ns: stats.pause_ns + cpu_ns / cpus() as u64,
                };
                let next = heap.sizing.collected_at(
                    stats.kind,
                    stats.used_after,
                    self.generations.is_some(),
                    cost,
                    heap.mutator_alloc.source().take_allocated(),
                    Instant::now(),
                );
                heap.mutator_alloc.source().set(next.budget);
                let next_kind = self.generations.as_ref().map(|g| {
                    if stats.kind == CollectionKind::Young {
                        g.young_works.store(true, Ordering::Relaxed);
                    }
                    // The pages the mutators took while the cycle ran are
                    // young: what is left besides them is the old
                    // generation. A full cycle comes once the old
                    // generation, and what a full cycle takes while it
                    // runs, reach the target: the old generation's growth
                    // paces full cycles (a stall does not: a young cycle
                    // that did not make room for a stalled allocation asks
                    // for a full one, see `Mutator::alloc_stalled`).
                    let used = heap.pages.used_bytes();
                    let old = used.saturating_sub(usize::try_from(young).unwrap_or(usize::MAX));
                    let full_takes = heap
                        .sizing
                        .taken_during(CollectionKind::Full)
                        .unwrap_or(allocated);
                    let full_takes = usize::try_from(full_takes).unwrap_or(usize::MAX);
                    let needs = old.saturating_add(full_takes);
                    g.policy.collected(stats.kind, needs, next.full_at);
                    // And one young cycle sooner when a full cycle would
                    // have too little room by then.
                    g.policy.look_ahead(
                        stats.kind,
                        CycleLeft {
                            old,
                            target: next.full_at,
                            full_takes,
                        },
                    );
                    g.policy.next_kind(None)
                });
                heap.sizing
                    .concurrent_cycle(stats.kind, allocated, next.budget, next_kind);
                heap.record(cx, stats, None);
            }
        }
        // However the cycle ended, stalled allocations retry now, with the
        // budget it gave (and wait for the next one if there is still no
        // room). The room is the mutators': the relocation reserve is not
        // theirs to take.
        (self.state).cycle_ended(heap.mutator_alloc.source().room());
        self.state.memory_freed();
    }
}
impl<B: Binding> Collector for ConcurrentCollector<B> {
    /// Runs one concurrent cycle on the calling thread, the runtime's GC
    /// thread, while the mutators run between its pauses; then records it
    /// and gives the mutators their next budget.
    fn run(
        &self,
        heap: &GcHeap,
        cx: &DriverContext<'_>,
        request: GcRequest,
        _region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        let mut workers = heap.workers.lock();
        let before = Bookkeeping::before(heap, &workers);
        let number = heap.next_collection_number();
        let kind = self
            .generations
            .as_ref()
            .map_or(CollectionKind::Full, |g| g.policy.next_kind(request.kind));
        self.state.cycle_started(kind);
        let runner = self.generations.as_ref().and_then(|g| {
            // The young sets installed by the last full cycle's young
            // cycles leave at the first young cycle after it: until then,
            // this full cycle's could not be installed.
            let free = (self.barriers.installed())
                .of(SetOwner::YoungInFull)
                .is_none();
            let ready = free && g.young_works.load(Ordering::Relaxed);
            (kind == CollectionKind::Full && ready && g.young_in_full != YoungInFull::Never).then(
                || YoungRunner {
                    collector: self,
                    heap,
                    cx,
                    when: g.young_in_full,
                    next_number: AtomicU64::new(number + 1),
                },
            )
        });
        let cycle = ConcurrentCycle {
            young_inside: runner.as_ref(),
            ..self.cycle(heap, cx, kind, number)
        };
        let result = heap
            .poison
            .check()
            .and_then(|()| cycle.run(&mut workers, request.cause));
        let what = (kind, request.cause);
        self.after_cycle(heap, cx, &workers, before, what, &result);
        result.map(Some)
    }

    fn room_not_made(&self) {
        if let Some(g) = &self.generations {
            g.policy.ask_full();
        }
    }

    fn binding(&self) -> &(dyn Any + Send + Sync) {
        &*self.binding
    }
}
