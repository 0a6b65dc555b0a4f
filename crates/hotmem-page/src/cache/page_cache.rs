//! The page cache (ZGC before JDK-8350441): freed pages, still mapped and
//! committed, kept by size class for reuse, never merged.

use super::CacheHit;
use crate::block::Block;
use crate::{PageSizes, PageType};
use hotmem_os::MemRange;
use std::time::Instant;

/// Cached blocks of one partition, in three lists by size class: a block
/// of exactly a small page, of exactly a medium page, and anything else
/// ("large"). Each list is most-recently-freed last.
#[derive(Debug)]
pub(crate) struct PageCache {
    sizes: PageSizes,
    lists: [Vec<Block>; 3],
    bytes: usize,
}

impl PageCache {
    pub(crate) fn new(sizes: PageSizes) -> PageCache {
        PageCache {
            sizes,
            lists: Default::default(),
            bytes: 0,
        }
    }

    fn class(&self, len: usize) -> usize {
        if len == self.sizes.small_page() {
            PageType::Small.index()
        } else if len == self.sizes.medium_page() {
            PageType::Medium.index()
        } else {
            PageType::Large.index()
        }
    }

    /// Caches a block (its `last_used` says when it was freed).
    pub(crate) fn insert(&mut self, block: Block) {
        self.bytes += block.len();
        let class = self.class(block.len());
        self.lists[class].push(block);
    }

    /// Bytes cached.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Blocks cached, per class.
    pub(crate) fn counts(&self) -> [usize; 3] {
        [
            self.lists[0].len(),
            self.lists[1].len(),
            self.lists[2].len(),
        ]
    }

    fn take(&mut self, list: usize, i: usize) -> Block {
        let b = self.lists[list].swap_remove(i);
        self.bytes -= b.len();
        b
    }

    /// A block of `size` bytes for a page of `page_type`: an exact one of
    /// the same class first, else a larger one split (its tail stays
    /// cached), as ZGC's page cache did: for a small page a medium block,
    /// then a large one; for a medium page a large one; for a large page a
    /// larger large one, then a medium one if it is larger.
    pub(crate) fn alloc(&mut self, page_type: PageType, size: usize) -> Option<(Block, CacheHit)> {
        let exact = match page_type {
            PageType::Small | PageType::Medium => {
                self.lists[page_type.index()].len().checked_sub(1)
            }
            PageType::Large => self.lists[2].iter().rposition(|b| b.len() == size),
        };
        if let Some(i) = exact {
            return Some((self.take(page_type.index(), i), CacheHit::Exact));
        }
        let medium = PageType::Medium.index();
        let last_medium = self.lists[medium].len().checked_sub(1).map(|i| (medium, i));
        let larger_large = || {
            self.lists[2]
                .iter()
                .rposition(|b| b.len() > size)
                .map(|i| (2, i))
        };
        let oversized = match page_type {
            PageType::Small => last_medium.or_else(larger_large),
            PageType::Medium => larger_large(),
            PageType::Large => {
                larger_large().or(last_medium.filter(|_| self.sizes.medium_page() > size))
            }
        };
        let (list, i) = oversized?;
        let mut big = self.take(list, i);
        let page = big.split_head(size);
        self.insert(big);
        Some((page, CacheHit::Split))
    }

    /// Takes at least `bytes` out of the cache, least recently used first,
    /// for their physical memory (Page Cache Flush). The last block is split
    /// if it holds more than needed; its tail stays cached. Returns the
    /// blocks taken.
    pub(crate) fn flush(&mut self, bytes: usize) -> Vec<Block> {
        let mut taken = Vec::new();
        let mut need = bytes;
        while need > 0 {
            let Some((list, i)) = self.oldest() else {
                break;
            };
            let mut block = self.take(list, i);
            if block.len() > need {
                let head = block.split_head(need);
                self.insert(block);
                block = head;
            }
            need -= block.len();
            taken.push(block);
        }
        taken
    }

