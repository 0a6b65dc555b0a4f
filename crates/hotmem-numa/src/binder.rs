//! Thread CPU binding: the real binder (hwloc on this machine) and the
//! recording binder (synthetic topologies, which are not this machine).
//!
//! Each worker owns a [`ThreadBinder`] and only ever binds its own thread.
//! On a detected topology binding calls `hwloc_set_cpubind` with
//! `HWLOC_CPUBIND_THREAD` and reads back with `hwloc_get_cpubind`; on a
//! synthetic one the binder keeps the mask the thread would have and appends
//! every change to the pool's [`BindingEvent`] record, which tests check.

use crate::error::{BindError, BindOp};
use crate::sync::{Arc, Mutex, lock};
use crate::{CpuSet, NodeId, Topology};
use hwlocality::cpu::binding::CpuBindingFlags;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether a pool's CPU bindings reach the operating system.
///
/// Reports say which, next to every binding and locality figure: on a
/// synthetic topology the figures are what the model would do, not what a
/// thread did.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BindingKind {
    /// A detected topology: hwloc binds the worker threads
    /// (`hwloc_set_cpubind`) and the masks are read back from the OS.
    Real,
    /// A synthetic topology, a model of another machine: bindings are
    /// recorded ([`WorkerPool::binding_record`](crate::WorkerPool::binding_record)),
    /// not made, and locality is what the model says, not measured.
    Simulated,
}

impl BindingKind {
    /// The kind of binding pools on `topology` do.
    pub fn of(topology: &Topology) -> BindingKind {
        if topology.is_this_system() {
            BindingKind::Real
        } else {
            BindingKind::Simulated
        }
    }
}

impl fmt::Display for BindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BindingKind::Real => "real",
            BindingKind::Simulated => "simulated",
        })
    }
}

/// A change of a worker's CPU binding, as recorded on a synthetic topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingEvent {
    /// The phase (numbered from 1 by the pool).
    pub phase: u64,
    /// The worker's index in the pool.
    pub worker: usize,
    /// What happened.
    pub action: BindingAction,
}

/// What a worker did to its binding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BindingAction {
    /// Bound to a node's CPUs before processing its items.
    BindToNode {
        /// The node.
        node: NodeId,
        /// The node's CPUs, which the thread is now bound to.
        cpus: CpuSet,
    },
    /// Restored the binding the worker had before the phase.
    Restore {
        /// The restored mask.
        cpus: CpuSet,
    },
}

/// The shared record of a synthetic pool.
pub(crate) type Record = Arc<Mutex<Vec<BindingEvent>>>;

/// Binds the thread that owns it.
pub(crate) enum ThreadBinder {
    /// hwloc on this machine.
    Os(Topology),
    /// A synthetic topology: remembers the mask the thread would have.
    Recording {
        worker: usize,
        current: CpuSet,
        record: Record,
    },
}

impl ThreadBinder {
    /// The binder for worker `worker` of a pool on `topology`. A synthetic
    /// thread starts unbound: its mask is every CPU of the topology.
    /// `record` is the pool's record (a private one is made if a synthetic
    /// pool has none).
    pub(crate) fn new(topology: &Topology, worker: usize, record: Option<&Record>) -> Self {
        if topology.is_this_system() {
            return ThreadBinder::Os(topology.clone());
        }
        ThreadBinder::Recording {
            worker,
            current: topology.cpuset().clone(),
            record: record.cloned().unwrap_or_default(),
        }
    }

    /// The calling thread's binding: read from the OS, or the recorded one.
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Read`] if the OS cannot tell.
    pub(crate) fn read(&self) -> Result<CpuSet, BindError> {
        match self {
            ThreadBinder::Os(t) => t
                .as_hwloc()
                .cpu_binding(CpuBindingFlags::THREAD)
                .map(|s| CpuSet::from_hwloc(&s))
                .map_err(|e| BindError {
                    op: BindOp::Read,
                    target: None,
                    message: e.to_string(),
                }),
            ThreadBinder::Recording { current, .. } => Ok(current.clone()),
        }
    }

    /// Binds the calling thread to `cpus`; `action` is what the record says.
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Bind`] if the OS refuses; the binding is
    /// then unchanged.
    pub(crate) fn bind(&mut self, phase: u64, action: BindingAction) -> Result<(), BindError> {
        let cpus = match &action {
            BindingAction::BindToNode { cpus, .. } | BindingAction::Restore { cpus } => cpus,
        };
        match self {
            ThreadBinder::Os(t) => t
                .as_hwloc()
                .bind_cpu(&cpus.to_hwloc(), CpuBindingFlags::THREAD)
                .map_err(|e| BindError {
                    op: BindOp::Bind,
                    target: Some(cpus.clone()),
                    message: e.to_string(),
                }),
            ThreadBinder::Recording {
                worker,
                current,
                record,
            } => {
                current.clone_from(cpus);
                lock(record).push(BindingEvent {
                    phase,
                    worker: *worker,
                    action,
                });
                Ok(())
            }
        }
    }
}
