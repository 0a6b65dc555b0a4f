//! The runtime's NUMA side: from the configuration, the heap's partitions,
//! the binder that binds their memory to nodes, and the GC workers.

use super::config::{NumaConfig, RuntimeConfig};
use crate::error::BuildError;
#[cfg(feature = "numa")]
use crate::error::NumaError;
use crate::gc::core::workers::{GcWorkers, PlainPool, Pool, WorkerBinding};
use crate::thread_stack::ThreadStack;
use hotmem_nmt::Tracker;
use hotmem_page::NodeId;
use std::sync::Arc;

/// How the runtime's NUMA side turned out.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NumaSummary {
    /// Where the topology came from: "detected", "detected: one node" (no
    /// topology discovery), "synthetic: ...", or "off".
    pub source: String,
    /// Nodes, and so heap partitions.
    pub nodes: usize,
    /// Whether partition memory is bound to its node through the OS.
    pub memory_bound: bool,
    /// Whether GC workers bind to nodes during relocation, and whether
    /// those bindings are real or simulated (synthetic topology).
    pub worker_binding: WorkerBinding,
}

/// The NUMA parts a configuration gives: partitions, a binder, workers.
pub(super) struct NumaParts {
    pub(super) partitions: Vec<NodeId>,
    pub(super) binder: Option<Arc<dyn hotmem_page::NodeBinder>>,
    pub(super) workers: GcWorkers,
    pub(super) summary: NumaSummary,
    #[cfg(feature = "numa")]
    pub(super) topology: Option<Arc<hotmem_numa::Topology>>,
}

fn plain_parts(config: &RuntimeConfig, nmt: &Arc<Tracker>, source: &str) -> NumaParts {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The parallel-worker heuristic: 60% of the CPUs, at least one.
    let threads = config
        .gc_workers
        .unwrap_or_else(|| (cpus * 3).div_ceil(5).max(1));
    NumaParts {
        partitions: vec![NodeId::ZERO],
        binder: None,
        workers: GcWorkers::new(Pool::Plain(PlainPool::new(threads, Some(nmt.clone())))),
        summary: NumaSummary {
            source: source.into(),
            nodes: 1,
            memory_bound: false,
            worker_binding: WorkerBinding::Off,
        },
        #[cfg(feature = "numa")]
        topology: None,
    }
}

/// How many NUMA nodes the kernel has online, from
/// `/sys/devices/system/node/online` (`0`, `0-1`, `0,2-3`); `None` where it
/// cannot be read (no NUMA support in the kernel: one node).
#[cfg(feature = "numa")]
fn online_nodes() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/node/online").ok()?;
    let mut count = 0;
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
        count += b.checked_sub(a)? + 1;
    }
    Some(count)
}

#[cfg(feature = "numa")]
pub(super) fn numa_parts(
    config: &RuntimeConfig,
    nmt: &Arc<Tracker>,
) -> Result<NumaParts, BuildError> {
    use hotmem_numa::{AffinityPolicy, MemoryPolicy, PoolConfig, Topology, WorkerKind, heuristics};
    let (topology, source) = match &config.numa {
        NumaConfig::Off => return Ok(plain_parts(config, nmt, "off")),
        // One node has nothing to bind: no topology discovery (hwloc's takes
        // milliseconds, on every start of a script runner).
        NumaConfig::Detect if online_nodes().is_none_or(|n| n <= 1) => {
            return Ok(plain_parts(config, nmt, "detected: one node"));
        }
        NumaConfig::Detect => (
            Topology::detect().map_err(|e| BuildError::Topology(NumaError::new(e)))?,
            "detected".to_string(),
        ),
        NumaConfig::Synthetic(d) => (
            Topology::synthetic(d).map_err(|e| BuildError::Topology(NumaError::new(e)))?,
            format!("synthetic: {d}"),
        ),
    };
    let topology = Arc::new(topology);
    let nodes = topology.node_count();
    let affinity = AffinityPolicy::default_for(&topology);
    let workers = config
        .gc_workers
        .unwrap_or_else(|| heuristics::workers_for(&topology, WorkerKind::Parallel, affinity));
    let pool = hotmem_numa::WorkerPool::new(
        &topology,
        PoolConfig::new(workers, affinity).named("hotmem-gc"),
    )
    .map_err(|e| BuildError::Workers(NumaError::new(e)))?;
    let memory_bound = nodes > 1 && topology.is_this_system();
    let binder: Option<Arc<dyn hotmem_page::NodeBinder>> = if memory_bound {
        let t = topology.clone();
        Some(Arc::new(move |range, node: NodeId| {
            // Preferred, not strict: a full node spills over instead of
            // failing the allocation.
            // SAFETY: the heap calls the binder with a range of its own that
            // it has just mapped and keeps mapped during the call (see
            // `hotmem_page::NodeBinder`); binding reads and writes no byte.
            let r = unsafe { t.bind_memory(range, node, MemoryPolicy::Preferred) };
            // A failed bind leaves the memory merely not node-local.
            let _ = r;
        }))
    } else {
        None
    };
    Ok(NumaParts {
        partitions: (0..nodes).map(NodeId::new).collect(),
        binder,
        summary: NumaSummary {
            source,
            nodes,
            memory_bound,
            worker_binding: crate::gc::core::workers::pool_binding(&pool),
        },
        workers: GcWorkers::new(Pool::Numa(pool)),
        topology: Some(topology),
    })
}

#[cfg(not(feature = "numa"))]
pub(super) fn numa_parts(
    config: &RuntimeConfig,
    nmt: &Arc<Tracker>,
) -> Result<NumaParts, BuildError> {
    match &config.numa {
        NumaConfig::Synthetic(_) => Err(BuildError::NumaDisabled),
        NumaConfig::Detect => Ok(plain_parts(
            config,
            nmt,
            "off (built without the numa feature)",
        )),
        NumaConfig::Off => Ok(plain_parts(config, nmt, "off")),
    }
}

/// Records the stack of every NUMA pool worker thread in NMT (tag Thread
/// Stack). Plain workers record their own when they start.
pub(super) fn record_worker_stacks(workers: &GcWorkers, nmt: &Arc<Tracker>) -> Vec<ThreadStack> {
    match &workers.pool {
        #[cfg(feature = "numa")]
        Pool::Numa(pool) => {
            let nmt = nmt.clone();
            pool.on_each_worker(move |_| ThreadStack::record_current(&nmt))
                .into_iter()
                .flatten()
                .collect()
        }
        Pool::Plain(_) => {
            let _ = nmt;
            Vec::new()
        }
    }
}
