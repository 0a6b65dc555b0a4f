//! [`NodeId`] and [`NodeInfo`]: what the rest of the crate knows about a node.
//!
//! [`NodeId`] is `hotmem_os::NodeId`, the one node number of every hotmem
//! crate: a node's dense position in [`Topology::nodes`](crate::Topology::nodes),
//! `0..node_count()`; the operating system's own number for the node is
//! [`NodeInfo::os_index`].

use crate::CpuSet;
pub use hotmem_os::NodeId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One NUMA node: its CPUs and its memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub(crate) id: NodeId,
    pub(crate) os_index: u32,
    pub(crate) cpuset: CpuSet,
    pub(crate) memory_bytes: Option<u64>,
}

impl NodeInfo {
    /// The node's id in its topology.
    #[inline]
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The operating system's number for the node (`/sys/devices/system/node/nodeN`).
    #[inline]
    pub fn os_index(&self) -> u32 {
        self.os_index
    }

    /// The CPUs local to the node. Empty for a memory-only node (HBM, CXL),
    /// which workers cannot bind to.
    #[inline]
    pub fn cpuset(&self) -> &CpuSet {
        &self.cpuset
    }

    /// The node's local memory in bytes, where the topology knows it.
    #[inline]
    pub fn memory_bytes(&self) -> Option<u64> {
        self.memory_bytes
    }
}

impl fmt::Display for NodeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (os {}): cpus {} ({})",
            self.id,
            self.os_index,
            self.cpuset,
            self.cpuset.len()
        )?;
        match self.memory_bytes {
            Some(b) => write!(f, ", memory {:.1} GiB", b as f64 / (1u64 << 30) as f64),
            None => f.write_str(", memory unknown"),
        }
    }
}
