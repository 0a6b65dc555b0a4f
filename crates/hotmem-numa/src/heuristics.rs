//! How many GC workers, and whether they bind.
//!
//! The numbers are ZGC's: concurrent phases use 25% of the CPUs and parallel
//! (stop-the-world) phases 60%, rounded up, at least one. With few CPUs per
//! node that can leave nodes without a worker (4 workers on 16 CPUs, or one
//! for an old collection, on a two-node machine), so that their pages are
//! relocated from remote memory. When the workers bind to nodes, the pool
//! therefore never has fewer workers than nodes.

use crate::Topology;
use serde::{Deserialize, Serialize};

/// Whether GC workers bind to the node whose memory they work on.
///
/// `#[non_exhaustive]`, like every public error and configuration enum of
/// this crate: a `match` outside the crate needs a wildcard arm,
///
/// ```
/// # use hotmem_numa::AffinityPolicy;
/// fn binds(p: AffinityPolicy) -> bool {
///     match p {
///         AffinityPolicy::Off => false,
///         AffinityPolicy::BindDuringPhases => true,
///         _ => false,
///     }
/// }
/// assert!(binds(AffinityPolicy::BindDuringPhases));
/// ```
///
/// and without one does not compile (E0004, non-exhaustive patterns):
///
/// ```compile_fail,E0004
/// # use hotmem_numa::AffinityPolicy;
/// fn binds(p: AffinityPolicy) -> bool {
///     match p {
///         AffinityPolicy::Off => false,
///         AffinityPolicy::BindDuringPhases => true,
///     }
/// }
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum AffinityPolicy {
    /// Workers run wherever the OS schedules them (the baseline, and the
    /// only sensible choice on a one-node machine).
    Off,
    /// For the length of a phase, each worker binds to the CPUs of the node
    /// whose items it processes, and gets its original binding back when the
    /// phase ends.
    BindDuringPhases,
}

impl AffinityPolicy {
    /// The default for a topology: bind when it has several nodes.
    pub fn default_for(topology: &Topology) -> AffinityPolicy {
        if topology.node_count() > 1 {
            AffinityPolicy::BindDuringPhases
        } else {
            AffinityPolicy::Off
        }
    }
}

/// Which kind of GC work a pool is sized for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WorkerKind {
    /// Work running beside the application (ZGC's concurrent relocation):
    /// 25% of the CPUs.
    Concurrent,
    /// Stop-the-world work: 60% of the CPUs.
    Parallel,
}

/// `max(ceil(25% of cpus), 1)`.
#[inline]
pub const fn concurrent_workers(cpus: usize) -> usize {
    percent_of(cpus, 25)
}

/// `max(ceil(60% of cpus), 1)`.
#[inline]
pub const fn parallel_workers(cpus: usize) -> usize {
    percent_of(cpus, 60)
}

const fn percent_of(cpus: usize, percent: usize) -> usize {
    let n = cpus.saturating_mul(percent).div_ceil(100);
    if n == 0 { 1 } else { n }
}

/// The worker count for `kind` on `cpus` CPUs and `nodes` nodes: the
/// percentage, raised to one worker per node when there are several nodes and
/// `affinity` binds workers.
pub const fn worker_count(
    kind: WorkerKind,
    cpus: usize,
    nodes: usize,
    affinity: AffinityPolicy,
) -> usize {
    let base = match kind {
        WorkerKind::Concurrent => concurrent_workers(cpus),
        WorkerKind::Parallel => parallel_workers(cpus),
    };
    match affinity {
        AffinityPolicy::BindDuringPhases if nodes > 1 && base < nodes => nodes,
        _ => base,
    }
}

/// [`worker_count`] for a topology.
pub fn workers_for(topology: &Topology, kind: WorkerKind, affinity: AffinityPolicy) -> usize {
    worker_count(kind, topology.cpu_count(), topology.node_count(), affinity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AffinityPolicy::{BindDuringPhases, Off};
    use WorkerKind::{Concurrent, Parallel};

    #[test]
    fn percentages() {
        assert_eq!(concurrent_workers(0), 1);
        assert_eq!(concurrent_workers(1), 1);
        assert_eq!(concurrent_workers(5), 2); // 1.25 rounds up
        assert_eq!(parallel_workers(1), 1);
        assert_eq!(parallel_workers(5), 3);
        assert_eq!(parallel_workers(usize::MAX), usize::MAX.div_ceil(100));
    }

    /// The table: (cpus, nodes) -> (concurrent off, concurrent on, parallel off, parallel on).
    #[test]
    fn heuristics_table() {
        #[rustfmt::skip]
        let table: &[(usize, usize, [usize; 4])] = &[
            (2,   1, [1, 1, 2, 2]),
            (2,   2, [1, 2, 2, 2]),
            (2,   4, [1, 4, 2, 4]),
            (2,   8, [1, 8, 2, 8]),
            (16,  1, [4, 4, 10, 10]),
            (16,  2, [4, 4, 10, 10]),
            (16,  4, [4, 4, 10, 10]),
            (16,  8, [4, 8, 10, 10]),
            (64,  1, [16, 16, 39, 39]),
            (64,  2, [16, 16, 39, 39]),
            (64,  4, [16, 16, 39, 39]),
            (64,  8, [16, 16, 39, 39]),
            (256, 1, [64, 64, 154, 154]),
            (256, 2, [64, 64, 154, 154]),
            (256, 4, [64, 64, 154, 154]),
            (256, 8, [64, 64, 154, 154]),
        ];
        for &(cpus, nodes, want) in table {
            let got = [
                worker_count(Concurrent, cpus, nodes, Off),
                worker_count(Concurrent, cpus, nodes, BindDuringPhases),
                worker_count(Parallel, cpus, nodes, Off),
                worker_count(Parallel, cpus, nodes, BindDuringPhases),
            ];
            assert_eq!(got, want, "{cpus} cpus, {nodes} nodes");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn from_a_topology() {
        let t = Topology::synthetic("pack:4 numa:1 core:1 pu:1").unwrap();
        assert_eq!(AffinityPolicy::default_for(&t), BindDuringPhases);
        assert_eq!(workers_for(&t, Concurrent, Off), 1);
        assert_eq!(workers_for(&t, Concurrent, BindDuringPhases), 4);
        let one = Topology::synthetic("numa:1 core:16 pu:1").unwrap();
        assert_eq!(AffinityPolicy::default_for(&one), Off);
        assert_eq!(workers_for(&one, Parallel, BindDuringPhases), 10);
    }
}
