//! Typed errors, one per kind of operation. None of them exposes hwloc types:
//! hwloc's own message is kept as text where it adds something.

use crate::{CpuSet, NodeId};
use std::fmt;

/// Why a [`Topology`](crate::Topology) could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// hwloc could not discover this machine.
    Detect {
        /// hwloc's message.
        message: String,
    },
    /// The synthetic description is not one hwloc accepts.
    InvalidDescription {
        /// The description as given.
        description: String,
        /// What is wrong with it.
        reason: InvalidDescription,
    },
    /// The topology has no NUMA node (hwloc 2 always reports at least one;
    /// kept so that a broken library is an error, not a panic).
    NoNumaNodes,
}

/// What is wrong with a synthetic topology description.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidDescription {
    /// It contains a NUL character.
    ContainsNul,
    /// hwloc's parser rejected it (unknown level, zero arity, bad attribute...).
    Rejected,
    /// hwloc accepted it but could not build a topology from it.
    Unbuildable,
    /// It describes more than [`MAX_SYNTHETIC_PUS`](crate::MAX_SYNTHETIC_PUS)
    /// processing units, or gives one level more than
    /// [`MAX_SYNTHETIC_ARITY`](crate::MAX_SYNTHETIC_ARITY) children per
    /// object (checked before hwloc builds anything, so that a description
    /// can make it neither allocate nor compute without bound).
    TooLarge,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Detect { message } => {
                write!(f, "hwloc could not detect the topology: {message}")
            }
            TopologyError::InvalidDescription {
                description,
                reason,
            } => {
                let why = match reason {
                    InvalidDescription::ContainsNul => "contains a NUL character",
                    InvalidDescription::Rejected => "rejected by hwloc's parser",
                    InvalidDescription::Unbuildable => "accepted but not buildable",
                    InvalidDescription::TooLarge => {
                        "too many processing units, or too many children per object"
                    }
                };
                write!(f, "invalid synthetic topology {description:?}: {why}")
            }
            TopologyError::NoNumaNodes => f.write_str("the topology has no NUMA node"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// Which side of a thread CPU binding failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindOp {
    /// Reading the thread's binding back (`hwloc_get_cpubind`).
    Read,
    /// Binding the thread (`hwloc_set_cpubind`).
    Bind,
}

/// A thread CPU binding failed on the real topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindError {
    pub(crate) op: BindOp,
    pub(crate) target: Option<CpuSet>,
    pub(crate) message: String,
}

impl BindError {
    /// Which operation failed.
    pub fn op(&self) -> BindOp {
        self.op
    }

    /// The set the thread was to be bound to, for [`BindOp::Bind`].
    pub fn target(&self) -> Option<&CpuSet> {
        self.target.as_ref()
    }
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.op, &self.target) {
            (BindOp::Bind, Some(t)) => write!(f, "binding the thread to cpus {t} failed: "),
            (BindOp::Bind, None) => f.write_str("binding the thread failed: "),
            (BindOp::Read, _) => f.write_str("reading the thread's binding failed: "),
        }?;
        f.write_str(&self.message)
    }
}

impl std::error::Error for BindError {}

/// Why memory binding is not available.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryUnsupported {
    /// The topology is synthetic: it does not describe this machine, so
    /// nothing can be bound to its nodes.
    NotThisSystem,
    /// The operating system (or a sandbox in front of it, such as a seccomp
    /// filter refusing `mbind`) does not bind or locate memory areas.
    Os,
}

/// Binding a memory range to a node failed; the range's policy is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryBindError {
    /// Memory binding is not available here.
    Unsupported(MemoryUnsupported),
    /// The node is not in the topology.
    UnknownNode(NodeId),
    /// The range has no bytes.
    EmptyRange,
    /// The system refused the binding (for example, a node without memory).
    Rejected {
        /// The node asked for.
        node: NodeId,
        /// hwloc's message.
        message: String,
    },
}

impl fmt::Display for MemoryBindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryBindError::Unsupported(MemoryUnsupported::NotThisSystem) => {
                f.write_str("memory binding is unsupported: the topology is synthetic")
            }
            MemoryBindError::Unsupported(MemoryUnsupported::Os) => {
                f.write_str("memory binding is unsupported by the operating system")
            }
            MemoryBindError::UnknownNode(n) => write!(f, "{n} is not in the topology"),
            MemoryBindError::EmptyRange => f.write_str("cannot bind an empty range"),
            MemoryBindError::Rejected { node, message } => {
                write!(f, "binding memory to {node} was refused: {message}")
            }
        }
    }
}

impl std::error::Error for MemoryBindError {}

/// Locating a thread or an address failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LocateError {
    /// The topology is synthetic: this machine's threads and memory are not on
    /// its nodes.
    NotThisSystem,
    /// The operating system cannot tell (or refuses to).
    Unsupported,
    /// The range to locate has no bytes.
    EmptyRange,
    /// The thread runs on a CPU that no node of the topology holds (the
    /// topology was built before a CPU came online).
    UnknownCpu(usize),
}

impl fmt::Display for LocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocateError::NotThisSystem => {
                f.write_str("cannot locate on a synthetic topology: it is not this machine")
            }
            LocateError::Unsupported => f.write_str("the operating system cannot tell"),
            LocateError::EmptyRange => f.write_str("cannot locate an empty range"),
            LocateError::UnknownCpu(c) => write!(f, "cpu {c} belongs to no node of the topology"),
        }
    }
}

impl std::error::Error for LocateError {}

/// An item was pushed for a node that the topology does not have; the item
/// is handed back.
#[derive(Clone, PartialEq, Eq)]
pub struct UnknownNode<T> {
    /// The node asked for.
    pub node: NodeId,
    /// The item, untouched.
    pub item: T,
}

impl<T> fmt::Debug for UnknownNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnknownNode")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for UnknownNode<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "work item for {}, which the topology does not have",
            self.node
        )
    }
}

impl<T> std::error::Error for UnknownNode<T> {}

/// The system call a [`KernelError`] comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelCall {
    /// `move_pages` (asking where pages are).
    MovePages,
    /// `getcpu`.
    GetCpu,
    /// `sched_getaffinity`.
    SchedGetAffinity,
    /// `sched_setaffinity`.
    SchedSetAffinity,
    /// `get_mempolicy`.
    GetMempolicy,
}

/// A [`kernel`](crate::kernel) query the kernel refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// The call.
    pub call: KernelCall,
    /// Its errno.
    pub errno: i32,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} failed: {}",
            self.call,
            std::io::Error::from_raw_os_error(self.errno)
        )
    }
}

impl std::error::Error for KernelError {}
