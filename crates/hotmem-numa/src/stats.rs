//! Per-phase statistics: plain data (serde) and a text report.

use crate::{AffinityPolicy, BindingKind, CpuSet, NodeId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What one phase did, per node and per worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    /// The phase number (from 1, per pool).
    pub phase: u64,
    /// The pool's affinity policy.
    pub affinity: AffinityPolicy,
    /// Whether bindings reached the OS (detected topology) or were only
    /// recorded (synthetic topology): every binding and locality figure
    /// below is simulated in the latter case.
    pub binding: BindingKind,
    /// Items per node, with how many of them were local.
    pub nodes: Vec<NodePhaseStats>,
    /// One entry per worker.
    pub workers: Vec<WorkerPhaseStats>,
    /// Wall time of the phase, from dispatch to the last worker's report.
    pub wall_ns: u64,
    /// Items still queued when the phase ended (0 unless a worker thread is
    /// gone; they are dropped).
    pub left_in_queues: u64,
}

/// One node's share of a phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePhaseStats {
    /// The node.
    pub node: NodeId,
    /// Items submitted for the node (and processed: queues are drained).
    pub items: u64,
    /// Of those, items processed by a worker bound to the node.
    pub local_items: u64,
}

/// One worker's share of a phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerPhaseStats {
    /// The worker's index in the pool.
    pub worker: usize,
    /// The node the worker starts each phase on.
    pub home: NodeId,
    /// Items it processed (including those whose closure panicked).
    pub items: u64,
    /// Of those, items of the node its thread was bound to.
    pub local_items: u64,
    /// On a detected topology: items during which the thread was found
    /// (by `getcpu`) on a CPU of the item's node. `None` when synthetic.
    pub observed_local_items: Option<u64>,
    /// Items whose closure panicked.
    pub panicked_items: u64,
    /// The nodes whose queues it took items from, in order.
    pub visited: Vec<NodeId>,
    /// The bindings it made, in order: node and CPUs.
    pub bindings: Vec<(NodeId, CpuSet)>,
    /// Bindings after its first in this phase.
    pub rebinds: u32,
    /// Bindings (or reads of the original binding) that failed.
    pub bind_failures: u32,
    /// The mask it had before its first binding (`None` if it never bound).
    pub original: Option<CpuSet>,
    /// The mask read back after restoring it (`None` if it never bound);
    /// when the phase never changed the mask (it already was the node's),
    /// nothing was restored and this is the mask read at the start.
    pub restored: Option<CpuSet>,
    /// Time spent in the system calls that read, bind, restore and read
    /// back (and the mask comparisons that skip them); building this report
    /// is not counted.
    pub binding_ns: u64,
}

impl WorkerPhaseStats {
    /// Whether the worker ended the phase with the mask it started with.
    pub fn restored_original(&self) -> bool {
        self.original == self.restored
    }
}

impl PhaseStats {
    /// All items of the phase.
    pub fn items(&self) -> u64 {
        self.nodes.iter().map(|n| n.items).sum()
    }

    /// Items processed by a worker bound to the item's node.
    pub fn local_items(&self) -> u64 {
        self.nodes.iter().map(|n| n.local_items).sum()
    }

    /// `local_items / items`, 1.0 for an empty phase.
    pub fn locality_ratio(&self) -> f64 {
        ratio(self.local_items(), self.items())
    }

    /// On a detected topology, the share of items during which the worker
    /// was seen on a CPU of the item's node (bound or not).
    pub fn observed_locality_ratio(&self) -> Option<f64> {
        let mut sum = 0;
        for w in &self.workers {
            sum += w.observed_local_items?;
        }
        Some(ratio(sum, self.items()))
    }

    /// Bindings to nodes, all workers.
    pub fn binds(&self) -> u64 {
        self.workers.iter().map(|w| w.bindings.len() as u64).sum()
    }

    /// Rebindings (bindings after a worker's first), all workers.
    pub fn rebinds(&self) -> u64 {
        self.workers.iter().map(|w| u64::from(w.rebinds)).sum()
    }

    /// Restores of an original binding, all workers.
    pub fn restores(&self) -> u64 {
        self.workers.iter().filter(|w| w.original.is_some()).count() as u64
    }

    /// Failed bindings, all workers.
    pub fn bind_failures(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| u64::from(w.bind_failures))
            .sum()
    }

    /// Time spent binding and restoring, all workers.
    pub fn binding_ns(&self) -> u64 {
        self.workers.iter().map(|w| w.binding_ns).sum()
    }

    /// Items whose closure panicked.
    pub fn panicked_items(&self) -> u64 {
        self.workers.iter().map(|w| w.panicked_items).sum()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// The text report. On a synthetic topology every binding and locality
/// figure carries "simulated": the bindings were recorded, not made.
impl fmt::Display for PhaseStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sim = match self.binding {
            BindingKind::Real => "",
            BindingKind::Simulated => " simulated",
        };
        writeln!(
            f,
            "phase {} ({:?}, {}): {} items, {} workers, locality {:.1}%{sim}{}, {} binds{sim}, {} rebinds, {} restores, {:.1} us binding, wall {:.1} us",
            self.phase,
            self.affinity,
            match self.binding {
                BindingKind::Real => "real bindings",
                BindingKind::Simulated => "simulated bindings: recorded, not made",
            },
            self.items(),
            self.workers.len(),
            100.0 * self.locality_ratio(),
            match self.observed_locality_ratio() {
                Some(r) => format!(" (observed on node's cpus {:.1}%)", 100.0 * r),
                None => String::new(),
            },
            self.binds(),
            self.rebinds(),
            self.restores(),
            self.binding_ns() as f64 / 1e3,
            self.wall_ns as f64 / 1e3,
        )?;
        if self.bind_failures() > 0 || self.panicked_items() > 0 || self.left_in_queues > 0 {
            writeln!(
                f,
                "  {} bind failures, {} panicked items, {} left in queues",
                self.bind_failures(),
                self.panicked_items(),
                self.left_in_queues
            )?;
        }
        for n in &self.nodes {
            writeln!(
                f,
                "  {}: {} items, {} local ({:.1}%{sim})",
                n.node,
                n.items,
                n.local_items,
                100.0 * ratio(n.local_items, n.items)
            )?;
        }
        for w in &self.workers {
            write!(
                f,
                "  worker {} (home {}): {} items, {} local, visited {:?}",
                w.worker, w.home, w.items, w.local_items, w.visited
            )?;
            if w.bindings.is_empty() {
                f.write_str(", unbound")?;
            } else {
                write!(f, ",{sim} bound to")?;
                for (node, cpus) in &w.bindings {
                    write!(f, " {node}={cpus}")?;
                }
                if let (Some(o), Some(r)) = (&w.original, &w.restored) {
                    write!(f, ", original {o}, restored {r}")?;
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
