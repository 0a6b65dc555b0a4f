//! The free phase of every collector: giving back the pages a collection
//! found unused (the empty ones before relocation, the evacuated ones when
//! nothing refers into them any more), and overwriting dead objects where
//! a debug build checks that nothing reads them.

use super::collection::Collection;
use super::meta::HeapMap;
use crate::vm::Binding;
use hotmem_page::{PageAllocator, PageRef};

/// The word dead objects are overwritten with.
const ZAP: u64 = 0xdead_beef_dead_beef;

/// Frees pages the collection found unused; returns how many were freed.
/// The heap refuses only what it does not own (a bug): those stay
/// allocated, the heap consistent, and the pause goes on.
///
/// # Safety
/// As [`PageAllocator::free_pages`]: nobody allocates in `pages` any more
/// and nobody uses their memory.
pub(crate) unsafe fn free_pages(heap: &PageAllocator, pages: &[PageRef]) -> usize {
    // SAFETY: the caller's promise, passed on.
    match unsafe { heap.free_pages(pages) } {
        Ok(()) => pages.len(),
        Err(_) => 0,
    }
}

impl<B: Binding> Collection<'_, B> {
    /// Frees the pages where marking found nothing (room for the
    /// relocation's targets); counts them in the statistics.
    ///
    /// # Safety
    /// Marking is complete (every reference from a root or a live object
    /// was checked to point at a marked object, so nothing reachable
    /// refers into these pages), and nobody allocates in them: both object
    /// allocators were retired since the heap was mapped (a page allocated
    /// since is not in the map), and the non-moving space let go of its
    /// pages among them ([`Collection::unused`]).
    pub(crate) unsafe fn free_empty_pages(&mut self) {
        let empty = std::mem::take(&mut self.empty);
        // SAFETY: the caller's promise: nothing reachable refers into the
        // pages and nobody allocates in them, so nobody uses their memory.
        self.stats.pages_freed_empty = unsafe { free_pages(&self.heap.pages, &empty) };
    }
}

/// Overwrites everything below page `pi`'s top that no marked object covers
/// with [`ZAP`] (nothing, if its live map has overlapping objects).
///
/// # Safety
/// `map`'s marking is complete (in a young collection, from the roots and
/// the remembered slots), page `pi` stays allocated, and nobody reads or
/// writes the page meanwhile: the mutators are stopped and the GC workers
/// done.
pub(crate) unsafe fn zap_dead(map: &HeapMap, pi: usize) {
    let p = &map.pages[pi];
    let mut dead = Vec::new();
    let mut next = p.start;
    let walk = p.live.for_each_object(|s, e| {
        let at = map.address(pi, s);
        if at > next {
            dead.push((next, at));
        }
        next = map.address(pi, e) + 8;
    });
    if walk.is_err() {
        return;
    }
    if p.top > next {
        dead.push((next, p.top));
    }
    for (from, to) in dead {
        let words = (to - from) / 8;
        // SAFETY: `from..to` lies below the page's top, in a page that stays
        // allocated, and holds no marked object: nothing reachable is there
        // (marking, complete by the caller's promise, found every object
        // reachable from the roots, and in a young collection from the
        // remembered slots). Nobody else touches the page (the caller's
        // promise: the mutators are stopped and the workers done). Both
        // ends are word-aligned (object boundaries, the page start and the
        // top).
        unsafe { std::slice::from_raw_parts_mut(from as *mut u64, words).fill(ZAP) };
    }
}
