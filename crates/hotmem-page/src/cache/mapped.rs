//! The mapped cache (ZGC since JDK-8350441): free, committed memory kept
//! as ranges of the address space, by address, merged with their
//! neighbours; a page of any size is cut from a range that fits.

use super::CacheHit;
use super::extent::Extent;
use crate::block::Block;
use crate::{PageSizes, PageType};
use hotmem_os::{Address, MemRange};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Cached ranges of one partition, disjoint and maximal: no two of them
/// touch (a range inserted next to another merges with it).
///
/// Two indexes over the same ranges: by address (merging, small pages at
/// the lowest address) and by length, then address (the best fit for medium
/// and large pages, the smallest ranges to harvest).
#[derive(Debug, Default)]
pub(crate) struct MappedCache {
    /// start -> extent
    by_addr: BTreeMap<usize, Extent>,
    /// (length, start) of every range in `by_addr`.
    by_size: BTreeSet<(usize, usize)>,
    bytes: usize,
}

impl MappedCache {
    fn put(&mut self, start: usize, extent: Extent) {
        self.by_size.insert((extent.len(), start));
        let old = self.by_addr.insert(start, extent);
        debug_assert!(old.is_none(), "two ranges at {start:#x}");
    }

    fn remove(&mut self, start: usize) -> Extent {
        let extent = self.by_addr.remove(&start).expect("a cached range");
        let listed = self.by_size.remove(&(extent.len(), start));
        debug_assert!(listed, "indexes disagree at {start:#x}");
        extent
    }

    /// Caches a freed block, merged with the ranges right below and right
    /// above it. Returns how many it merged with (0, 1 or 2).
    pub(crate) fn insert(&mut self, block: Block) -> usize {
        let (range, mut extent) = Extent::from_block(block);
        self.bytes += range.len();
        let mut start = range.start().get();
        let mut merges = 0;
        if let Some((&below, prev)) = self.by_addr.range(..start).next_back() {
            debug_assert!(below + prev.len() <= start, "{range:?} is cached already");
            if below + prev.len() == start {
                let mut merged = self.remove(below);
                merged.append(extent);
                extent = merged;
                start = below;
                merges += 1;
            }
        }
        let end = start + extent.len();
        if self.by_addr.contains_key(&end) {
            let above = self.remove(end);
            extent.append(above);
            merges += 1;
        }
        self.put(start, extent);
        merges
    }

    /// A block of `size` bytes for a page of `page_type`, cut from the
    /// smallest range that fits: a small page from the bottom of the lowest
    /// such range, a medium or large page from the top of the highest, so
    /// that small pages gather low in the address space, medium and large
    /// ones high, and a small page never breaks a range a medium page could
    /// use while a fragment is left. The rest of the range stays cached.
    ///
    /// (Cutting small pages from the lowest range instead, whatever its
    /// size, split freed medium pages into ranges too short for the next
    /// medium page: the demo harvested 2.3% of its allocation rate that
    /// way, 0.3% with the best fit.)
    pub(crate) fn alloc(&mut self, page_type: PageType, size: usize) -> Option<(Block, CacheHit)> {
        let &(fit, lowest) = self.by_size.range((size, 0)..).next()?;
        let start = match page_type {
            PageType::Small => lowest,
            PageType::Medium | PageType::Large => {
                let &(_, highest) = self.by_size.range(..(fit + 1, 0)).next_back()?;
                highest
            }
        };
        let mut extent = self.remove(start);
        self.bytes -= size;
        let len = extent.len();
        if len == size {
            return Some((extent.into_block(start), CacheHit::Exact));
        }
        let page = match page_type {
            PageType::Small => {
                let rest = extent.split_off(size);
                self.put(start + size, rest);
                extent.into_block(start)
            }
            PageType::Medium | PageType::Large => {
                let page = extent.split_off(len - size);
                self.put(start, extent);
                page.into_block(start + len - size)
            }
        };
        Some((page, CacheHit::Split))
    }

