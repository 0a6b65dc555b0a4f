//! [`PhaseWork`]: the items of a phase, grouped by node.

use crate::error::UnknownNode;
use crate::sync::ArrayQueue;
use crate::{NodeId, Topology};

/// The work items of one phase, grouped by the node whose memory each one
/// works on (for relocation: the node holding the page).
#[derive(Debug)]
pub struct PhaseWork<T> {
    per_node: Vec<Vec<T>>,
}

impl<T> PhaseWork<T> {
    /// No items yet, for the nodes of `topology`.
    pub fn new(topology: &Topology) -> Self {
        PhaseWork {
            per_node: (0..topology.node_count()).map(|_| Vec::new()).collect(),
        }
    }

    /// Adds `item`, to be processed on `node`.
    ///
    /// # Errors
    /// [`UnknownNode`], handing the item back, if the topology has no `node`.
    pub fn push(&mut self, node: NodeId, item: T) -> Result<(), UnknownNode<T>> {
        match self.per_node.get_mut(node.index()) {
            Some(q) => {
                q.push(item);
                Ok(())
            }
            None => Err(UnknownNode { node, item }),
        }
    }

    /// Number of items, all nodes.
    pub fn len(&self) -> usize {
        self.per_node.iter().map(Vec::len).sum()
    }

    /// Whether there is no item.
    pub fn is_empty(&self) -> bool {
        self.per_node.iter().all(Vec::is_empty)
    }

    /// Number of items for `node` (0 for a node the topology lacks).
    pub fn items_on(&self, node: NodeId) -> usize {
        self.per_node.get(node.index()).map_or(0, Vec::len)
    }

    /// Number of nodes the work is grouped by.
    pub fn node_count(&self) -> usize {
        self.per_node.len()
    }

    /// One lock-free queue per node that has items.
    pub(crate) fn into_queues(self) -> Vec<Option<ArrayQueue<T>>> {
        self.per_node
            .into_iter()
            .map(|items| {
                if items.is_empty() {
                    return None;
                }
                let q = ArrayQueue::new(items.len());
                for item in items {
                    // Capacity is the item count: a push cannot fail.
                    if q.push(item).is_err() {
                        unreachable!("queue sized for its items");
                    }
                }
                Some(q)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn groups_by_node_and_hands_back_unknown_nodes() {
        let t = Topology::synthetic("pack:2 numa:1 core:1 pu:1").unwrap();
        let mut w = PhaseWork::new(&t);
        assert!(w.is_empty());
        w.push(NodeId::new(0), "a").unwrap();
        w.push(NodeId::new(1), "b").unwrap();
        w.push(NodeId::new(1), "c").unwrap();
        let e = w.push(NodeId::new(2), "lost?").unwrap_err();
        assert_eq!((e.node, e.item), (NodeId::new(2), "lost?"));
        assert_eq!((w.len(), w.items_on(NodeId::new(1))), (3, 2));
        let q = w.into_queues();
        assert_eq!(q[0].as_ref().map(ArrayQueue::len), Some(1));
        assert_eq!(q[1].as_ref().map(ArrayQueue::len), Some(2));
    }
}
