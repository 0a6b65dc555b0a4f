//! The cache of free, committed memory of one partition, in the design the
//! [`CacheMode`] picks: the mapped cache (ranges by address, merged;
//! [`mapped`]) or the page cache it replaced (pages by size class;
//! [`page_cache`]). Both run under the partition's lock and make no system
//! call: what they hand out is still mapped where it was.

mod extent;
mod mapped;
mod page_cache;
#[cfg(all(test, not(hotmem_loom)))]
mod tests;

use crate::block::Block;
use crate::{CacheMode, PageSizes, PageType};
use hotmem_os::MemRange;
use mapped::MappedCache;
use page_cache::PageCache;
use std::time::Instant;

/// How an allocation was served from the cache.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CacheHit {
    /// A cached range (or page) of exactly the size asked for.
    Exact,
    /// A larger one was split; the rest stays cached.
    Split,
}

/// One partition's cache.
#[derive(Debug)]
pub(crate) enum Cache {
    /// Ranges by address, merged with their neighbours.
    Mapped(MappedCache),
    /// Pages in lists by size class, never merged.
    Pages(PageCache),
}

impl Cache {
    pub(crate) fn new(mode: CacheMode, sizes: PageSizes) -> Cache {
        match mode {
            CacheMode::Mapped => Cache::Mapped(MappedCache::default()),
            CacheMode::PageCache => Cache::Pages(PageCache::new(sizes)),
        }
    }

    /// Caches a freed block (its `last_used` says when it was freed).
    /// Returns how many cached neighbours it merged with.
    pub(crate) fn insert(&mut self, block: Block) -> usize {
        match self {
            Cache::Mapped(c) => c.insert(block),
            Cache::Pages(c) => {
                c.insert(block);
                0
            }
        }
    }

    /// A cached block of `size` bytes for a page of `page_type`, if one
    /// fits without a remap.
    pub(crate) fn alloc(&mut self, page_type: PageType, size: usize) -> Option<(Block, CacheHit)> {
        match self {
            Cache::Mapped(c) => c.alloc(page_type, size),
            Cache::Pages(c) => c.alloc(page_type, size),
        }
    }

    /// Takes `bytes` (at most what is cached) out of the cache for their
    /// physical memory, to be remapped into a new page: the mapped cache's
    /// harvest, the page cache's flush.
    pub(crate) fn harvest(&mut self, bytes: usize) -> Vec<Block> {
        match self {
            Cache::Mapped(c) => c.harvest(bytes),
            Cache::Pages(c) => c.flush(bytes),
        }
    }

    /// Takes all the memory last used at or before `cutoff`.
    pub(crate) fn take_unused_since(&mut self, cutoff: Instant) -> Vec<Block> {
        match self {
            Cache::Mapped(c) => c.take_unused_since(cutoff),
            Cache::Pages(c) => c.take_unused_since(cutoff),
        }
    }

    /// Bytes cached.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Cache::Mapped(c) => c.bytes(),
            Cache::Pages(c) => c.bytes(),
        }
    }

    /// Cached blocks (pages or ranges) of exactly a small page, of exactly
    /// a medium page, and of any other size.
    pub(crate) fn counts(&self, sizes: &PageSizes) -> [usize; 3] {
        match self {
            Cache::Mapped(c) => c.counts(sizes),
            Cache::Pages(c) => c.counts(),
        }
    }

    /// The cached ranges (unordered), for checks.
    pub(crate) fn ranges(&self) -> Vec<MemRange> {
        match self {
            Cache::Mapped(c) => c.ranges().collect(),
            Cache::Pages(c) => c.ranges().collect(),
        }
    }

    /// Checks the cache's own invariants (the mapped cache's ranges are
    /// disjoint, maximal and indexed).
    ///
    /// # Panics
    /// When one does not hold (a bug).
    pub(crate) fn check(&self) {
        let total: usize = self.ranges().into_iter().map(MemRange::len).sum();
        assert_eq!(total, self.bytes(), "cache byte count");
        if let Cache::Mapped(c) = self {
            c.check();
        }
    }
}
