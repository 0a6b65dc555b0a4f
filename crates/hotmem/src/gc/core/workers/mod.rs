//! GC workers: the NUMA pool (each worker bound to the node of the pages it
//! evacuates, for the length of the phase) or, without NUMA, a pool of
//! plain threads ([`PlainPool`]).

mod crew;
mod plain_pool;

pub(crate) use crew::{Crew, PARKED_CHECK};
pub(crate) use plain_pool::PlainPool;

use super::binding_panic::panic_message;
use super::cpu_time::thread_cpu_ns;
use crate::GcError;
use hotmem_page::NodeId;
use serde::Serialize;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether and how GC workers bind to the node of the pages they relocate.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkerBinding {
    /// Workers run unbound (one node, NUMA off, or built without the
    /// `numa` feature): node locality does not apply.
    #[default]
    Off,
    /// Workers bind their threads to the node's CPUs through the OS (hwloc
    /// on the detected topology) for the length of a phase.
    Real,
    /// The topology is synthetic, a model of another machine: bindings are
    /// recorded, not made, and locality figures are what the model says.
    Simulated,
}

impl fmt::Display for WorkerBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerBinding::Off => "off",
            WorkerBinding::Real => "real",
            WorkerBinding::Simulated => "simulated (recorded, not made)",
        })
    }
}

/// What one relocation phase did on the workers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseSummary {
    /// Workers that took part.
    pub workers: usize,
    /// Items (pages) processed.
    pub items: u64,
    /// Items processed by a worker bound to the item's node (equal to
    /// `items` when every page was relocated node-locally); `None` when the
    /// workers were not bound ([`WorkerBinding::Off`]), where it does not
    /// apply. Simulated, not measured, under [`WorkerBinding::Simulated`].
    pub local_items: Option<u64>,
    /// Items that the kernel saw processed on a CPU of the item's node
    /// (the worker's CPU as `getcpu` reports it right after the item):
    /// measured, not recorded. `None` where nothing was measured (plain
    /// workers, or a synthetic topology whose threads are not bound).
    pub observed_local_items: Option<u64>,
    /// How workers were bound to nodes during the phase.
    pub binding: WorkerBinding,
    /// Binds and rebinds made (recorded ones when simulated).
    pub binds: u64,
    /// Time spent binding and restoring, all workers together.
    pub binding_ns: u64,
}

impl PhaseSummary {
    /// `items` processed by `workers` unbound workers.
    fn unbound(workers: usize, items: u64) -> PhaseSummary {
        PhaseSummary {
            workers,
            items,
            local_items: None,
            observed_local_items: None,
            binding: WorkerBinding::Off,
            binds: 0,
            binding_ns: 0,
        }
    }

    /// `local_items / items` (1.0 for an empty phase); `None` when the
    /// workers were not bound: locality does not apply ("n/a").
    pub fn locality_ratio(&self) -> Option<f64> {
        let local = self.local_items?;
        Some(if self.items == 0 {
            1.0
        } else {
            local as f64 / self.items as f64
        })
    }

    /// `observed_local_items / items` (1.0 for an empty phase): the
    /// locality the kernel measured; `None` where nothing was measured.
    pub fn observed_locality_ratio(&self) -> Option<f64> {
        let local = self.observed_local_items?;
        Some(if self.items == 0 {
            1.0
        } else {
            local as f64 / self.items as f64
        })
    }

    /// The locality for a report line: "100% (real; 100% on the node's
    /// CPUs per the kernel)", "100% (simulated)", or "n/a (workers
    /// unbound)".
    pub fn locality_text(&self) -> String {
        match (self.locality_ratio(), self.binding) {
            (None, _) | (_, WorkerBinding::Off) => "n/a (workers unbound)".to_string(),
            (Some(r), WorkerBinding::Simulated) => format!("{:.0}% (simulated)", r * 100.0),
            (Some(r), _) => match self.observed_locality_ratio() {
                Some(o) => format!(
                    "{:.0}% (real; {:.0}% on the node's CPUs per the kernel)",
                    r * 100.0,
                    o * 100.0
                ),
                None => format!("{:.0}% (real)", r * 100.0),
            },
        }
    }
}

/// How the workers of `pool` bind during phases.
#[cfg(feature = "numa")]
pub(crate) fn pool_binding(pool: &hotmem_numa::WorkerPool) -> WorkerBinding {
    pool_binding_of(pool.affinity(), pool.binding_kind())
}

#[cfg(feature = "numa")]
pub(crate) fn pool_binding_of(
    affinity: hotmem_numa::AffinityPolicy,
    kind: hotmem_numa::BindingKind,
) -> WorkerBinding {
    use hotmem_numa::{AffinityPolicy, BindingKind};
    match (affinity, kind) {
        (AffinityPolicy::BindDuringPhases, BindingKind::Real) => WorkerBinding::Real,
        (AffinityPolicy::BindDuringPhases, BindingKind::Simulated) => WorkerBinding::Simulated,
        // `Off`, and policies or kinds added later: claim no binding.
        _ => WorkerBinding::Off,
    }
}

