//! Thread CPU binding: the real binder (hwloc on this machine) and the
//! recording binder (synthetic topologies, which are not this machine).
//!
//! Each worker owns a [`ThreadBinder`] and only ever binds its own thread.
//! On a detected topology the node masks come from hwloc and are turned
//! into kernel CPU masks once, when the worker starts; a phase then costs
//! one `sched_getaffinity` (the original mask), one `sched_setaffinity` per
//! change of binding, none when the thread's mask already is the node's
//! (a one-node machine, or a worker bound by its embedder), and one read
//! back after a restore that changed something: the system calls that
//! `hwloc_set_cpubind(HWLOC_CPUBIND_THREAD)` makes on Linux, without its
//! per-call bitmap allocations and conversions, and with no allocation at
//! all. Masks that do not fit the kernel mask type (CPU indices past
//! [`KernelMask::MAX_CPU`]) go through hwloc. On a synthetic topology the
//! binder keeps the mask the thread would have and appends every change to
//! the pool's [`BindingEvent`] record, which tests check.

use crate::error::{BindError, BindOp};
use crate::sync::{Arc, Mutex};
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
    /// A detected topology: the worker threads are bound by the OS
    /// (`sched_setaffinity`, hwloc past 1024 CPUs) and the masks are read
    /// back from it.
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

/// The kernel's CPU mask (`cpu_set_t`): fixed size, no allocation.
pub(crate) type KernelMask = rustix::thread::CpuSet;

/// `set` as a kernel mask, if every CPU of it fits one.
fn kernel_mask(set: &CpuSet) -> Option<KernelMask> {
    let mut mask = KernelMask::new();
    for cpu in set.iter() {
        if cpu >= KernelMask::MAX_CPU {
            return None;
        }
        mask.set(cpu);
    }
    Some(mask)
}

fn from_kernel(mask: &KernelMask) -> CpuSet {
    (0..KernelMask::MAX_CPU)
        .filter(|&c| mask.is_set(c))
        .collect()
}

/// The thread's binding when a phase began, to restore at its end.
pub(crate) enum Original {
    /// Read from the kernel (a detected topology).
    Kernel(KernelMask),
    /// Read through hwloc, or recorded (a synthetic topology).
    Set(CpuSet),
}

impl Original {
    /// As a [`CpuSet`], for reports (allocates).
    pub(crate) fn to_cpuset(&self) -> CpuSet {
        match self {
            Original::Kernel(mask) => from_kernel(mask),
            Original::Set(set) => set.clone(),
        }
    }
}

/// The real binder's state: the nodes' masks, converted once, and what it
/// knows the thread's mask to be.
pub(crate) struct OsBinder {
    topology: Topology,
    /// Each node's CPUs as a kernel mask (`None`: no CPU, or one past the
    /// kernel mask's size, which goes through hwloc).
    node_masks: Vec<Option<KernelMask>>,
    /// The thread's mask as last read or set by this binder (only the
    /// thread itself binds it; `None` after a change through hwloc).
    current: Option<KernelMask>,
}

/// Binds the thread that owns it.
pub(crate) enum ThreadBinder {
    /// This machine: the kernel, or hwloc for masks the kernel type cannot
    /// hold.
    Os(OsBinder),
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
            let node_masks = topology
                .nodes()
                .iter()
                .map(|n| {
                    (!n.cpuset().is_empty())
                        .then(|| kernel_mask(n.cpuset()))
                        .flatten()
                })
                .collect();
            return ThreadBinder::Os(OsBinder {
                topology: topology.clone(),
                node_masks,
                current: None,
            });
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
            ThreadBinder::Os(os) => os
                .topology
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
            ThreadBinder::Os(os) => {
                os.current = None;
                os.topology
                    .as_hwloc()
                    .bind_cpu(&cpus.to_hwloc(), CpuBindingFlags::THREAD)
                    .map_err(|e| BindError {
                        op: BindOp::Bind,
                        target: Some(cpus.clone()),
                        message: e.to_string(),
                    })
            }
            ThreadBinder::Recording {
                worker,
                current,
                record,
            } => {
                current.clone_from(cpus);
                record.lock().push(BindingEvent {
                    phase,
                    worker: *worker,
                    action,
                });
                Ok(())
            }
        }
    }
}

