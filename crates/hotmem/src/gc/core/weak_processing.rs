//! The weak-processing phase of every collector: what happens to the
//! references that are not strong, after the strong closure and before
//! relocation (HotSpot's "Reference Processing", ZGC's "Concurrent Process
//! Non-Strong References", MMTk's `process_weak_refs`).
//!
//! The references are the binding's (its hooks
//! [`Binding::process_weak_refs`] and
//! [`Binding::forward_weak_refs`],
//! which receive the views of [`vm::weak`](crate::vm)) and the runtime's
//! own (weak handles, ephemerons, finalizers: [`weak`](crate::weak)).
//!
//! In order, each step tracing what it retained before the next:
//! 1. **ephemerons and the binding's hook, to a fixpoint**: every runtime
//!    [`Ephemeron`](crate::Ephemeron) whose key is live retains its value,
//!    until no pass retains more; then the binding's
//!    [`process_weak_refs`](crate::Binding::process_weak_refs) runs; both
//!    repeat while the hook retains anything or asks for another pass. A
//!    concurrent cycle's marking has retained the values of the pairs
//!    whose key it reached already
//!    ([`ephemeron_marking`](super::ephemeron_marking)): the passes start
//!    from the others;
//! 2. **weak handles** whose object is dead are cleared (before
//!    finalization, as Java clears its weak references). A concurrent
//!    cycle leaves this to after its pause ([`HandleClearing::AfterPause`])
//!    when finalization will keep nothing alive: the verdict is then the
//!    same, and Pause Mark End does not grow with the weak handles;
//! 3. **finalization**: each registered object that is dead is retained,
//!    with what it reaches, and queued for the embedder; the ephemerons run
//!    to their fixpoint again (a resurrected object may be a key). A
//!    concurrent cycle looks only at the registered objects its marking
//!    had not reached ([`FinalizerStart::Candidates`]);
//! 4. **ephemerons** whose key is dead are cleared (only the pairs still
//!    waiting are looked at); a concurrent cycle clears them after its
//!    pause ([`EphemeronClearing::AfterPause`]), reads judging their pair
//!    by the same verdict meanwhile.
//!
//! After relocation the runtime's tables follow the objects that moved, and
//! the binding's [`forward_weak_refs`](crate::Binding::forward_weak_refs)
//! updates its own. Each step costs in proportion to its references, not
//! to the heap.

use super::binding_panic::call_model;
use super::collection::Collection;
use super::ephemeron_marking::{EphemeronStart, Waiting};
use super::generations::CollectionKind;
use super::heap::GcHeap;
use super::mark::{MarkPolicy, Marker};
use super::root_tables::RootTableVisit;
use super::stats::{RefStats, StrengthCounts};
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::{
    Binding, Forwarder, ObjectReference, WeakForwarding, WeakPass, WeakRefs, WeakTracer,
};
use crate::weak::FinalizerStart;
use std::time::Instant;

/// When a collection clears the weak handles whose object died.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum HandleClearing {
    /// In the pause, before finalization.
    InPause,
    /// After the pause, by the same verdict (the caller sweeps them: see
    /// [`Sweeps`](crate::weak::Sweeps)). Asked for by a concurrent cycle,
    /// granted when finalization keeps nothing alive in it.
    AfterPause,
}

/// When a collection clears the ephemerons whose key died.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum EphemeronClearing {
    /// In the pause, last.
    InPause,
    /// After the pause, by the same verdict: the pairs are handed to the
    /// caller ([`WeakProcessed::ephemerons_to_clear`]), which clears them
    /// with the other tables' sweeps (see
    /// [`Sweeps`](crate::weak::Sweeps)). A concurrent cycle's.
    AfterPause,
}

/// What weak processing did, and left for after the pause.
pub(crate) struct WeakProcessed {
    pub(crate) stats: RefStats,
    /// When the weak handles are cleared (the caller's `RefStats::weak`
    /// is to be filled after the pause if not in it).
    pub(crate) handles: HandleClearing,
    /// With [`EphemeronClearing::AfterPause`]: the pairs whose key is dead
    /// (and others the clearing judges again), to clear after the pause;
    /// `stats.ephemeron.cleared` is to be filled then.
    pub(crate) ephemerons_to_clear: Vec<usize>,
}

/// Calls of the binding's hook after which a collection gives up: a hook
/// that asks for another pass forever (a binding bug) must not hang the
/// collection.
const MAX_BINDING_PASSES: u32 = 10_000;

/// The marker as the binding's hook and the runtime's tables see it.
struct Tracer<'m, 'a, B: Binding, P: MarkPolicy> {
    marker: &'m Marker<'a, B, P>,
    /// Objects this tracer marked, not yet traced.
    pending: u64,
    /// Objects it marked in all.
    retained: u64,
    /// The first invalid reference retained.
    error: Option<GcError>,
}

