//! [`WorkerPool`]: named GC worker threads that run phases of node-grouped
//! work, bound to each item's node for the length of the phase.

pub(crate) mod handoff;
mod outcome;
mod payload;
mod phase;
mod work;
mod worker;

pub use outcome::{PhaseOutcome, PhasePanicked, PoolError};
pub use phase::WorkerContext;
pub use work::PhaseWork;

use crate::binder::{BindingEvent, Record, ThreadBinder};
use crate::error::BindError;
use crate::heuristics::{WorkerKind, workers_for};
use crate::stats::{NodePhaseStats, PhaseStats};
use crate::sync::channel::{self, Sender};
use crate::sync::{Arc, Mutex};
use crate::{AffinityPolicy, BindingKind, CpuSet, NodeId, Topology};
use phase::Phase;
use std::fmt;
use std::thread::JoinHandle;
use std::time::Instant;
use worker::{Job, WorkerState, worker_main};

/// How to build a [`WorkerPool`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Number of worker threads (at least one).
    pub workers: usize,
    /// Whether workers bind during phases.
    pub affinity: AffinityPolicy,
    /// Thread name prefix: workers are named `{name}-{index}`.
    pub name: String,
}

impl PoolConfig {
    /// `workers` threads named `hotmem-gc-N` under `affinity`.
    pub fn new(workers: usize, affinity: AffinityPolicy) -> Self {
        PoolConfig {
            workers,
            affinity,
            name: "hotmem-gc".to_owned(),
        }
    }

    /// Sized by the heuristics for `kind` on `topology`, with its default
    /// affinity (bind when it has several nodes).
    pub fn sized_for(topology: &Topology, kind: WorkerKind) -> Self {
        let affinity = AffinityPolicy::default_for(topology);
        PoolConfig::new(workers_for(topology, kind, affinity), affinity)
    }

    /// The same with another thread name prefix.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The same with another affinity policy.
    pub fn with_affinity(mut self, affinity: AffinityPolicy) -> Self {
        self.affinity = affinity;
        self
    }
}