impl ThreadBinder {
    /// The calling thread's binding at the start of a phase: one
    /// `sched_getaffinity` on this machine (no allocation), the recorded
    /// mask on a synthetic topology.
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Read`] if the OS cannot tell.
    pub(crate) fn original(&mut self) -> Result<Original, BindError> {
        match self {
            ThreadBinder::Os(os) => match rustix::thread::sched_getaffinity(None) {
                Ok(mask) => {
                    os.current = Some(mask);
                    Ok(Original::Kernel(mask))
                }
                Err(e) => Err(BindError {
                    op: BindOp::Read,
                    target: None,
                    message: e.to_string(),
                }),
            },
            ThreadBinder::Recording { current, .. } => Ok(Original::Set(current.clone())),
        }
    }

    /// The calling thread's binding, read back after a restore: one
    /// `sched_getaffinity` on this machine, the recorded mask on a synthetic
    /// topology.
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Read`] if the OS cannot tell.
    pub(crate) fn read_back(&mut self) -> Result<Original, BindError> {
        self.original()
    }

    /// Binds the calling thread to node `node`, whose CPUs are `cpus`: no
    /// system call if the thread's mask already is the node's, one
    /// `sched_setaffinity` otherwise (hwloc for masks the kernel type cannot
    /// hold). A synthetic topology records it like [`ThreadBinder::bind`].
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Bind`] if the OS refuses; the binding is
    /// then unchanged.
    pub(crate) fn bind_node(
        &mut self,
        phase: u64,
        node: NodeId,
        cpus: &CpuSet,
    ) -> Result<(), BindError> {
        if let ThreadBinder::Os(os) = self {
            if let Some(Some(mask)) = os.node_masks.get(node.index()) {
                if os.current.as_ref() == Some(mask) {
                    return Ok(());
                }
                return match rustix::thread::sched_setaffinity(None, mask) {
                    Ok(()) => {
                        os.current = Some(*mask);
                        Ok(())
                    }
                    Err(e) => Err(BindError {
                        op: BindOp::Bind,
                        target: Some(cpus.clone()),
                        message: e.to_string(),
                    }),
                };
            }
        }
        self.bind(
            phase,
            BindingAction::BindToNode {
                node,
                cpus: cpus.clone(),
            },
        )
    }

    /// Puts `original` back: no system call if the thread's mask is still
    /// the original, one `sched_setaffinity` otherwise. Returns whether the
    /// mask changed (a read-back is worth its system call then).
    ///
    /// # Errors
    /// [`BindError`] with [`BindOp::Bind`] if the OS refuses.
    pub(crate) fn restore(&mut self, phase: u64, original: &Original) -> Result<bool, BindError> {
        if let (ThreadBinder::Os(os), Original::Kernel(mask)) = (&mut *self, original) {
            if os.current.as_ref() == Some(mask) {
                return Ok(false);
            }
            return match rustix::thread::sched_setaffinity(None, mask) {
                Ok(()) => {
                    os.current = Some(*mask);
                    Ok(true)
                }
                Err(e) => Err(BindError {
                    op: BindOp::Bind,
                    target: Some(from_kernel(mask)),
                    message: e.to_string(),
                }),
            };
        }
        self.bind(
            phase,
            BindingAction::Restore {
                cpus: original.to_cpuset(),
            },
        )
        .map(|()| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_masks_round_trip_and_refuse_what_they_cannot_hold() {
        let set: CpuSet = [0, 3, 64, 1000].into_iter().collect();
        let mask = kernel_mask(&set).unwrap();
        assert_eq!(from_kernel(&mask), set);
        assert!(kernel_mask(&[KernelMask::MAX_CPU].into_iter().collect()).is_none());
        assert_eq!(Original::Kernel(mask).to_cpuset(), set);
    }
}