    /// Takes `bytes` out of the cache for their physical memory, when no
    /// single range fits a page: the largest ranges first, so that a
    /// harvest remaps as few ranges as it can (each costs a map and an
    /// unmap), the last one cut at its tail; the fragments it leaves are
    /// what small pages take first. Returns fewer bytes only when the cache
    /// holds fewer.
    ///
    /// (Smallest first, on the `mapped_cache` example's heap filled to 90%:
    /// 251 harvests and 2008 map and unmap calls where largest first makes
    /// 176 and 1111; filled to 100%: 2698 and 19848 against 2882 and 18846.)
    pub(crate) fn harvest(&mut self, bytes: usize) -> Vec<Block> {
        let mut taken = Vec::new();
        let mut need = bytes;
        while need > 0 {
            let Some(&(len, start)) = self.by_size.last() else {
                break;
            };
            let mut extent = self.remove(start);
            let block = if len > need {
                let tail = extent.split_off(len - need);
                self.put(start, extent);
                tail.into_block(start + len - need)
            } else {
                extent.into_block(start)
            };
            need -= block.len();
            self.bytes -= block.len();
            taken.push(block);
        }
        taken
    }

    /// Takes every part of every range last used at or before `cutoff`
    /// (cutting ranges where needed); the newer parts stay cached.
    pub(crate) fn take_unused_since(&mut self, cutoff: Instant) -> Vec<Block> {
        let old: Vec<usize> = self
            .by_addr
            .iter()
            .filter(|(_, e)| e.ages().iter().any(|a| a.last_used <= cutoff))
            .map(|(&start, _)| start)
            .collect();
        let mut out = Vec::new();
        for start in old {
            let extent = self.remove(start);
            for (offset, piece, unused) in extent.split_by_age(cutoff) {
                if unused {
                    self.bytes -= piece.len();
                    out.push(piece.into_block(start + offset));
                } else {
                    self.put(start + offset, piece);
                }
            }
        }
        out
    }

    /// Bytes cached.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Ranges of exactly a small page, of exactly a medium page, and others.
    pub(crate) fn counts(&self, sizes: &PageSizes) -> [usize; 3] {
        let mut counts = [0; 3];
        for e in self.by_addr.values() {
            let class = if e.len() == sizes.small_page() {
                PageType::Small
            } else if e.len() == sizes.medium_page() {
                PageType::Medium
            } else {
                PageType::Large
            };
            counts[class.index()] += 1;
        }
        counts
    }

    /// The cached ranges, by address.
    pub(crate) fn ranges(&self) -> impl Iterator<Item = MemRange> + '_ {
        self.by_addr
            .iter()
            .map(|(&start, e)| MemRange::new(Address::new(start), e.len()).expect("in the heap"))
    }

    /// The physical segments of the range at `start` (tests and checks).
    #[cfg(all(test, not(hotmem_loom)))]
    pub(crate) fn segments_at(&self, start: usize) -> Option<&[crate::block::Segment]> {
        self.by_addr.get(&start).map(Extent::segments)
    }

    /// Checks the indexes, the byte count, and that the ranges are disjoint
    /// and maximal.
    ///
    /// # Panics
    /// When one of them does not hold (a bug).
    pub(crate) fn check(&self) {
        assert_eq!(self.by_addr.len(), self.by_size.len(), "index sizes");
        let mut total = 0;
        let mut prev_end: Option<usize> = None;
        for (&start, e) in &self.by_addr {
            e.check();
            assert!(self.by_size.contains(&(e.len(), start)), "size index");
            if let Some(end) = prev_end {
                assert!(end < start, "ranges touch or overlap at {start:#x}");
            }
            prev_end = Some(start + e.len());
            total += e.len();
        }
        assert_eq!(total, self.bytes, "cached bytes");
    }
}