    fn oldest(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, Instant)> = None;
        for (l, list) in self.lists.iter().enumerate() {
            for (i, b) in list.iter().enumerate() {
                if best.is_none_or(|(_, _, t)| b.last_used < t) {
                    best = Some((l, i, b.last_used));
                }
            }
        }
        best.map(|(l, i, _)| (l, i))
    }

    /// Takes every block freed at or before `cutoff`.
    pub(crate) fn take_unused_since(&mut self, cutoff: Instant) -> Vec<Block> {
        let mut out = Vec::new();
        for list in &mut self.lists {
            let mut i = 0;
            while i < list.len() {
                if list[i].last_used <= cutoff {
                    let b = list.swap_remove(i);
                    self.bytes -= b.len();
                    out.push(b);
                } else {
                    i += 1;
                }
            }
        }
        out
    }

    /// The cached blocks' ranges, for checks.
    pub(crate) fn ranges(&self) -> impl Iterator<Item = MemRange> + '_ {
        self.lists.iter().flatten().map(|b| b.range)
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use crate::block::Segment;
    use hotmem_os::{Address, MemRange};
    use std::time::Duration;

    fn block(at: usize, len: usize, t: Instant) -> Block {
        Block {
            range: MemRange::new(Address::new(at), len).unwrap(),
            segments: vec![Segment { offset: at, len }],
            last_used: t,
        }
    }

    #[test]
    fn exact_then_oversized_then_flush() {
        let s = PageSizes::with_medium(4 << 20).unwrap();
        let g = 2 << 20;
        let t0 = Instant::now();
        let mut c = PageCache::new(s);
        c.insert(block(0x4000_0000, 2 * g, t0));
        c.insert(block(0x8000_0000, 3 * g, t0 + Duration::from_secs(1)));
        assert_eq!(c.counts(), [0, 1, 1]);
        // A small page splits the medium block; its tail is a small block.
        let Some((p, CacheHit::Split)) = c.alloc(PageType::Small, g) else {
            panic!()
        };
        assert_eq!(p.range.start().get(), 0x4000_0000);
        assert_eq!(c.counts(), [1, 0, 1]);
        let Some((p2, CacheHit::Exact)) = c.alloc(PageType::Small, g) else {
            panic!()
        };
        assert_eq!(p2.range.start().get(), 0x4000_0000 + g);
        // A medium page splits the large block.
        let Some((m, CacheHit::Split)) = c.alloc(PageType::Medium, 2 * g) else {
            panic!()
        };
        assert_eq!(m.len(), 2 * g);
        assert_eq!(c.counts(), [1, 0, 0]);
        assert!(c.alloc(PageType::Medium, 2 * g).is_none());
        assert_eq!(c.bytes(), g);
        let flushed = c.flush(g);
        assert_eq!(flushed.len(), 1);
        assert_eq!(c.bytes(), 0);
        c.insert(block(0, 3 * g, t0));
        let flushed = c.flush(g);
        assert_eq!((flushed[0].len(), c.bytes()), (g, 2 * g));
        assert_eq!(c.take_unused_since(t0).len(), 1);
        assert_eq!(c.bytes(), 0);
    }

    /// A large page smaller than a medium page is cut from a cached medium
    /// page, as ZGC's oversized medium page allocation did.
    #[test]
    fn a_large_page_smaller_than_a_medium_page_splits_one() {
        let s = PageSizes::with_medium(8 << 20).unwrap();
        let g = 2 << 20;
        let mut c = PageCache::new(s);
        c.insert(block(0x4000_0000, 4 * g, Instant::now()));
        let Some((p, CacheHit::Split)) = c.alloc(PageType::Large, 3 * g) else {
            panic!()
        };
        assert_eq!(p.len(), 3 * g);
        assert_eq!(c.counts(), [1, 0, 0]);
        assert!(
            c.alloc(PageType::Large, 2 * g).is_none(),
            "not exact, not larger"
        );
    }
}
