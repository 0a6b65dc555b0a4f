//! Freeing pages: the owner's free and undo, the collector's bulk free, and
//! defragment (a freed small page high in the address space moves down on
//! its way to the cache, mapped with no lock held).

use super::PageAllocator;
use crate::block::Segment;
use crate::partition::{Move, PartitionState, Refused, Released};
use crate::sync::MutexGuard;
use crate::{FreeError, OwnedPage, PageRef, RejectedPage};
use hotmem_os::MemRange;

/// How a page comes back, for the counters.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Release {
    Free,
    Undo,
}

impl From<Refused> for FreeError {
    fn from(r: Refused) -> FreeError {
        match r {
            Refused::NotLive => FreeError::ForeignPage,
            Refused::Installed => FreeError::InUse,
            Refused::Freed => FreeError::AlreadyFreed,
        }
    }
}

impl PageAllocator {
    /// Frees a page: it goes to the page cache, still committed, and no
    /// longer counts as used. A small page in the upper half of its
    /// partition's address space is moved to the lowest free address first
    /// (Defragment), with no lock held while it is remapped.
    ///
    /// Takes the owner's handle: only the page's owner frees it safely, and
    /// the handle is checked by identity against the page the heap lists.
    ///
    /// # Errors
    /// [`FreeError::ForeignPage`] (a page of another heap),
    /// [`FreeError::AlreadyFreed`] (the collector freed it with
    /// [`free_pages`](Self::free_pages)), [`FreeError::InUse`]. Nothing
    /// changes on error and the page comes back in the [`RejectedPage`].
    pub fn free_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        self.release(page, Release::Free)
    }

    /// Frees many pages found through views: either all of them or, on the
    /// first error, none (every partition involved is locked while they are
    /// checked and taken). This is the collector's free: the pages of
    /// retired object allocators, large object pages and evacuated pages,
    /// which it finds through [`PageAllocator::pages`]. Each page is checked
    /// by identity against the live page the heap holds; installed pages are
    /// refused.
    ///
    /// # Errors
    /// [`FreeError::ForeignPage`], [`FreeError::AlreadyFreed`] (also for a
    /// page listed twice), [`FreeError::InUse`] (still installed in an object
    /// allocator: retire it first).
    ///
    /// # Safety
    /// Nobody allocates in these pages or uses their memory after the call:
    /// whoever holds an [`OwnedPage`] handle of one of them (an owner, or
    /// the caller of [`ObjectAllocator::retire_pages`](crate::ObjectAllocator::retire_pages))
    /// never allocates through it again, and no object in them is read or
    /// written any more. Their memory goes back to the page cache and is
    /// handed out again by the next allocation. In a collector: the pages
    /// are retired, empty or evacuated, and the mutators are stopped.
    pub unsafe fn free_pages(&self, pages: &[PageRef]) -> Result<(), FreeError> {
        let mut parts = Vec::with_capacity(pages.len());
        let mut involved = vec![false; self.partitions.len()];
        for page in pages {
            let p = self.partition_of(page).ok_or(FreeError::ForeignPage)?;
            involved[p] = true;
            parts.push(p);
        }
        // Every partition involved, locked in index order (the one order
        // in which more than one partition lock is ever taken).
        let mut guards: Vec<Option<MutexGuard<'_, PartitionState>>> = self
            .partitions
            .iter()
            .enumerate()
            .map(|(i, part)| involved[i].then(|| part.state.lock()))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for (page, &p) in pages.iter().zip(&parts) {
            let state = guards[p].as_ref().expect("locked above");
            state.check_release(page)?;
            if !seen.insert(page.id()) {
                return Err(FreeError::AlreadyFreed);
            }
        }
        let mut moves = Vec::new();
        let mut result = Ok(());
        for (page, &p) in pages.iter().zip(&parts) {
            let state = guards[p].as_mut().expect("locked above");
            // Only a page installed since the check (an object allocator
            // the caller failed to stop) can be refused here.
            let block = match state.take_live(page) {
                Ok(block) => block,
                Err(e) => {
                    result = Err(e.into());
                    break;
                }
            };
            self.counters.freed();
            match state.release(page.page_type(), block) {
                Released::Cached { merges } => self.counters.merged(merges),
                Released::Moving(m) => moves.push((p, m)),
            }
        }
        drop(guards);
        // The pages already taken finish their way to the cache either way.
        for (p, m) in moves {
            self.finish_move(p, m);
        }
        result
    }

    /// Takes back a page that was allocated but not needed (a lost
    /// installation race): like [`free_page`](Self::free_page), but counted
    /// as Undo Page Allocation.
    ///
    /// # Errors
    /// As [`PageAllocator::free_page`].
    pub fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        self.release(page, Release::Undo)
    }

    fn release(&self, page: OwnedPage, how: Release) -> Result<(), RejectedPage> {
        let Some(p) = self.partition_of(&page) else {
            return Err(RejectedPage::new(FreeError::ForeignPage, page));
        };
        let mut state = self.partitions[p].state.lock();
        let block = match state
            .check_release(&page)
            .and_then(|()| state.take_live(&page))
        {
            Ok(block) => block,
            Err(e) => {
                drop(state);
                return Err(RejectedPage::new(e.into(), page));
            }
        };
        let size = block.len();
        let released = state.release(page.page_type(), block);
        drop(state);
        match how {
            Release::Free => self.counters.freed(),
            Release::Undo => self.counters.undo(page.page_type(), size),
        }
        match released {
            Released::Cached { merges } => self.counters.merged(merges),
            Released::Moving(m) => self.finish_move(p, m),
        }
        Ok(())
    }

    /// Defragments a freed block with no lock held: maps its physical
    /// memory at the claimed lower range, then unmaps the old range; on
    /// failure the block stays where it is. Either way it is cached.
    #[cold]
    fn finish_move(&self, p: usize, m: Move) {
        let moved = self.remap(p, &m.block.segments, m.to);
        if moved {
            self.unmap_quietly(m.block.range);
            self.counters.defragmented();
        }
        let merges = self.partitions[p].state.lock().moved(m, moved);
        self.counters.merged(merges);
    }

    /// Maps `segments` of partition `p`'s memory, in order, at `to`; on
    /// failure unmaps what it mapped and says so.
    fn remap(&self, p: usize, segments: &[Segment], to: MemRange) -> bool {
        let physical = &self.partitions[p].physical;
        let mut at = to.start();
        for seg in segments {
            if self
                .reservation
                .map(at, physical, seg.offset, seg.len)
                .is_err()
            {
                if at > to.start() {
                    self.unmap_quietly(MemRange::from_bounds(to.start(), at).expect("ordered"));
                }
                return false;
            }
            at = at + seg.len;
        }
        true
    }
}
#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use crate::{Age, HeapConfig, NodeId, Page, PageRequest, PageState};
    use hotmem_os::Memory;

    const MIB: usize = 1 << 20;

    fn disjoint(a: MemRange, b: MemRange) -> bool {
        a.end() <= b.start() || b.end() <= a.start()
    }

    /// Issue 12: a page rebuilt from the heap id and page id of a live page
    /// (what the public `Page::new` allowed) freed the live page, and the
    /// next allocation overlapped it. Frees are now checked by identity.
    #[test]
    fn a_page_rebuilt_from_live_ids_frees_nothing() {
        let h = PageAllocator::new(
            &Memory::new(),
            HeapConfig::new(16 * MIB).medium_page_size(4 * MIB),
        )
        .expect("heap");
        let req = PageRequest::small(&h.page_sizes(), Age::EDEN, NodeId::ZERO);
        let live = h.alloc_page(req).expect("page");
        let forged = || {
            PageRef::new(Page::new(
                live.page_type(),
                live.age(),
                live.node(),
                live.range(),
                h.id(),
                live.id(),
            ))
        };
        let before = h.usage();
        let copy = forged();
        // SAFETY: refused (the copy is not the live page): nothing is freed.
        let bulk = unsafe { h.free_pages(std::slice::from_ref(&copy)) };
        assert_eq!(bulk, Err(FreeError::ForeignPage));
        let rejected = h
            .free_page(OwnedPage::new(forged()))
            .expect_err("a copy is not the owner's handle");
        assert_eq!(rejected.error(), FreeError::ForeignPage);
        let rejected = h
            .undo_alloc_page(OwnedPage::new(forged()))
            .expect_err("a copy is not the owner's handle");
        assert_eq!(rejected.error(), FreeError::ForeignPage);
        assert_eq!(h.usage(), before, "a rejected free changed the heap");
        assert_eq!(live.state(), PageState::Allocated);
        // Two allocations never overlap.
        let next = h.alloc_page(req).expect("page");
        assert!(disjoint(next.range(), live.range()));
        h.check_invariants();
        h.free_page(live).expect("the owner frees it");
        h.free_page(next).expect("the owner frees it");
        assert_eq!(h.usage().used, 0);
    }
}