impl<B: Binding, P: MarkPolicy> WeakTracer for Tracer<'_, '_, B, P> {
    fn is_live(&self, obj: ObjectReference) -> bool {
        self.marker.is_live(obj)
    }

    fn retain(&mut self, obj: ObjectReference) -> bool {
        match self.marker.mark_root(obj, None) {
            Ok(true) => {
                self.pending += 1;
                self.retained += 1;
                true
            }
            Ok(false) => false,
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }

    fn kind(&self) -> CollectionKind {
        if self.marker.young_only() {
            CollectionKind::Young
        } else {
            CollectionKind::Full
        }
    }
}

impl<B: Binding, P: MarkPolicy> Tracer<'_, '_, B, P> {
    /// Traces what was retained since the last call, on the workers.
    fn trace(&mut self, cycle: &Collection<'_, B>, workers: &mut GcWorkers) -> Result<(), GcError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.pending > 0 {
            self.pending = 0;
            self.marker.trace(cycle.heap, workers)?;
        }
        Ok(())
    }
}

impl<B: Binding> Collection<'_, B> {
    /// Processes weak handles, ephemerons, finalizers and the binding's
    /// weak references (see the module docs), after the strong closure.
    /// `handles` says when the caller would clear the weak handles; the
    /// answer says when they are (after the pause: left to the caller,
    /// whose `RefStats::weak` is to be filled then). `ephemerons`: the
    /// pairs to look at (all, or those a concurrent marking left waiting);
    /// `clearing`, when those whose key died are cleared; `finalizers`,
    /// the registered objects to look at (all, or those a concurrent
    /// marking had not reached).
    pub(crate) fn process_weak_refs<P: MarkPolicy>(
        &self,
        marker: &Marker<'_, B, P>,
        workers: &mut GcWorkers,
        handles: HandleClearing,
        ephemerons: EphemeronStart,
        clearing: EphemeronClearing,
        finalizers: FinalizerStart,
    ) -> Result<WeakProcessed, GcError> {
        let start = Instant::now();
        let mut stats = RefStats::default();
        let mut waiting = match ephemerons {
            EphemeronStart::All => self.heap.weak.ephemerons.with_pairs(|pairs| {
                let live: Vec<usize> = (0..pairs.len()).filter(|&i| pairs[i].is_some()).collect();
                stats.ephemeron.found = live.len() as u64;
                Waiting::all(live)
            }),
            EphemeronStart::Scanned(scan) => {
                stats.ephemeron = scan.counts;
                scan.waiting
            }
        };
        let mut tracer = Tracer {
            marker,
            pending: 0,
            retained: 0,
            error: None,
        };
        self.binding_fixpoint(&mut waiting, &mut tracer, workers, &mut stats)?;
        let finalizing = || {
            self.heap.weak.finalizers.any_to_queue(
                &finalizers,
                |r| marker.is_live(r),
                |r| marker.is_object(r),
            )
        };
        let handles = match handles {
            HandleClearing::AfterPause if !finalizing() => HandleClearing::AfterPause,
            _ => {
                stats.weak = self.clear_weak_handles(marker);
                HandleClearing::InPause
            }
        };
        let marked_before = marker.marked();
        let (found, queued) = self.heap.weak.finalizers.queue_dead(
            &finalizers,
            |r| marker.is_live(r),
            |r| marker.is_object(r),
            |r| {
                tracer.retain(r);
            },
        );
        tracer.trace(self, workers)?;
        stats.finalizable = StrengthCounts {
            found,
            cleared: 0,
            retained: marker.marked() - marked_before,
            enqueued: queued,
        };
        self.ephemeron_fixpoint(&mut waiting, &mut tracer, workers, &mut stats.ephemeron)?;
        let ephemerons_to_clear = match clearing {
            EphemeronClearing::InPause => {
                stats.ephemeron.cleared = self.clear_dead_ephemerons(marker, &waiting.pairs);
                Vec::new()
            }
            EphemeronClearing::AfterPause => waiting.pairs,
        };
        stats.ns = start.elapsed().as_nanos() as u64;
        Ok(WeakProcessed {
            stats,
            handles,
            ephemerons_to_clear,
        })
    }

    /// Step 1: the runtime's ephemerons to their fixpoint, then the
    /// binding's hook, while the hook retains or asks for more.
    fn binding_fixpoint<P: MarkPolicy>(
        &self,
        waiting: &mut Waiting,
        tracer: &mut Tracer<'_, '_, B, P>,
        workers: &mut GcWorkers,
        stats: &mut RefStats,
    ) -> Result<(), GcError> {
        loop {
            self.ephemeron_fixpoint(waiting, tracer, workers, &mut stats.ephemeron)?;
            let before = tracer.retained;
            let pass = stats.binding_passes;
            let answer = call_model(|| {
                self.binding
                    .process_weak_refs(&mut WeakRefs::new(&mut *tracer, pass))
            })?;
            stats.binding_passes += 1;
            let retained = tracer.retained - before;
            stats.binding_retained += retained;
            tracer.trace(self, workers)?;
            if retained == 0 && answer == WeakPass::Done {
                return Ok(());
            }
            if stats.binding_passes >= MAX_BINDING_PASSES {
                return Err(GcError::WeakRefsDidNotConverge {
                    passes: stats.binding_passes,
                });
            }
        }
    }

    /// Retains the value of every ephemeron of `waiting` whose key is
    /// live, tracing after each pass, until a pass retains nothing. Each
    /// pass looks only at the pairs whose key was not live in the pass
    /// before; `waiting` is left with the pairs whose key is dead.
    fn ephemeron_fixpoint<P: MarkPolicy>(
        &self,
        waiting: &mut Waiting,
        tracer: &mut Tracer<'_, '_, B, P>,
        workers: &mut GcWorkers,
        counts: &mut StrengthCounts,
    ) -> Result<(), GcError> {
        let table = &self.heap.weak.ephemerons;
        loop {
            if waiting.settled(tracer.marker) {
                return Ok(());
            }
            let before = tracer.retained;
            table.with_pairs(|pairs| {
                waiting
                    .pairs
                    .retain(|&i| match pairs.get(i).copied().flatten() {
                        Some((key, value)) if tracer.is_live(key) => {
                            tracer.retain(value);
                            false
                        }
                        Some(_) => true,
                        None => false,
                    })
            });
            let retained = tracer.retained - before;
            counts.retained += retained;
            tracer.trace(self, workers)?;
            if retained == 0 {
                waiting.settled_at = Some(tracer.marker.marked());
                return Ok(());
            }
        }
    }

    /// A stop-the-world collection's weak sets, in its pause after the
    /// rest of the processing: every entry whose object is dead cleared
    /// (an object a finalizer keeps stays, as in a concurrent cycle's
    /// sweep, which follows the whole processing).
    pub(crate) fn sweep_weak_sets<P: MarkPolicy>(
        &self,
        marker: &Marker<'_, B, P>,
    ) -> StrengthCounts {
        let mut counts = StrengthCounts::default();
        for set in self.heap.weak.sets.live() {
            let (found, cleared) = set.sweep_in_pause(&|r| marker.is_live(r));
            counts.found += found;
            counts.cleared += cleared;
        }
        counts
    }

    /// Step 2: clears the weak handles whose object is dead.
    fn clear_weak_handles<P: MarkPolicy>(&self, marker: &Marker<'_, B, P>) -> StrengthCounts {
        let mut counts = StrengthCounts::default();
        self.heap.weak.handles.update(|r| {
            counts.found += 1;
            if marker.is_live(r) {
                Some(r)
            } else {
                counts.cleared += 1;
                None
            }
        });
        counts
    }

    /// Step 4: clears the ephemerons of `waiting` (every other pair's key
    /// is live) whose key is dead; how many.
    fn clear_dead_ephemerons<P: MarkPolicy>(
        &self,
        marker: &Marker<'_, B, P>,
        waiting: &[usize],
    ) -> u64 {
        self.heap.weak.ephemerons.with_pairs(|pairs| {
            let mut cleared = 0;
            for &i in waiting {
                let Some(pair) = pairs.get_mut(i) else {
                    continue;
                };
                if pair.is_some_and(|(key, _)| !marker.is_live(key)) {
                    *pair = None;
                    cleared += 1;
                }
            }
            cleared
        })
    }
}

