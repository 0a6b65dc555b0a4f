//! Typed errors, one per kind of operation. None of them exposes hwloc types:
//! hwloc's own message is kept as text where it adds something.

use crate::{CpuSet, NodeId};
use std::fmt;
use thiserror::Error;

/// Why a [`Topology`](crate::Topology) could not be built.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// hwloc could not discover this machine.
    #[error("hwloc could not detect the topology: {message}")]
    Detect {
        /// hwloc's message.
        message: String,
    },
    /// The synthetic description is not one hwloc accepts.
    #[error("invalid synthetic topology {description:?}: {}", what_is_wrong(.reason))]
    InvalidDescription {
        /// The description as given.
        description: String,
        /// What is wrong with it.
        reason: InvalidDescription,
    },
    /// The topology has no NUMA node (hwloc 2 always reports at least one;
    /// kept so that a broken library is an error, not a panic).
    #[error("the topology has no NUMA node")]
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

/// How [`TopologyError::InvalidDescription`] words its reason.
fn what_is_wrong(reason: &InvalidDescription) -> &'static str {
    match reason {
        InvalidDescription::ContainsNul => "contains a NUL character",
        InvalidDescription::Rejected => "rejected by hwloc's parser",
        InvalidDescription::Unbuildable => "accepted but not buildable",
        InvalidDescription::TooLarge => {
            "too many processing units, or too many children per object"
        }
    }
}

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
#[derive(Clone, Debug, PartialEq, Eq, Error)]
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

// Written by hand: the first half of the message depends on the operation
// and on whether there is a target, which thiserror can only express for
// enums (`#[error(fmt = ...)]`).
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
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MemoryBindError {
    /// Memory binding is not available here.
    #[error("{}", unsupported(.0))]
    Unsupported(MemoryUnsupported),
    /// The node is not in the topology.
    #[error("{0} is not in the topology")]
    UnknownNode(NodeId),
    /// The range has no bytes.
    #[error("cannot bind an empty range")]
    EmptyRange,
    /// The system refused the binding (for example, a node without memory).
    #[error("binding memory to {node} was refused: {message}")]
    Rejected {
        /// The node asked for.
        node: NodeId,
        /// hwloc's message.
        message: String,
    },
}

/// How [`MemoryBindError::Unsupported`] words its reason.
fn unsupported(why: &MemoryUnsupported) -> &'static str {
    match why {
        MemoryUnsupported::NotThisSystem => {
            "memory binding is unsupported: the topology is synthetic"
        }
        MemoryUnsupported::Os => "memory binding is unsupported by the operating system",
    }
}

/// Locating a thread or an address failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LocateError {
    /// The topology is synthetic: this machine's threads and memory are not on
    /// its nodes.
    #[error("cannot locate on a synthetic topology: it is not this machine")]
    NotThisSystem,
    /// The operating system cannot tell (or refuses to).
    #[error("the operating system cannot tell")]
    Unsupported,
    /// The range to locate has no bytes.
    #[error("cannot locate an empty range")]
    EmptyRange,
    /// The thread runs on a CPU that no node of the topology holds (the
    /// topology was built before a CPU came online).
    #[error("cpu {0} belongs to no node of the topology")]
    UnknownCpu(usize),
}

/// An item was pushed for a node that the topology does not have; the item
/// is handed back.
#[derive(Clone, PartialEq, Eq, Error)]
#[error("work item for {node}, which the topology does not have")]
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
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[error("{call:?} failed: {}", std::io::Error::from_raw_os_error(*.errno))]
pub struct KernelError {
    /// The call.
    pub call: KernelCall,
    /// Its errno.
    pub errno: i32,
}
