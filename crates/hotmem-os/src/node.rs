//! [`NodeId`]: the one NUMA node number every hotmem crate speaks.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A NUMA node, by its dense position `0..node_count` in the topology the
/// embedder uses (the operating system's own number for a node may differ;
/// `hotmem-numa` keeps that mapping). Without NUMA everything is node 0.
///
/// Defined here, in the crate every component depends on, so that the heap's
/// partitions, the NUMA worker pools and the facade name nodes with one type.
///
/// ```
/// use hotmem_os::NodeId;
/// let n = NodeId::new(3);
/// assert_eq!(n.index(), 3);
/// assert_eq!(NodeId::try_new(70_000), None);
/// assert_eq!(n.to_string(), "node3");
/// ```
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(u16);

impl NodeId {
    /// Node 0, the only node of a machine without NUMA.
    pub const ZERO: NodeId = NodeId(0);

    /// The node at position `index`.
    ///
    /// # Panics
    /// If `index` does not fit in 16 bits (no machine has that many nodes);
    /// [`NodeId::try_new`] returns `None` instead.
    #[inline]
    pub fn new(index: usize) -> Self {
        Self::try_new(index).expect("NUMA node index above 65535")
    }

    /// The node at position `index`, or `None` if it does not fit in 16 bits.
    #[inline]
    pub fn try_new(index: usize) -> Option<Self> {
        u16::try_from(index).ok().map(NodeId)
    }

    /// The node's position in its topology.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}