/// The runtime's weak handles, weak sets, ephemerons and registered
/// finalizers of `heap` (unless `handles` leaves them for after the
/// pause, with the root tables: [`root_tables`](super::root_tables), and
/// [`Finalizers::begin_forwarding`](crate::weak::Finalizers::begin_forwarding))
/// follow their objects to where `forwarder` says they are, and the binding forwards its own weak
/// references (the mutators are stopped). The runtime's tables are
/// forwarded whatever the binding's hook does; its panic is the error
/// returned.
pub(crate) fn forward_weak_refs<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    forwarder: &dyn Forwarder,
    handles: RootTableVisit,
) -> Result<(), GcError> {
    let weak = &heap.weak;
    if handles == RootTableVisit::InPause {
        weak.handles.update(|r| Some(forwarder.forwarded(r)));
        for set in weak.sets.live() {
            set.forward_in_pause(&|r| forwarder.forwarded(r));
        }
        weak.ephemerons.with_pairs(|pairs| {
            for (key, value) in pairs.iter_mut().flatten() {
                *key = forwarder.forwarded(*key);
                *value = forwarder.forwarded(*value);
            }
        });
        weak.finalizers
            .update_registered(|r| forwarder.forwarded(r));
    }
    call_model(|| binding.forward_weak_refs(&WeakForwarding::new(forwarder)))
}