/// The workers a runtime collects with, and the CPU time they spent.
pub(crate) struct GcWorkers {
    pub(crate) pool: Pool,
    /// CPU time spent in the items of every phase so far, all workers
    /// together.
    cpu_ns: u64,
}

/// The threads of [`GcWorkers`].
pub(crate) enum Pool {
    /// A hwloc worker pool; partition `i` of the heap is node `i`.
    #[cfg(feature = "numa")]
    Numa(hotmem_numa::WorkerPool),
    /// Unbound persistent threads (one node, NUMA off, or built without
    /// the `numa` feature).
    Plain(PlainPool),
}

impl GcWorkers {
    /// Workers on `pool`.
    pub(crate) fn new(pool: Pool) -> GcWorkers {
        GcWorkers { pool, cpu_ns: 0 }
    }

    /// How many workers.
    pub(crate) fn count(&self) -> usize {
        match &self.pool {
            #[cfg(feature = "numa")]
            Pool::Numa(pool) => pool.worker_count(),
            Pool::Plain(pool) => pool.count(),
        }
    }

    /// The CPU time the workers spent in phases so far (each item timed on
    /// its worker's CPU clock: a worker that waits costs nothing).
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.cpu_ns
    }

    /// Processes every item exactly once; results in no particular order.
    pub(crate) fn run<T, R, F>(
        &mut self,
        items: Vec<(NodeId, T)>,
        f: F,
    ) -> Result<(Vec<R>, PhaseSummary), GcError>
    where
        T: Send,
        R: Send,
        F: Fn(T) -> R + Sync,
    {
        let cpu = AtomicU64::new(0);
        let timed = |item: T| {
            let start = thread_cpu_ns();
            let r = f(item);
            cpu.fetch_add(thread_cpu_ns().saturating_sub(start), Ordering::Relaxed);
            r
        };
        let out = match &mut self.pool {
            #[cfg(feature = "numa")]
            Pool::Numa(pool) => run_numa(pool, items, timed),
            Pool::Plain(pool) => run_plain(pool, items, timed),
        };
        self.cpu_ns += cpu.into_inner();
        out
    }

    /// [`GcWorkers::run`] for a phase with little work: on the calling
    /// thread, each item in turn, where the workers are unbound (waking
    /// them costs a pause more than a few hundred objects do); on the
    /// workers where they bind to the items' nodes for the phase, so that
    /// every item is still worked on from its node. On the calling thread,
    /// a panic is the same [`GcError::WorkerPanicked`] a worker's would be,
    /// and the summary counts one worker, unbound.
    pub(crate) fn run_few<T, R, F>(
        &mut self,
        items: Vec<(NodeId, T)>,
        f: F,
    ) -> Result<(Vec<R>, PhaseSummary), GcError>
    where
        T: Send,
        R: Send,
        F: Fn(T) -> R + Sync,
    {
        match &self.pool {
            #[cfg(feature = "numa")]
            Pool::Numa(_) => return self.run(items, f),
            Pool::Plain(_) => {}
        }
        let total = items.len() as u64;
        let results = catch_unwind(AssertUnwindSafe(|| {
            items.into_iter().map(|(_, item)| f(item)).collect()
        }))
        .map_err(|payload| GcError::WorkerPanicked(panic_message(&*payload)))?;
        Ok((results, PhaseSummary::unbound(1, total)))
    }
}

#[cfg(feature = "numa")]
fn run_numa<T, R, F>(
    pool: &mut hotmem_numa::WorkerPool,
    items: Vec<(NodeId, T)>,
    f: F,
) -> Result<(Vec<R>, PhaseSummary), GcError>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let mut work = hotmem_numa::PhaseWork::new(pool.topology());
    for (node, item) in items {
        // Heap partitions are the topology's nodes, so this never fails; if
        // it did, nothing has run yet and the collection reports it.
        if let Err(e) = work.push(node, item) {
            return Err(GcError::WorkerPanicked(format!(
                "relocation item for an unknown node: {e}"
            )));
        }
    }
    let outcome = pool
        .run_phase(work, |_ctx, item| f(item))
        .map_err(|p| GcError::WorkerPanicked(p.message().unwrap_or("(no message)").to_string()))?;
    let s = &outcome.stats;
    let binding = pool_binding_of(s.affinity, s.binding);
    let summary = PhaseSummary {
        workers: pool.worker_count(),
        items: s.items(),
        local_items: (binding != WorkerBinding::Off).then(|| s.local_items()),
        observed_local_items: s
            .workers
            .iter()
            .map(|w| w.observed_local_items)
            .sum::<Option<u64>>(),
        binding,
        binds: s.binds(),
        binding_ns: s.binding_ns(),
    };
    Ok((outcome.results, summary))
}

