//! One phase as the workers see it: per-node queues, the closure, and the
//! walk each worker makes over the nodes, binding before its first item on a
//! node and restoring its original binding at the end.

use super::handoff::PhaseTask;
use super::payload::drop_payload;
use super::worker::WorkerState;
use crate::binder::Original;
use crate::error::BindError;
use crate::stats::WorkerPhaseStats;
use crate::sync::{ArrayQueue, Mutex};
use crate::topology::current_cpu;
use crate::{AffinityPolicy, CpuSet, NodeId, Topology};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// What a worker hands in at the end of a phase.
pub(crate) struct WorkerReport<R> {
    pub(crate) stats: WorkerPhaseStats,
    pub(crate) results: Vec<R>,
    pub(crate) per_node: Vec<(u64, u64)>,
    pub(crate) panic: Option<Box<dyn Any + Send>>,
}

pub(crate) struct Phase<'a, T, R, F> {
    pub(crate) number: u64,
    pub(crate) affinity: AffinityPolicy,
    pub(crate) topology: &'a Topology,
    pub(crate) queues: Vec<Option<ArrayQueue<T>>>,
    pub(crate) f: &'a F,
    pub(crate) slots: Vec<Mutex<Option<WorkerReport<R>>>>,
}

/// What an item's closure can ask about the worker running it.
pub struct WorkerContext<'a> {
    worker: usize,
    node: NodeId,
    bound: Option<NodeId>,
    state: &'a WorkerState,
}

impl WorkerContext<'_> {
    /// The worker's index in the pool.
    #[inline]
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// The worker's thread name.
    pub fn worker_name(&self) -> &str {
        &self.state.name
    }

    /// The node of the item being processed.
    #[inline]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The node the worker's thread is bound to, `None` if unbound.
    #[inline]
    pub fn bound_node(&self) -> Option<NodeId> {
        self.bound
    }

    /// The thread's CPU binding now: read back from the OS on a detected
    /// topology, the recorded one on a synthetic topology.
    ///
    /// # Errors
    /// [`BindError`] if the OS cannot tell.
    pub fn thread_binding(&self) -> Result<CpuSet, BindError> {
        self.state.binder.read()
    }
}

/// A worker's binding state during one phase.
struct Binding {
    /// The mask before the phase, read before the first binding.
    original: Option<Original>,
    bound: Option<NodeId>,
    failed: bool,
}

