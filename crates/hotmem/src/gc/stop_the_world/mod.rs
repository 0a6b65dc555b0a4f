//! The stop-the-world collector: every collection stops the mutators for
//! all of its work, over the shared [`core`](crate::gc::core); with
//! [`Generations::YoungAndOld`] most collections are young, fed by the
//! store barrier's remembered set ([`barriers`](crate::gc::barriers)).
//!
//! - this file: the collector, its constraints, and its driver (the
//!   collection lock, the pause, the record);
//! - [`stw_cycle`]: one collection as its phases;
//! - [`relocate`]: copying the relocation set in the pause;
//! - [`update`]: every reference to a moved object updated in the pause;
//! - the core's [`generational_policy`](crate::gc::core::generational_policy):
//!   young or full.

mod relocate;
mod stw_cycle;
mod update;

use crate::GcError;
use crate::gc::barriers::RememberedSet;
use crate::gc::core::collection::CollectionRequest;
use crate::gc::core::collector::{Collector, Constraints, Moves, NeededBarriers};
use crate::gc::core::driver::{DriverContext, GcRequest};
use crate::gc::core::generational_policy::GenerationalPolicy;
use crate::gc::core::generations::{CollectionKind, Generations};
use crate::gc::core::heap::GcHeap;
use crate::gc::core::in_collection;
use crate::gc::core::mem_balancer::Cost;
use crate::gc::core::pause::Pause;
use crate::gc::core::phases::GcPhase;
use crate::gc::core::stats::CollectStats;
use crate::gc::core::workers::GcWorkers;
use crate::vm::Binding;
use hotmem_safepoint::SafeRegion;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use stw_cycle::StwCycle;

/// What the stop-the-world collector asks and does, with `generations`.
pub(crate) fn constraints(generations: Generations) -> Constraints {
    Constraints {
        barriers: NeededBarriers {
            remembered_set: generations == Generations::YoungAndOld,
            snapshot: false,
            load: false,
        },
        moves: Moves::InPauses,
        generational: true,
        concurrent: false,
    }
}

/// Young and old objects: the store barrier's remembered set, and the
/// choice between young and full collections.
struct Generational {
    remembered: Arc<RememberedSet>,
    policy: GenerationalPolicy,
}

/// The stop-the-world collector for binding `B`.
pub(crate) struct StopTheWorld<B: Binding> {
    binding: Arc<B>,
    /// With generations: the remembered set the mutators' store barriers
    /// feed, and the policy.
    generations: Option<Generational>,
}

impl<B: Binding> StopTheWorld<B> {
    /// The collector, generational when given the store barrier's
    /// `remembered` set.
    pub(crate) fn new(binding: Arc<B>, remembered: Option<Arc<RememberedSet>>) -> Self {
        StopTheWorld {
            binding,
            generations: remembered.map(|remembered| Generational {
                remembered,
                policy: GenerationalPolicy::default(),
            }),
        }
    }

    /// Without generations every collection is full; with them, the
    /// caller's choice or the policy's (full while slots are lost).
    fn next_kind(&self, wanted: Option<CollectionKind>) -> CollectionKind {
        self.generations
            .as_ref()
            .map_or(CollectionKind::Full, |g| g.policy.next_kind(wanted))
    }

    /// Runs the collection in the pause, then tells the sizing policy (the
    /// mutators' next budget) and the generational state how it went.
    fn collect_in_pause(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        request: CollectionRequest,
    ) -> Result<CollectStats, GcError> {
        let result = {
            let _inside = in_collection::enter(heap);
            heap.retire_mutator_allocation();
            let remembered = self.generations.as_ref().map(|g| &*g.remembered);
            StwCycle::run(&*self.binding, heap, workers, request, remembered)
        };
        match &result {
            Ok(stats) => {
                let generational = self.generations.is_some();
                let next = heap.sizing.collected_at(
                    stats.kind,
                    stats.used_after,
                    generational,
                    Cost::paused(stats.pause_ns),
                    heap.mutator_alloc.source().take_allocated(),
                    Instant::now(),
                );
                heap.mutator_alloc.source().set(next.budget);
                if let Some(g) = &self.generations {
                    g.remembered.all_old(&heap.pages.pages());
                    g.policy
                        .collected(stats.kind, heap.pages.used_bytes(), next.full_at);
                }
            }
            // The remembered slots were taken; young pages may be left.
            Err(_) => {
                if let Some(g) = &self.generations {
                    g.policy.failed();
                }
            }
        }
        result
    }
}

impl<B: Binding> Collector for StopTheWorld<B> {
    /// Takes the collection lock, stops the mutators, runs the collection
    /// (young or full, as asked or as the policy says), records and logs
    /// it, and lets the mutators go.
    fn run(
        &self,
        heap: &GcHeap,
        cx: &DriverContext<'_>,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        if in_collection::inside(heap) {
            return Err(GcError::InsideCollection);
        }
        heap.poison.check()?;
        let mut workers = heap.workers.lock();
        heap.poison.check()?;
        if let Some(seen) = request.seen_epoch {
            if heap.epoch.load(Ordering::Acquire) != seen {
                return Ok(None);
            }
        }
        // Every phase of a stop-the-world collection runs in its one pause.
        let mut pause = Pause::begin(cx, heap, GcPhase::Mark.safepoint(), region)?;
        let collection = CollectionRequest {
            number: heap.next_collection_number(),
            cause: request.cause,
            kind: self.next_kind(request.kind),
            time_to_safepoint: pause.time_to_safepoint(),
        };
        let result = self.collect_in_pause(heap, &mut workers, collection);
        pause.open_gate();
        match &result {
            Ok(stats) => heap.record(cx, stats, Some(pause.safepoint_id())),
            Err(e) => cx
                .log
                .collection_failed(collection.kind, collection.cause, e),
        }
        pause.end(cx);
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
