//! GC workers: the NUMA pool (each worker bound to the node of the pages it
//! evacuates, for the length of the phase) or, without NUMA, plain scoped
//! threads.

use crate::GcError;
use hotmem_page::NodeId;
use serde::Serialize;

/// What one relocation phase did on the workers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseSummary {
    /// Workers that took part.
    pub workers: usize,
    /// Items (pages) processed.
    pub items: u64,
    /// Items processed by a worker bound to the item's node (equal to
    /// `items` when every page was relocated node-locally).
    pub local_items: u64,
    /// Whether workers were bound to nodes during the phase.
    pub bound: bool,
    /// Binds and rebinds made.
    pub binds: u64,
    /// Time spent binding and restoring, all workers together.
    pub binding_ns: u64,
}

impl PhaseSummary {
    /// `local_items / items`, 1.0 for an empty phase.
    pub fn locality_ratio(&self) -> f64 {
        if self.items == 0 {
            1.0
        } else {
            self.local_items as f64 / self.items as f64
        }
    }
}

/// The workers a runtime relocates with.
pub(crate) enum GcWorkers {
    /// A hwloc worker pool; partition `i` of the heap is node `i`.
    #[cfg(feature = "numa")]
    Numa(hotmem_numa::WorkerPool),
    /// Unbound scoped threads, started per phase.
    Plain {
        /// How many.
        threads: usize,
    },
}

impl GcWorkers {
    /// How many workers.
    pub(crate) fn count(&self) -> usize {
        match self {
            #[cfg(feature = "numa")]
            GcWorkers::Numa(pool) => pool.worker_count(),
            GcWorkers::Plain { threads } => *threads,
        }
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
        match self {
            #[cfg(feature = "numa")]
            GcWorkers::Numa(pool) => run_numa(pool, items, f),
            GcWorkers::Plain { threads } => run_plain(*threads, items, f),
        }
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
        let node = hotmem_numa::NodeId::new(node.index());
        if work.push(node, item).is_err() {
            unreachable!("heap partitions are the topology's nodes");
        }
    }
    let outcome = pool
        .run_phase(work, |_ctx, item| f(item))
        .map_err(|p| GcError::WorkerPanicked(p.message().unwrap_or("(no message)").to_string()))?;
    let s = &outcome.stats;
    let summary = PhaseSummary {
        workers: pool.worker_count(),
        items: s.items(),
        local_items: s.local_items(),
        bound: pool.affinity() == hotmem_numa::AffinityPolicy::BindDuringPhases,
        binds: s.binds(),
        binding_ns: s.binding_ns(),
    };
    Ok((outcome.results, summary))
}

fn run_plain<T, R, F>(
    threads: usize,
    items: Vec<(NodeId, T)>,
    f: F,
) -> Result<(Vec<R>, PhaseSummary), GcError>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let total = items.len() as u64;
    let queue = parking_lot::Mutex::new(items);
    let results = parking_lot::Mutex::new(Vec::with_capacity(total as usize));
    let workers = threads.min(queue.lock().len()).max(1);
    let outcome = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let next = queue.lock().pop();
                        let Some((_, item)) = next else { break };
                        let r = f(item);
                        results.lock().push(r);
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });
    if let Some(Err(payload)) = outcome.into_iter().find(|r| r.is_err()) {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        return Err(GcError::WorkerPanicked(msg));
    }
    let summary = PhaseSummary {
        workers,
        items: total,
        local_items: 0,
        bound: false,
        binds: 0,
        binding_ns: 0,
    };
    Ok((results.into_inner(), summary))
}
