//! The page cache: freed pages, still mapped and committed, kept by size
//! class for reuse.

use crate::block::Block;
use crate::{PageSizes, PageType};
use std::time::Instant;

/// Cached blocks of one partition, in three lists by size class: a block
/// of exactly a small page, of exactly a medium page, and anything else
/// ("large"). Each list is most-recently-freed last.
#[derive(Debug, Default)]
pub(crate) struct PageCache {
    lists: [Vec<Block>; 3],
    bytes: usize,
}

/// What an allocation from the cache found.
pub(crate) enum CacheHit {
    /// A block of exactly the size asked for.
    Exact(Block),
    /// A larger block was split; the rest went back to the cache.
    Split(Block),
}

impl PageCache {
    fn class(sizes: &PageSizes, len: usize) -> usize {
        if len == sizes.small_page() {
            PageType::Small.index()
        } else if len == sizes.medium_page() {
            PageType::Medium.index()
        } else {
            PageType::Large.index()
        }
    }

    /// Caches a block (its `last_used` says when it was freed).
    pub(crate) fn insert(&mut self, sizes: &PageSizes, block: Block) {
        self.bytes += block.len();
        self.lists[Self::class(sizes, block.len())].push(block);
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
    /// the same class first, else a larger one split (its tail stays cached).
    pub(crate) fn alloc(
        &mut self,
        sizes: &PageSizes,
        page_type: PageType,
        size: usize,
    ) -> Option<CacheHit> {
        let exact = match page_type {
            PageType::Small | PageType::Medium => {
                self.lists[page_type.index()].len().checked_sub(1)
            }
            PageType::Large => self.lists[2].iter().rposition(|b| b.len() == size),
        };
        if let Some(i) = exact {
            return Some(CacheHit::Exact(self.take(page_type.index(), i)));
        }
        // Oversized: a medium block for a small page, then a large one.
        let list = if page_type == PageType::Small && !self.lists[1].is_empty() {
            Some((1, self.lists[1].len() - 1))
        } else {
            self.lists[2]
                .iter()
                .rposition(|b| b.len() > size)
                .map(|i| (2, i))
        };
        let (list, i) = list?;
        let mut big = self.take(list, i);
        let page = big.split_head(size);
        self.insert(sizes, big);
        Some(CacheHit::Split(page))
    }

    /// Takes at least `bytes` out of the cache, least recently used first,
    /// for their physical memory. The last block is split if it holds more
    /// than needed; its tail stays cached. Returns the blocks taken.
    pub(crate) fn flush(&mut self, sizes: &PageSizes, bytes: usize) -> Vec<Block> {
        let mut taken = Vec::new();
        let mut need = bytes;
        while need > 0 {
            let Some((list, i)) = self.oldest() else {
                break;
            };
            let mut block = self.take(list, i);
            if block.len() > need {
                let head = block.split_head(need);
                self.insert(sizes, block);
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

    /// Every block, for teardown and checks.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.lists.iter().flatten()
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
        let mut c = PageCache::default();
        c.insert(&s, block(0x4000_0000, 2 * g, t0));
        c.insert(&s, block(0x8000_0000, 3 * g, t0 + Duration::from_secs(1)));
        assert_eq!(c.counts(), [0, 1, 1]);
        // A small page splits the medium block; its tail is a small block.
        let Some(CacheHit::Split(p)) = c.alloc(&s, PageType::Small, g) else {
            panic!()
        };
        assert_eq!(p.range.start().get(), 0x4000_0000);
        assert_eq!(c.counts(), [1, 0, 1]);
        let Some(CacheHit::Exact(p2)) = c.alloc(&s, PageType::Small, g) else {
            panic!()
        };
        assert_eq!(p2.range.start().get(), 0x4000_0000 + g);
        // A medium page splits the large block.
        let Some(CacheHit::Split(m)) = c.alloc(&s, PageType::Medium, 2 * g) else {
            panic!()
        };
        assert_eq!(m.len(), 2 * g);
        assert_eq!(c.counts(), [1, 0, 0]);
        assert!(c.alloc(&s, PageType::Medium, 2 * g).is_none());
        assert_eq!(c.bytes(), g);
        let flushed = c.flush(&s, g);
        assert_eq!(flushed.len(), 1);
        assert_eq!(c.bytes(), 0);
        c.insert(&s, block(0, 3 * g, t0));
        let flushed = c.flush(&s, g);
        assert_eq!((flushed[0].len(), c.bytes()), (g, 2 * g));
        assert_eq!(c.take_unused_since(t0).len(), 1);
        assert_eq!(c.bytes(), 0);
    }
}
