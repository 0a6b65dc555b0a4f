//! `HeapMap`: the heap's pages as one collection sees them, with a live map
//! each, and the lookup from a reference to its page and word.

use super::granule_table::GranuleTable;
use super::live_map::LiveMap;
use super::side_table::SideTable;
use crate::error::BadReference;
use crate::vm::ObjectReference;
use hotmem_os::Memory;
use hotmem_page::{Age, PageRef, PageType};
use std::sync::atomic::AtomicBool;

/// One page during a collection.
pub(crate) struct PageGc {
    pub(crate) page: PageRef,
    pub(crate) start: usize,
    /// The page's bump pointer at the safepoint: objects lie below it.
    pub(crate) top: usize,
    pub(crate) large: bool,
    /// A page of new objects (age eden, not large, not promoted where it
    /// was by a generational collection): marking remembers the
    /// slots that refer into it, so that when only such pages are
    /// evacuated, the update visits those slots instead of every object.
    pub(crate) young: bool,
    pub(crate) live: LiveMap,
    /// A page of the non-moving space: pinned from the start, and freed
    /// only if nothing was allocated in it since the map was made (see
    /// [`NonMovingSpace::release_if_unused`](crate::gc::core::non_moving::NonMovingSpace::release_if_unused)).
    pub(crate) non_moving: bool,
    /// Holds a pinned object (or is non-moving): not evacuated.
    pub(crate) pinned: AtomicBool,
    /// A reference into it was found without a forwarding entry during the
    /// update: it is not freed.
    pub(crate) keep: AtomicBool,
}

/// The heap's pages, found by address through a granule table.
pub(crate) struct HeapMap {
    /// Page index + 1 per granule; 0 for none.
    granules: GranuleTable<u32>,
    pub(crate) pages: Vec<PageGc>,
    /// The live maps' words: dropped after `pages`, which point into it.
    _bitmaps: SideTable,
}

impl HeapMap {
    /// The map of `pages` in the heap reservation `base..base+len`.
    /// `is_old`: whether a page that starts at an address is old although
    /// of age eden (the generational runtime's table: a collection promoted
    /// it where it was). `non_moving`: the starts of the non-moving
    /// space's pages, sorted.
    pub(crate) fn new(
        memory: &Memory,
        base: usize,
        len: usize,
        pages: Vec<PageRef>,
        is_old: impl Fn(usize) -> bool,
        non_moving: &[usize],
    ) -> HeapMap {
        // The largest power of two that divides every page's offset and size
        // (at most a granule): no two pages share an entry.
        let mut unit = hotmem_page::GRANULE_SIZE;
        for p in &pages {
            let off = p.range().start().get() - base;
            for v in [off, p.size()] {
                if v != 0 {
                    unit = unit.min(1 << v.trailing_zeros());
                }
            }
        }
        let mut granules = GranuleTable::new(base, len, unit, || 0u32);
        let heap_words = |p: &PageRef| {
            if p.page_type() == PageType::Large {
                1
            } else {
                (p.top().get() - p.range().start().get()) / 8
            }
        };
        let total: usize = pages
            .iter()
            .map(|p| LiveMap::words_for(heap_words(p)))
            .sum();
        let mut bitmaps = SideTable::new(memory, total);
        let pages: Vec<PageGc> = pages
            .into_iter()
            .map(|page| {
                let start = page.range().start().get();
                let top = page.top().get();
                let large = page.page_type() == PageType::Large;
                let young = !large && page.age() == Age::EDEN && !is_old(start);
                let live = LiveMap::new(&mut bitmaps, heap_words(&page));
                let non_moving = non_moving.binary_search(&start).is_ok();
                PageGc {
                    start,
                    top,
                    large,
                    young: young && !non_moving,
                    live,
                    non_moving,
                    pinned: AtomicBool::new(non_moving),
                    keep: AtomicBool::new(false),
                    page,
                }
            })
            .collect();
        for (i, p) in pages.iter().enumerate() {
            for g in granules.entries_of_mut(p.start, p.page.size()) {
                *g = i as u32 + 1;
            }
        }
        HeapMap {
            granules,
            pages,
            _bitmaps: bitmaps,
        }
    }

    /// A map of no page (what a cycle keeps once its map went to its
    /// relocation set).
    pub(crate) fn empty(memory: &Memory) -> HeapMap {
        HeapMap::new(memory, 0, 0, Vec::new(), |_| false, &[])
    }

    /// The page index and word index (in the page's live map) of the object
    /// `r` refers to.
    #[inline]
    pub(crate) fn locate(&self, r: ObjectReference) -> Result<(usize, usize), BadReference> {
        let a = r.get();
        if a % ObjectReference::ALIGN != 0 {
            return Err(BadReference::Misaligned);
        }
        let Some(&i) = self.granules.entry(a) else {
            return Err(BadReference::OutsideHeap);
        };
        if i == 0 {
            return Err(BadReference::FreeMemory);
        }
        let pi = i as usize - 1;
        let p = &self.pages[pi];
        if a >= p.top || a < p.start {
            return Err(BadReference::PastTop);
        }
        if p.large {
            if a != p.start {
                return Err(BadReference::NotAnObjectStart);
            }
            return Ok((pi, 0));
        }
        Ok((pi, (a - p.start) / 8))
    }

    /// The index of the page whose range holds `addr` (any byte of it).
    #[inline]
    pub(crate) fn page_of(&self, addr: usize) -> Option<usize> {
        (*self.granules.entry(addr)? as usize).checked_sub(1)
    }

    /// The reservation the map covers and its unit: `(base, len, shift)`,
    /// where every page starts and ends on a multiple of `1 << shift`.
    pub(crate) fn geometry(&self) -> (usize, usize, u32) {
        self.granules.geometry()
    }

    /// The address of word `word` of page `pi`.
    #[inline]
    pub(crate) fn address(&self, pi: usize, word: usize) -> usize {
        self.pages[pi].start + word * 8
    }
}
