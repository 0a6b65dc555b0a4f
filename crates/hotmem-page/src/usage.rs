//! What the heap holds: capacity, used and cached memory, per partition
//! and overall, as plain data.

use crate::NodeId;
use serde::{Deserialize, Serialize};

/// What a partition's cache holds, by size: pages in the page cache,
/// ranges in the mapped cache (where freed neighbours merged into one).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedPages {
    /// Blocks (pages or ranges) of exactly one small page.
    pub small: usize,
    /// Blocks of exactly one medium page.
    pub medium: usize,
    /// Other blocks (large pages, remainders of split pages, merged ranges).
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
    /// In the cache.
    pub cached: usize,
    /// Cached blocks by size.
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
    /// Memory in the cache (mapped cache or page cache).
    pub cached: usize,
    /// Per partition.
    pub partitions: Vec<PartitionUsage>,
}
