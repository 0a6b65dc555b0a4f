//! The allocator's event counters, and their plain-data snapshot.

use crate::PageType;
use crate::cache::CacheHit;
use crate::sync::{AtomicU64, Ordering};
use serde::{Deserialize, Serialize};

/// Monotonic counters, bumped on slow paths only.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    page_bytes_allocated: AtomicU64,
    pages_allocated: [AtomicU64; 3],
    pages_installed: [AtomicU64; 3],
    undo_ops: [AtomicU64; 3],
    undo_bytes: AtomicU64,
    pages_freed: AtomicU64,
    cache_flush_bytes: AtomicU64,
    cache_flush_ops: AtomicU64,
    cache_hits: AtomicU64,
    cache_splits: AtomicU64,
    cache_merges: AtomicU64,
    defragment_ops: AtomicU64,
    uncommit_bytes: AtomicU64,
    commit_bytes: AtomicU64,
}

fn inc(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn page_allocated(&self, t: PageType, bytes: usize) {
        inc(&self.page_bytes_allocated, bytes as u64);
        inc(&self.pages_allocated[t.index()], 1);
    }
    pub(crate) fn page_installed(&self, t: PageType) {
        inc(&self.pages_installed[t.index()], 1);
    }
    pub(crate) fn undo(&self, t: PageType, bytes: usize) {
        inc(&self.undo_ops[t.index()], 1);
        inc(&self.undo_bytes, bytes as u64);
    }
    pub(crate) fn freed(&self) {
        inc(&self.pages_freed, 1);
    }
    pub(crate) fn flushed(&self, bytes: usize) {
        inc(&self.cache_flush_bytes, bytes as u64);
        inc(&self.cache_flush_ops, 1);
    }
    pub(crate) fn cache_hit(&self, hit: CacheHit) {
        inc(&self.cache_hits, 1);
        if hit == CacheHit::Split {
            inc(&self.cache_splits, 1);
        }
    }
    pub(crate) fn merged(&self, merges: usize) {
        if merges > 0 {
            inc(&self.cache_merges, merges as u64);
        }
    }
    pub(crate) fn defragmented(&self) {
        inc(&self.defragment_ops, 1);
    }
    pub(crate) fn committed(&self, bytes: usize) {
        inc(&self.commit_bytes, bytes as u64);
    }
    pub(crate) fn uncommitted(&self, bytes: usize) {
        inc(&self.uncommit_bytes, bytes as u64);
    }

    pub(crate) fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let per = |a: &[AtomicU64; 3]| PerType {
            small: get(&a[0]),
            medium: get(&a[1]),
            large: get(&a[2]),
        };
        CounterSnapshot {
            page_bytes_allocated: get(&self.page_bytes_allocated),
            pages_allocated: per(&self.pages_allocated),
            pages_installed: per(&self.pages_installed),
            undo_ops: per(&self.undo_ops),
            undo_bytes: get(&self.undo_bytes),
            pages_freed: get(&self.pages_freed),
            cache_flush_bytes: get(&self.cache_flush_bytes),
            cache_flush_ops: get(&self.cache_flush_ops),
            cache_hits: get(&self.cache_hits),
            cache_splits: get(&self.cache_splits),
            cache_merges: get(&self.cache_merges),
            defragment_ops: get(&self.defragment_ops),
            commit_bytes: get(&self.commit_bytes),
            uncommit_bytes: get(&self.uncommit_bytes),
        }
    }
}

/// One number per page type.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerType {
    /// Small pages.
    pub small: u64,
    /// Medium pages.
    pub medium: u64,
    /// Large pages.
    pub large: u64,
}

impl PerType {
    /// The sum over the three types.
    pub fn total(&self) -> u64 {
        self.small + self.medium + self.large
    }

    /// The count for `t`.
    pub fn get(&self, t: PageType) -> u64 {
        match t {
            PageType::Small => self.small,
            PageType::Medium => self.medium,
            PageType::Large => self.large,
        }
    }
}

/// The counters at one moment, totals since the heap was created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSnapshot {
    /// Bytes of pages allocated, undone ones included (ZGC's Allocation Rate).
    pub page_bytes_allocated: u64,
    /// Pages allocated, by type.
    pub pages_allocated: PerType,
    /// Pages installed as shared pages by object allocators, by type.
    pub pages_installed: PerType,
    /// Page allocations undone, by type (Undo Page Allocation).
    pub undo_ops: PerType,
    /// Bytes of undone page allocations.
    pub undo_bytes: u64,
    /// Pages freed.
    pub pages_freed: u64,
    /// Bytes of cached memory whose physical memory was remapped into a new
    /// page on the allocation path: the mapped cache's harvests, the page
    /// cache's flushes (Page Cache Flush).
    pub cache_flush_bytes: u64,
    /// Allocations that had to harvest (flush) the cache: no single cached
    /// range (page) fitted.
    pub cache_flush_ops: u64,
    /// Pages served from the cache with no remap (an exact fit or a split).
    pub cache_hits: u64,
    /// Of the hits: a larger cached range (page) was split, the rest stayed
    /// cached.
    pub cache_splits: u64,
    /// Freed pages merged with a cached neighbour, counted once per
    /// neighbour (the mapped cache only; the page cache never merges).
    pub cache_merges: u64,
    /// Small pages moved from a high to a low address when freed (Defragment).
    pub defragment_ops: u64,
    /// Bytes of physical memory committed.
    pub commit_bytes: u64,
    /// Bytes of physical memory uncommitted.
    pub uncommit_bytes: u64,
}
