//! Allocating a page: a cached block under the partition's lock, or a
//! composition (fresh granules and flushed cached blocks mapped at a new
//! range) claimed under the lock and mapped with no lock held.

use super::PageAllocator;
use crate::block::Segment;
use crate::error::MemoryError;
use crate::partition::{Claim, Composition, NoRoom, Partition};
use crate::{AllocPageError, OwnedPage, PageRequest};
use hotmem_os::MemRange;

/// How many times an allocation yields to a thread that is making room
/// between two system calls before it reports exhaustion.
const MAX_WAITS: u32 = 100_000;

impl PageAllocator {
    /// Allocates an empty page, from the preferred node's partition if it
    /// has room, else from another partition. The page comes back in state
    /// [`PageState::Allocated`](crate::PageState::Allocated), as the owner's
    /// [`OwnedPage`] handle: its owner allocates objects in it with
    /// [`OwnedPage::alloc_object`] (from any number of threads) and frees it
    /// with [`PageAllocator::free_page`].
    ///
    /// A page from the page cache takes one short critical section of its
    /// partition's lock; a page that needs new memory claims it under the
    /// lock and maps and commits it with no lock held, so that other threads
    /// allocating in the same partition never wait for the system calls.
    ///
    /// # Errors
    /// [`AllocPageError::HeapExhausted`] when no partition has room now (used
    /// plus the page would exceed its capacity): a GC may make room;
    /// [`AllocPageError::BadSize`] for a size that does not match the page
    /// type, a large page that is not a whole number of granules, or a page
    /// larger than a partition (no GC can make room for it);
    /// [`AllocPageError::UnknownNode`]; [`AllocPageError::Memory`] when the
    /// OS refuses, with nothing changed.
    pub fn alloc_page(&self, req: PageRequest) -> Result<OwnedPage, AllocPageError> {
        let preferred = self.check_request(&req)?;
        let n = self.partitions.len();
        let mut waits = 0u32;
        loop {
            let mut busy = false;
            for p in (0..n).map(|i| (preferred + i) % n) {
                let part = &self.partitions[p];
                let mut state = part.state.lock();
                match state.claim(req.page_type, req.size) {
                    Ok(Claim::Cached(block, hit)) => {
                        let page = self.new_page(&req, p, block.range);
                        state.insert_live(page.clone(), block);
                        drop(state);
                        self.counters.cache_hit(hit);
                        self.counters.page_allocated(req.page_type, req.size);
                        return Ok(OwnedPage::new(page));
                    }
                    Ok(Claim::Compose(c)) => {
                        drop(state);
                        return self.compose_page(&req, p, c);
                    }
                    Err(NoRoom::Busy) => busy = true,
                    // Full, or its address space too fragmented for this
                    // page (a GC that frees pages lets it coalesce): another
                    // partition may have room.
                    Err(NoRoom::Full | NoRoom::Fragmented) => {}
                }
            }
            if !busy || waits == MAX_WAITS {
                return Err(AllocPageError::HeapExhausted {
                    page_type: req.page_type,
                    size: req.size,
                    node: req.node,
                });
            }
            // Room is being made by a thread between two system calls
            // (uncommitting a cached block, or moving a freed page): it is
            // not exhaustion, and it is over in a moment. (Bounded: a
            // thread that never finishes, e.g. one that panicked in a memory
            // observer, turns into exhaustion rather than a hang.)
            waits += 1;
            std::thread::yield_now();
        }
    }

    /// Maps and commits a claimed composition of partition `p` (no lock
    /// held), then lists the page; on failure gives the claim back.
    #[cold]
    fn compose_page(
        &self,
        req: &PageRequest,
        p: usize,
        c: Composition,
    ) -> Result<OwnedPage, AllocPageError> {
        let part = &self.partitions[p];
        match self.compose(part, &c) {
            Ok(segments) => {
                for old in &c.harvested {
                    self.unmap_quietly(old.range);
                }
                let page = self.new_page(req, p, c.range);
                let (grow, flush) = (c.grow, c.flush);
                part.state.lock().composed(c, segments, page.clone());
                if grow > 0 {
                    self.counters.committed(grow);
                }
                if flush > 0 {
                    self.counters.flushed(flush);
                }
                self.counters.page_allocated(req.page_type, req.size);
                Ok(OwnedPage::new(page))
            }
            Err(e) => {
                part.state.lock().compose_failed(c);
                Err(AllocPageError::Memory(e))
            }
        }
    }

    /// Maps the harvested blocks' physical memory and then the fresh
    /// granules (bound to the node and committed) at the composition's range. On error,
    /// unmaps what it mapped and uncommits what it committed.
    fn compose(&self, part: &Partition, c: &Composition) -> Result<Vec<Segment>, MemoryError> {
        let range = c.range;
        let mut at = range.start();
        let mut committed: Vec<Segment> = Vec::new();
        let result = (|| {
            for seg in c.harvested.iter().flat_map(|b| b.segments.iter()) {
                self.reservation
                    .map(at, &part.physical, seg.offset, seg.len)
                    .map_err(MemoryError::Map)?;
                at = at + seg.len;
            }
            for seg in &c.fresh {
                let mapped = self
                    .reservation
                    .map(at, &part.physical, seg.offset, seg.len)
                    .map_err(MemoryError::Map)?;
                at = at + seg.len;
                if let Some(b) = &self.binder {
                    b.bind(mapped, part.node);
                }
                part.physical
                    .commit(seg.offset, seg.len)
                    .map_err(MemoryError::Physical)?;
                committed.push(*seg);
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                let mut segments: Vec<Segment> = c
                    .harvested
                    .iter()
                    .flat_map(|b| b.segments.iter().copied())
                    .chain(c.fresh.iter().copied())
                    .collect();
                crate::block::coalesce(&mut segments);
                Ok(segments)
            }
            Err(e) => {
                if at > range.start() {
                    self.unmap_quietly(MemRange::from_bounds(range.start(), at).expect("ordered"));
                }
                for s in committed {
                    let _ = part.physical.uncommit(s.offset, s.len);
                }
                Err(e)
            }
        }
    }
}