/// A worker as the pool sees it.
struct WorkerHandle {
    name: String,
    home: NodeId,
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// Named GC worker threads that run phases of work grouped by node.
///
/// With [`AffinityPolicy::BindDuringPhases`], each worker, for the length of
/// a phase, binds its thread to the CPUs of the node whose items it takes
/// (at most once per node per phase) and restores its original binding when
/// the phase ends, also when an item panicked. Worker `i` starts every phase
/// on node `i mod nodes` (nodes with CPUs only), so that every node has a
/// worker when there are at least as many workers as nodes; a worker whose
/// node's queue is empty moves on to the next node with work.
///
/// On a synthetic topology the bindings cannot reach the OS; the pool records
/// them ([`WorkerPool::binding_record`]).
pub struct WorkerPool {
    topology: Topology,
    affinity: AffinityPolicy,
    workers: Vec<WorkerHandle>,
    record: Option<Record>,
    phases: u64,
}

impl WorkerPool {
    /// Starts `config.workers` threads on `topology`.
    ///
    /// # Errors
    /// [`PoolError::NoWorkers`] for zero workers; [`PoolError::Spawn`] if a
    /// thread cannot start (the ones already started are stopped).
    pub fn new(topology: &Topology, config: PoolConfig) -> Result<WorkerPool, PoolError> {
        if config.workers == 0 {
            return Err(PoolError::NoWorkers);
        }
        let record: Option<Record> = (!topology.is_this_system()).then(Record::default);
        let bindable: Vec<NodeId> = topology
            .nodes()
            .iter()
            .filter(|n| !n.cpuset().is_empty())
            .map(|n| n.id())
            .collect();
        let mut pool = WorkerPool {
            topology: topology.clone(),
            affinity: config.affinity,
            workers: Vec::with_capacity(config.workers),
            record,
            phases: 0,
        };
        for index in 0..config.workers {
            let home = if bindable.is_empty() {
                NodeId::new(index % topology.node_count())
            } else {
                bindable[index % bindable.len()]
            };
            let name = format!("{}-{index}", config.name);
            let (tx, rx) = channel::unbounded();
            let binder = ThreadBinder::new(topology, index, pool.record.as_ref());
            let thread_name = name.clone();
            let thread = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    let unbound_mask = binder.read().unwrap_or_default();
                    let state = WorkerState {
                        index,
                        name: thread_name,
                        home,
                        binder,
                        unbound_mask,
                    };
                    worker_main(state, rx);
                })
                .map_err(PoolError::Spawn)?;
            pool.workers.push(WorkerHandle {
                name,
                home,
                jobs: Some(tx),
                thread: Some(thread),
            });
        }
        Ok(pool)
    }

    /// The topology the pool works on.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The pool's affinity policy.
    pub fn affinity(&self) -> AffinityPolicy {
        self.affinity
    }

    /// Whether the pool's bindings are real (detected topology) or
    /// simulated (synthetic topology: recorded, not made).
    pub fn binding_kind(&self) -> BindingKind {
        BindingKind::of(&self.topology)
    }

    /// Changes the affinity policy for the following phases (to compare
    /// both on the same threads).
    pub fn set_affinity(&mut self, affinity: AffinityPolicy) {
        self.affinity = affinity;
    }

    /// Number of workers.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Worker `i`'s thread name, `None` past the last worker.
    pub fn worker_name(&self, i: usize) -> Option<&str> {
        self.workers.get(i).map(|w| w.name.as_str())
    }

    /// The node worker `i` starts each phase on, `None` past the last worker.
    pub fn worker_home(&self, i: usize) -> Option<NodeId> {
        self.workers.get(i).map(|w| w.home)
    }

    /// Phases run so far.
    pub fn phases_run(&self) -> u64 {
        self.phases
    }

    /// On a synthetic topology, every binding change the workers made, in
    /// the order they made them; `None` on a detected topology, where the
    /// bindings are real (read them with [`WorkerPool::worker_bindings`]).
    pub fn binding_record(&self) -> Option<Vec<BindingEvent>> {
        self.record.as_ref().map(|r| r.lock().clone())
    }

    /// Runs `f` once on every worker thread, with the worker's index, and
    /// returns the results in worker order: for per-thread setup or
    /// inspection between phases (recording each worker's stack in a memory
    /// tracker, warming thread-local caches).
    ///
    /// # Panics
    /// If `f` panics on a worker (the worker survives), or if a worker
    /// thread is gone.
    pub fn on_each_worker<R, F>(&self, f: F) -> Vec<R>
    where
        R: Send + 'static,
        F: Fn(usize) -> R + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        let replies: Vec<_> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let (tx, rx) = channel::bounded(1);
                let f = f.clone();
                let jobs = w.jobs.as_ref().expect("pool is running");
                jobs.send(Job::Call(Box::new(move || {
                    let _ = tx.send(f(i));
                })))
                .expect("worker thread alive");
                rx
            })
            .collect();
        replies
            .into_iter()
            .map(|rx| {
                rx.recv()
                    .expect("the closure ran on the worker without panicking")
            })
            .collect()
    }

    /// Each worker's CPU binding now, as its own thread reads it (from the
    /// OS on a detected topology). Between phases this is the original mask.
    ///
    /// # Errors
    /// Per worker, [`BindError`] if the OS cannot tell.
    ///
    /// # Panics
    /// If a worker thread is gone (a bug: workers catch item panics).
    pub fn worker_bindings(&self) -> Vec<Result<CpuSet, BindError>> {
        self.workers
            .iter()
            .map(|w| {
                let (tx, rx) = channel::bounded(1);
                let jobs = w.jobs.as_ref().expect("pool is running");
                jobs.send(Job::ReadBinding(tx))
                    .expect("worker thread alive");
                rx.recv().expect("worker thread alive")
            })
            .collect()
    }

    /// Runs one phase: every item of `work` is processed exactly once by
    /// `f`, on a worker that (under [`AffinityPolicy::BindDuringPhases`]) is
    /// bound to the item's node. Blocks until all workers have finished and
    /// restored their bindings, so `f`, the items and the results may borrow
    /// from the caller's stack.
    ///
    /// # Errors
    /// [`PhasePanicked`] if a call of `f` panicked: the remaining items were
    /// still processed and the bindings restored; resume the panic with
    /// `std::panic::resume_unwind(err.payload)` if it should propagate.
    ///
    /// # Panics
    /// If `work` was built for a topology with another node count, or if a
    /// worker thread is gone (a bug: workers catch item panics).
    pub fn run_phase<T, R, F>(
        &mut self,
        work: PhaseWork<T>,
        f: F,
    ) -> Result<PhaseOutcome<R>, PhasePanicked<R>>
    where
        T: Send,
        R: Send,
        F: Fn(&WorkerContext<'_>, T) -> R + Sync,
    {
        assert_eq!(
            work.node_count(),
            self.topology.node_count(),
            "phase work built for another topology"
        );
        self.phases += 1;
        let n = self.workers.len();
        let phase = Phase {
            number: self.phases,
            affinity: self.affinity,
            topology: &self.topology,
            queues: work.into_queues(),
            f: &f,
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
        };
        let start = Instant::now();
        // Returns only once every worker is done with `phase` (or its
        // ticket was dropped unsent), so `phase` may borrow `f` and the items.
        handoff::run_on_workers(&phase, n, |i, ticket| {
            if let Some(tx) = &self.workers[i].jobs {
                // A worker that is gone hands the job back: dropping it
                // drops the ticket, which counts the phase down.
                let _ = tx.send(Job::Phase(ticket));
            }
        });
        let wall_ns = start.elapsed().as_nanos() as u64;
        self.collect(phase, wall_ns)
    }

    fn collect<T, R, F>(
        &self,
        phase: Phase<'_, T, R, F>,
        wall_ns: u64,
    ) -> Result<PhaseOutcome<R>, PhasePanicked<R>> {
        let nodes = self.topology.node_count();
        let mut node_stats: Vec<NodePhaseStats> = (0..nodes)
            .map(|i| NodePhaseStats {
                node: NodeId::new(i),
                items: 0,
                local_items: 0,
            })
            .collect();
        let mut workers = Vec::with_capacity(self.workers.len());
        let mut results = Vec::new();
        let mut payload = None;
        for (i, slot) in phase.slots.into_iter().enumerate() {
            let report = slot
                .into_inner()
                .unwrap_or_else(|| panic!("worker {i} handed in no report (worker thread gone)"));
            for (ns, (items, local)) in node_stats.iter_mut().zip(&report.per_node) {
                ns.items += items;
                ns.local_items += local;
            }
            if results.is_empty() {
                results = report.results;
            } else {
                results.extend(report.results);
            }
            match (&payload, report.panic) {
                (None, first) => payload = first,
                // Only the first payload is handed back; the others are
                // dropped without letting their `Drop` unwind out of here.
                (Some(_), Some(other)) => payload::drop_payload(other),
                (Some(_), None) => {}
            }
            workers.push(report.stats);
        }
        let left_in_queues = phase.queues.iter().flatten().map(|q| q.len() as u64).sum();
        let stats = PhaseStats {
            phase: phase.number,
            affinity: phase.affinity,
            binding: BindingKind::of(&self.topology),
            nodes: node_stats,
            workers,
            wall_ns,
            left_in_queues,
        };
        match payload {
            None => Ok(PhaseOutcome { results, stats }),
            Some(payload) => Err(PhasePanicked {
                results,
                stats,
                payload,
            }),
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        for w in &mut self.workers {
            // Closing the channel ends the worker's loop.
            drop(w.jobs.take());
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                // A worker that panicked outside an item has nothing left
                // to clean up; the pool goes away either way.
                let _ = t.join();
            }
        }
    }
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("workers", &self.workers.len())
            .field("affinity", &self.affinity)
            .field("phases", &self.phases)
            .field("binding", &self.binding_kind())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shareable_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Topology>();
        send_sync::<WorkerPool>();
        send_sync::<PhaseStats>();
        send_sync::<PhaseWork<&u8>>();
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn zero_workers_is_an_error() {
        let t = Topology::synthetic("numa:2 core:1 pu:1").unwrap();
        assert!(matches!(
            WorkerPool::new(&t, PoolConfig::new(0, AffinityPolicy::Off)),
            Err(PoolError::NoWorkers)
        ));
        let c = PoolConfig::sized_for(&t, WorkerKind::Concurrent);
        assert_eq!(
            (c.workers, c.affinity),
            (2, AffinityPolicy::BindDuringPhases)
        );
    }
}
