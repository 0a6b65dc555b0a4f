//! Freeing what a collection found unused: empty pages before relocation,
//! evacuated pages at the end; and, in debug builds, overwriting the dead
//! objects of the young pages that stay.

use super::cycle::Cycle;
use super::meta::HeapMap;
use crate::GcError;
use crate::vm::Binding;
use hotmem_page::{PageAllocator, PageRef};
use std::sync::atomic::Ordering;

/// Whether a collection overwrites the dead objects of the young pages that
/// stay (promoted where they are) with [`ZAP`]. Nothing may read them: a
/// binding that did not report a slot, or an embedder that stored a
/// reference into an old object without the store barrier, then reads the
/// pattern instead of an object that looks intact until its page is reused.
/// Debug builds only (a write of every dead byte of those pages).
const ZAP_DEAD_YOUNG: bool = cfg!(debug_assertions);

/// The word dead objects are overwritten with.
const ZAP: u64 = 0xdead_beef_dead_beef;

/// Frees pages the collection found unused; returns how many were freed.
/// The heap refuses only what it does not own (a bug): those stay
/// allocated, the heap consistent, and the pause goes on.
///
/// # Safety
/// As [`PageAllocator::free_pages`]: nobody allocates in `pages` any more
/// and nobody uses their memory.
unsafe fn free_pages(heap: &PageAllocator, pages: &[PageRef]) -> usize {
    // SAFETY: the caller's promise, passed on.
    match unsafe { heap.free_pages(pages) } {
        Ok(()) => pages.len(),
        Err(_) => 0,
    }
}

impl<B: Binding> Cycle<'_, B> {
    /// Frees the pages where marking found nothing (room for the
    /// relocation's targets).
    pub(super) fn free_empty_pages(&mut self) {
        let empty = std::mem::take(&mut self.empty);
        // SAFETY: at the safepoint, after both object allocators were
        // retired: nobody allocates in these pages, and marking found no
        // object on them, so nothing reachable refers into them (every
        // reference from a root or a live object was checked to point at a
        // marked object).
        self.stats.pages_freed_empty = unsafe { free_pages(&self.heap.pages, &empty) };
    }

    /// Overwrites the dead objects of the young pages that stay, in debug
    /// builds (see [`ZAP_DEAD_YOUNG`]).
    pub(super) fn zap_dead_young(&self) {
        if !ZAP_DEAD_YOUNG {
            return;
        }
        for (pi, p) in self.map.pages.iter().enumerate() {
            if p.young && !self.evacuated[pi] && p.live.live_objects() > 0 {
                zap_dead(&self.map, pi);
            }
        }
    }

    /// Frees the evacuated pages that no slot still refers to, then reports
    /// slots the binding showed only to the update.
    pub(super) fn free_evacuated_pages(&mut self) -> Result<(), GcError> {
        let to_free: Vec<PageRef> = (self.map.pages.iter().enumerate())
            .filter(|(pi, p)| self.evacuated[*pi] && !p.keep.load(Ordering::Relaxed))
            .map(|(_, p)| p.page.clone())
            .collect();
        // SAFETY: still at the safepoint; every live object of these pages
        // was copied and every slot of every live object and every root
        // that referred to one was updated to the copy (a reference found
        // without a forwarding entry kept its page out of this list); the
        // workers are done and these pages were retired before the
        // relocation, so nobody allocates in them or uses their memory.
        self.stats.pages_evacuated = unsafe { free_pages(&self.heap.pages, &to_free) };
        match self.inconsistent.load(Ordering::Relaxed) {
            0 => Ok(()),
            slots => Err(GcError::InconsistentBinding { slots }),
        }
    }
}

/// Overwrites everything below page `pi`'s top that no marked object covers
/// with [`ZAP`] (nothing, if its live map has overlapping objects).
fn zap_dead(map: &HeapMap, pi: usize) {
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
        // (marking found every object reachable from the roots, and in a
        // young collection from the remembered slots). The mutators are
        // stopped and the workers done. Both ends are word-aligned (object
        // boundaries, the page start and the top).
        unsafe { std::slice::from_raw_parts_mut(from as *mut u64, words).fill(ZAP) };
    }
}
