//! A partition: one NUMA node's share of the heap's capacity, its physical
//! memory and its page cache.

use crate::NodeId;
use crate::block::{Block, Segment, coalesce};
use crate::cache::PageCache;
use hotmem_os::PhysicalMemory;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One node's part of the heap. Capacity is the memory committed (in pages
/// and in the cache); used is the memory in pages.
#[derive(Debug)]
pub(crate) struct Partition {
    pub(crate) node: NodeId,
    pub(crate) max_capacity: usize,
    pub(crate) capacity: usize,
    pub(crate) used: usize,
    pub(crate) cache: PageCache,
    pub(crate) physical: PhysicalMemory,
    granule: usize,
    /// Offsets (in the memfd) of granules that are not committed.
    uncommitted: BTreeSet<usize>,
}

impl Partition {
    pub(crate) fn new(
        node: NodeId,
        max_capacity: usize,
        granule: usize,
        physical: PhysicalMemory,
    ) -> Partition {
        Partition {
            node,
            max_capacity,
            capacity: 0,
            used: 0,
            cache: PageCache::default(),
            physical,
            granule,
            uncommitted: (0..max_capacity / granule).map(|g| g * granule).collect(),
        }
    }

    /// Takes `bytes` of uncommitted granules, lowest offsets first, as
    /// coalesced segments. The caller commits them.
    pub(crate) fn take_uncommitted(&mut self, bytes: usize) -> Vec<Segment> {
        let mut segs = Vec::new();
        for _ in 0..bytes / self.granule {
            let offset = self
                .uncommitted
                .pop_first()
                .expect("capacity below max leaves granules");
            segs.push(Segment {
                offset,
                len: self.granule,
            });
        }
        coalesce(&mut segs);
        segs
    }

    /// Gives granules back to the uncommitted pool.
    pub(crate) fn give_uncommitted(&mut self, segments: &[Segment]) {
        for s in segments {
            for g in (s.offset..s.offset + s.len).step_by(self.granule) {
                let fresh = self.uncommitted.insert(g);
                debug_assert!(fresh, "granule {g:#x} given back twice");
            }
        }
    }

    /// Bytes cached.
    pub(crate) fn cached(&self) -> usize {
        self.cache.bytes()
    }

    pub(crate) fn usage(&self) -> PartitionUsage {
        let [small, medium, large] = self.cache.counts();
        PartitionUsage {
            node: self.node,
            max_capacity: self.max_capacity,
            capacity: self.capacity,
            used: self.used,
            cached: self.cached(),
            cached_pages: CachedPages {
                small,
                medium,
                large,
            },
        }
    }

    /// Checks the bookkeeping (tests, fuzzing).
    pub(crate) fn check(&self) {
        let cached: usize = self.cache.blocks().map(Block::len).sum();
        assert_eq!(cached, self.cache.bytes(), "cache byte count");
        assert_eq!(
            self.capacity,
            self.used + cached,
            "capacity = used + cached"
        );
        assert_eq!(
            self.uncommitted.len() * self.granule,
            self.max_capacity - self.capacity,
            "uncommitted granules"
        );
        assert!(self.capacity <= self.max_capacity);
    }
}

/// Cached pages of a partition by size class.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedPages {
    /// Blocks of one small page.
    pub small: usize,
    /// Blocks of one medium page.
    pub medium: usize,
    /// Other blocks (large pages, remainders of split pages).
    pub large: usize,
}

/// How much memory one partition holds, in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionUsage {
    /// The partition's node.
    pub node: NodeId,
    /// The most it may commit.
    pub max_capacity: usize,
    /// Committed: in pages plus cached.
    pub capacity: usize,
    /// In allocated pages.
    pub used: usize,
    /// In the page cache.
    pub cached: usize,
    /// Cached pages by class.
    pub cached_pages: CachedPages,
}

/// How much memory the heap holds, in bytes, overall and per partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapUsage {
    /// The most the heap may commit.
    pub max_capacity: usize,
    /// Committed memory: mapped in pages or in the cache. This is what a
    /// native memory tracker sees as committed for the heap's tag.
    pub capacity: usize,
    /// Memory in allocated pages.
    pub used: usize,
    /// Memory in the page cache.
    pub cached: usize,
    /// Per partition.
    pub partitions: Vec<PartitionUsage>,
}