impl<T, R, F> Phase<'_, T, R, F>
where
    T: Send,
    R: Send,
    F: Fn(&WorkerContext<'_>, T) -> R + Sync,
{
    /// Binds `w` to `node` unless it is bound there already or cannot be.
    /// The timer covers the system calls (and the comparisons that skip
    /// them), not the report.
    fn bind_to(
        &self,
        w: &mut WorkerState,
        b: &mut Binding,
        node: NodeId,
        s: &mut WorkerPhaseStats,
    ) {
        if self.affinity == AffinityPolicy::Off || b.bound == Some(node) || b.failed {
            return;
        }
        // A memory-only node has no CPU to bind to.
        let Some(info) = self.topology.node(node).filter(|n| !n.cpuset().is_empty()) else {
            return;
        };
        let t = Instant::now();
        if b.original.is_none() {
            match w.binder.original() {
                Ok(mask) => b.original = Some(mask),
                Err(_) => {
                    // Without the original we could not restore: stay unbound.
                    s.binding_ns += t.elapsed().as_nanos() as u64;
                    b.failed = true;
                    s.bind_failures += 1;
                    return;
                }
            }
        }
        let bound = w.binder.bind_node(self.number, node, info.cpuset());
        s.binding_ns += t.elapsed().as_nanos() as u64;
        match bound {
            Ok(()) => {
                if !s.bindings.is_empty() {
                    s.rebinds += 1;
                }
                s.bindings.push((node, info.cpuset().clone()));
                b.bound = Some(node);
            }
            Err(_) => {
                s.bind_failures += 1;
                // Whatever the thread had is not this node's binding.
                b.bound = None;
            }
        }
    }

    /// Puts the original binding back and reads it back (if it changed).
    fn restore(&self, w: &mut WorkerState, b: &Binding, s: &mut WorkerPhaseStats) {
        let Some(original) = &b.original else { return };
        let t = Instant::now();
        let back = match w.binder.restore(self.number, original) {
            // Never changed: the mask read at the start is still the mask.
            Ok(false) => None,
            Ok(true) => Some(w.binder.read_back()),
            Err(_) => {
                s.bind_failures += 1;
                Some(w.binder.read_back())
            }
        };
        s.binding_ns += t.elapsed().as_nanos() as u64;
        s.original = Some(original.to_cpuset());
        s.restored = match back {
            None => s.original.clone(),
            Some(read) => read.ok().map(|mask| mask.to_cpuset()),
        };
    }

    fn work(&self, w: &mut WorkerState) -> WorkerReport<R> {
        let nodes = self.queues.len();
        let mut s = WorkerPhaseStats {
            worker: w.index,
            home: w.home,
            items: 0,
            local_items: 0,
            observed_local_items: self.topology.is_this_system().then_some(0),
            panicked_items: 0,
            visited: Vec::new(),
            bindings: Vec::new(),
            rebinds: 0,
            bind_failures: 0,
            original: None,
            restored: None,
            binding_ns: 0,
        };
        let mut per_node = vec![(0u64, 0u64); nodes];
        let mut results = Vec::new();
        let mut panic = None;
        let mut b = Binding {
            original: None,
            bound: None,
            failed: false,
        };
        for k in 0..nodes {
            let node = NodeId::new((w.home.index() + k) % nodes);
            let Some(queue) = &self.queues[node.index()] else {
                continue;
            };
            let mut local = false;
            let mut first = true;
            while let Some(item) = queue.pop() {
                if first {
                    first = false;
                    s.visited.push(node);
                    self.bind_to(w, &mut b, node, &mut s);
                    local = match b.bound {
                        Some(bound) => bound == node,
                        // Unbound: local only if the mask it runs under lies
                        // within the node (a one-node machine).
                        None => self
                            .topology
                            .node(node)
                            .is_some_and(|n| w.unbound_mask.is_subset(n.cpuset())),
                    };
                }
                let ctx = WorkerContext {
                    worker: w.index,
                    node,
                    bound: b.bound,
                    state: w,
                };
                match catch_unwind(AssertUnwindSafe(|| (self.f)(&ctx, item))) {
                    Ok(r) => results.push(r),
                    Err(p) => {
                        s.panicked_items += 1;
                        // Keep the first payload; drop the others without
                        // letting their `Drop` unwind out of the phase.
                        if panic.is_none() {
                            panic = Some(p);
                        } else {
                            drop_payload(p);
                        }
                    }
                }
                if let Some(observed) = &mut s.observed_local_items {
                    if self.topology.node_of_cpu(current_cpu()) == Some(node) {
                        *observed += 1;
                    }
                }
                s.items += 1;
                per_node[node.index()].0 += 1;
                if local {
                    s.local_items += 1;
                    per_node[node.index()].1 += 1;
                }
            }
        }
        self.restore(w, &b, &mut s);
        WorkerReport {
            stats: s,
            results,
            per_node,
            panic,
        }
    }
}

impl<T, R, F> PhaseTask<WorkerState> for Phase<'_, T, R, F>
where
    T: Send,
    R: Send,
    F: Fn(&WorkerContext<'_>, T) -> R + Sync,
{
    /// Works, restores the binding, writes the report. The ticket this runs
    /// under counts the phase down after this returns.
    fn run(&self, w: &mut WorkerState) {
        let report = self.work(w);
        *self.slots[w.index].lock() = Some(report);
    }
}