fn run_plain<T, R, F>(
    pool: &mut PlainPool,
    items: Vec<(NodeId, T)>,
    f: F,
) -> Result<(Vec<R>, PhaseSummary), GcError>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let total = items.len() as u64;
    let items: Vec<T> = items.into_iter().map(|(_, item)| item).collect();
    let results = pool
        .run(items, f)
        .map_err(|payload| GcError::WorkerPanicked(panic_message(&*payload)))?;
    Ok((results, PhaseSummary::unbound(pool.count(), total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(i: u32) -> NodeId {
        NodeId::new(i as usize)
    }

    fn items() -> Vec<(NodeId, u32)> {
        (0..8).map(|i| (node(i % 2), i)).collect()
    }

    #[test]
    fn plain_workers_report_locality_as_not_applicable() {
        let mut w = GcWorkers::new(Pool::Plain(PlainPool::new(2, None)));
        let (results, s) = w.run(items(), |i| i).unwrap();
        assert_eq!(results.len(), 8);
        assert_eq!(s.binding, WorkerBinding::Off);
        assert_eq!(s.local_items, None);
        assert_eq!(s.locality_ratio(), None, "not 0%: nothing was bound");
        assert_eq!(s.locality_text(), "n/a (workers unbound)");
        assert_eq!(
            serde_json::to_value(&s).unwrap()["local_items"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn the_workers_count_the_cpu_time_of_their_items_not_their_waits() {
        let mut w = GcWorkers::new(Pool::Plain(PlainPool::new(2, None)));
        assert_eq!(w.cpu_ns(), 0);
        let spin = |_| {
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(5) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        w.run(items(), spin).unwrap();
        let busy = w.cpu_ns();
        assert!(busy > 0, "eight spinning items took CPU time");
        // Eight items that sleep 5 ms each: 40 ms of waiting, which is no
        // CPU time (what they do take is far less, whatever the load).
        w.run(items(), |_| {
            std::thread::sleep(std::time::Duration::from_millis(5))
        })
        .unwrap();
        assert!(w.cpu_ns() - busy < 40_000_000, "waits counted");
    }

    #[cfg(feature = "numa")]
    fn numa_run(
        topology: &hotmem_numa::Topology,
        affinity: hotmem_numa::AffinityPolicy,
        items: Vec<(NodeId, u32)>,
    ) -> PhaseSummary {
        let pool =
            hotmem_numa::WorkerPool::new(topology, hotmem_numa::PoolConfig::new(2, affinity))
                .unwrap();
        let binding = pool_binding(&pool);
        let mut w = GcWorkers::new(Pool::Numa(pool));
        let (_, s) = w.run(items, |i| i).unwrap();
        assert_eq!(s.binding, binding, "the summary says what the pool does");
        s
    }

    #[cfg(feature = "numa")]
    #[test]
    fn a_synthetic_topology_reports_simulated_binding() {
        let t = hotmem_numa::Topology::synthetic("pack:2 numa:1 core:2 pu:1").unwrap();
        let s = numa_run(&t, hotmem_numa::AffinityPolicy::BindDuringPhases, items());
        assert_eq!(s.binding, WorkerBinding::Simulated);
        assert_eq!(s.locality_ratio(), Some(1.0));
        assert_eq!(s.locality_text(), "100% (simulated)");
        assert!(WorkerBinding::Simulated.to_string().contains("simulated"));
        assert_eq!(serde_json::to_value(&s).unwrap()["binding"], "simulated");
        // Affinity off on the same model: no binding, no locality.
        let s = numa_run(&t, hotmem_numa::AffinityPolicy::Off, items());
        assert_eq!(s.binding, WorkerBinding::Off);
        assert_eq!(s.locality_ratio(), None);
    }

    #[cfg(feature = "numa")]
    #[test]
    fn the_detected_topology_reports_real_binding() {
        let t = hotmem_numa::Topology::detect().unwrap();
        // A node with CPUs to bind to (a memory-only node has none).
        let with_cpus = t.nodes().iter().find(|n| !n.cpuset().is_empty()).unwrap();
        let n = u32::try_from(with_cpus.id().index()).unwrap();
        let items: Vec<_> = (0..8).map(|i| (node(n), i)).collect();
        let s = numa_run(&t, hotmem_numa::AffinityPolicy::BindDuringPhases, items);
        assert_eq!(s.binding, WorkerBinding::Real);
        assert_eq!(s.locality_ratio(), Some(1.0));
        // Bound to the node's CPUs, every item ran on one (getcpu).
        assert_eq!(s.observed_locality_ratio(), Some(1.0));
        assert_eq!(
            s.locality_text(),
            "100% (real; 100% on the node's CPUs per the kernel)"
        );
    }
}
