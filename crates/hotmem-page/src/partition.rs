//! The algorithm behind one partition of a [`PageAllocator`](crate::PageAllocator):
//! capacity accounting, the cache of free memory, the partition's slice of the
//! address space and its live pages. Runs under the partition's lock and
//! makes no system call: whatever needs the OS (mapping, committing,
//! unmapping, punching) is *claimed* here, done by the caller with the lock
//! released, and then *finished* or *undone* here.
//!
//! While an operation is between its claim and its finish, what it holds is
//! counted in [`Transit`], so that every invariant holds at every moment
//! the lock is free:
//!
//! - capacity = used + cached (a page being composed is used already; a
//!   block being uncommitted no longer counts as capacity);
//! - used = live pages + pages being composed or freed;
//! - uncommitted granules = max capacity - capacity - granules being
//!   uncommitted;
//! - the partition's address space = mapped (live and cached) + free +
//!   ranges in transit.

use crate::block::{Block, Segment, coalesce};
use crate::cache::{Cache, CacheHit};
use crate::sync::{CachePadded, Mutex};
use crate::usage::{CachedPages, PartitionUsage};
use crate::virt::VirtualSpace;
use crate::{CacheMode, NodeId, Page, PageRef, PageSizes, PageState, PageType};
use hotmem_os::{MemRange, PhysicalMemory};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// One node's part of the heap: what never changes, and the state behind
/// the partition's own lock.
#[derive(Debug)]
pub(crate) struct Partition {
    pub(crate) node: NodeId,
    pub(crate) physical: PhysicalMemory,
    pub(crate) state: CachePadded<Mutex<PartitionState>>,
}

impl Partition {
    pub(crate) fn new(
        node: NodeId,
        max_capacity: usize,
        sizes: PageSizes,
        cache: CacheMode,
        physical: PhysicalMemory,
        space: MemRange,
    ) -> Partition {
        Partition {
            node,
            physical,
            state: CachePadded::new(Mutex::new(PartitionState::new(
                node,
                max_capacity,
                sizes,
                Cache::new(cache, sizes),
                space,
            ))),
        }
    }
}

/// A live page and its backing.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) page: PageRef,
    pub(crate) block: Block,
}

/// Bytes held by operations between their claim and their finish.
#[derive(Debug, Default)]
struct Transit {
    /// Pages being composed or freed (counted in `used`, not live).
    used: usize,
    /// Of `used`: pages being freed (defragmented on their way to the cache).
    freeing: usize,
    /// Cached blocks being uncommitted (no longer capacity, not yet
    /// uncommitted granules).
    uncommitting: usize,
    /// Address space that is neither free nor in a live or cached block.
    virt: usize,
}

/// The mutable state of a partition. Capacity is the memory committed (in
/// pages and in the cache); used is the memory in pages.
#[derive(Debug)]
pub(crate) struct PartitionState {
    node: NodeId,
    max_capacity: usize,
    sizes: PageSizes,
    granule: usize,
    capacity: usize,
    used: usize,
    cache: Cache,
    virt: VirtualSpace,
    /// Offsets (in the memfd) of granules that are not committed.
    uncommitted: BTreeSet<usize>,
    /// Live pages by id, with their backing.
    live: BTreeMap<u64, Live>,
    transit: Transit,
}

/// What [`PartitionState::claim`] found for a new page.
pub(crate) enum Claim {
    /// A cached block, mapped and committed: the page is ready.
    Cached(Block, CacheHit),
    /// Nothing cached fits: the page is to be composed at a fresh range
    /// from fresh granules and cached blocks (a harvest).
    Compose(Composition),
}

/// A page to compose outside the lock: map `harvested` blocks' memory and
/// then `fresh` granules (committed) at `range`, then unmap the harvested
/// blocks' old ranges.
#[derive(Debug)]
pub(crate) struct Composition {
    pub(crate) range: MemRange,
    pub(crate) fresh: Vec<Segment>,
    pub(crate) harvested: Vec<Block>,
    /// Bytes newly committed.
    pub(crate) grow: usize,
    /// Bytes harvested from cached blocks.
    pub(crate) flush: usize,
}

/// Why a partition has no page for a request now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// Used plus the page would exceed the capacity (a GC may make room).
    Full,
    /// Room is on its way: memory being uncommitted or pages being freed
    /// hold it for the length of a system call.
    Busy,
    /// The address space is too fragmented for the page.
    Fragmented,
}

/// Why a page cannot be freed (the caller maps it to its error).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not this partition's live page (by identity).
    NotLive,
    /// Installed in an object allocator.
    Installed,
    /// Freed already.
    Freed,
}

/// Where a freed page's block went.
#[derive(Debug)]
pub(crate) enum Released {
    /// To the cache, merged with this many cached neighbours.
    Cached { merges: usize },
    /// On its way to the cache, to be moved to a lower address first.
    Moving(Move),
}

/// A block on its way to the cache: moved to a lower address first.
#[derive(Debug)]
pub(crate) struct Move {
    pub(crate) block: Block,
    pub(crate) to: MemRange,
}

impl PartitionState {
    fn new(
        node: NodeId,
        max_capacity: usize,
        sizes: PageSizes,
        cache: Cache,
        space: MemRange,
    ) -> Self {
        let granule = sizes.granule();
        PartitionState {
            node,
            max_capacity,
            sizes,
            granule,
            capacity: 0,
            used: 0,
            cache,
            virt: VirtualSpace::new(space),
            uncommitted: (0..max_capacity / granule).map(|g| g * granule).collect(),
            live: BTreeMap::new(),
            transit: Transit::default(),
        }
    }

    /// Claims the backing of a new page of `size` bytes: a cached block, or
    /// capacity, fresh granules, cached blocks to harvest and a range of
    /// address space for a composition.
    pub(crate) fn claim(&mut self, page_type: PageType, size: usize) -> Result<Claim, NoRoom> {
        // `size` is at most a partition's capacity, but a caller's number is
        // never added unchecked.
        let fits = |used: usize| {
            used.checked_add(size)
                .is_some_and(|total| total <= self.max_capacity)
        };
        if !fits(self.used) {
            return Err(if fits(self.used - self.transit.freeing) {
                NoRoom::Busy
            } else {
                NoRoom::Full
            });
        }
        if let Some((block, hit)) = self.cache.alloc(page_type, size) {
            self.used += size;
            return Ok(Claim::Cached(block, hit));
        }
        // Commit what the capacity allows, harvest the rest from the cache.
        let grow = size.min(self.max_capacity - self.capacity - self.transit.uncommitting);
        let flush = size - grow;
        if self.cache.bytes() < flush {
            // Only memory being uncommitted is missing: it comes back as
            // uncommitted granules in a moment.
            return Err(NoRoom::Busy);
        }
        let range = match page_type {
            PageType::Small => self.virt.alloc_low(size),
            PageType::Medium | PageType::Large => self.virt.alloc_high(size),
        };
        // Address space too fragmented for this page; a GC that frees pages
        // lets it coalesce.
        let range = range.ok_or(NoRoom::Fragmented)?;
        let fresh = self.take_uncommitted(grow);
        let harvested = self.cache.harvest(flush);
        debug_assert_eq!(harvested.iter().map(Block::len).sum::<usize>(), flush);
        self.capacity += grow;
        self.used += size;
        self.transit.used += size;
        self.transit.virt += size + flush;
        Ok(Claim::Compose(Composition {
            range,
            fresh,
            harvested,
            grow,
            flush,
        }))
    }

    /// The composition is mapped and the harvested blocks' old ranges are
    /// unmapped: they become free address space; the page is live.
    pub(crate) fn composed(&mut self, c: Composition, segments: Vec<Segment>, page: PageRef) {
        for old in &c.harvested {
            self.virt.free(old.range);
        }
        let size = c.range.len();
        self.transit.used -= size;
        self.transit.virt -= size + c.flush;
        let block = Block {
            range: c.range,
            segments,
            last_used: Instant::now(),
        };
        self.insert_live(page, block);
    }

    /// The composition failed and was unmapped and uncommitted: everything
    /// goes back where it was (the harvested blocks are still mapped at
    /// their old ranges).
    pub(crate) fn compose_failed(&mut self, c: Composition) {
        let size = c.range.len();
        self.give_uncommitted(&c.fresh);
        for b in c.harvested {
            self.cache.insert(b);
        }
        self.virt.free(c.range);
        self.capacity -= c.grow;
        self.used -= size;
        self.transit.used -= size;
        self.transit.virt -= size + c.flush;
    }

    /// Lists a page as live (its size is already counted as used).
    pub(crate) fn insert_live(&mut self, page: PageRef, block: Block) {
        debug_assert_eq!(page.range(), block.range);
        let old = self.live.insert(page.id(), Live { page, block });
        debug_assert!(old.is_none(), "page ids are unique");
    }

    /// Whether `page` is the very page this partition lists as live
    /// (identity, not ids: a page with the same heap and page id is not
    /// enough) and may be freed now (not installed).
    pub(crate) fn check_release(&self, page: &Page) -> Result<(), Refused> {
        let live = self
            .live
            .get(&page.id())
            .is_some_and(|l| std::ptr::eq::<Page>(&*l.page, page));
        match (live, page.state()) {
            (true, PageState::Allocated) => Ok(()),
            (true, PageState::Installed) => Err(Refused::Installed),
            (_, PageState::Freed) => Err(Refused::Freed),
            (false, _) => Err(Refused::NotLive),
        }
    }

    /// Takes a checked live page out of the live list (it is freed now) and
    /// returns its block, still counted as used: [`PartitionState::cache_freed`]
    /// or [`PartitionState::moved`] finishes the release.
    pub(crate) fn take_live(&mut self, page: &Page) -> Result<Block, Refused> {
        // The state may still change under us (an object allocator
        // installing a page it was handed): the transition decides.
        page.transition(PageState::Allocated, PageState::Freed)
            .map_err(|s| match s {
                PageState::Installed => Refused::Installed,
                _ => Refused::Freed,
            })?;
        let live = self.live.remove(&page.id()).expect("checked live");
        self.transit.used += live.block.len();
        self.transit.freeing += live.block.len();
        Ok(live.block)
    }

    /// ZGC's rule: a small page in the upper half of the partition's address
    /// space moves to the lowest free address when there is one below it.
    /// Claims that address for the move, or caches the block right away.
    pub(crate) fn release(&mut self, page_type: PageType, block: Block) -> Released {
        let whole = self.virt.whole();
        let high = block.range.start().get() >= whole.start().get() + whole.len() / 2;
        if page_type == PageType::Small && high {
            if let Some(to) = self.virt.alloc_low(block.len()) {
                if to.start() < block.range.start() {
                    self.transit.virt += block.len() + to.len();
                    return Released::Moving(Move { block, to });
                }
                self.virt.free(to);
            }
        }
        let merges = self.cache_freed(block);
        Released::Cached { merges }
    }

    /// A freed page's block goes to the cache; returns how many cached
    /// neighbours it merged with.
    fn cache_freed(&mut self, mut block: Block) -> usize {
        let size = block.len();
        self.used -= size;
        self.transit.used -= size;
        self.transit.freeing -= size;
        block.last_used = Instant::now();
        self.cache.insert(block)
    }

    /// A move is done (`moved`: the block was mapped at `to` and unmapped
    /// from its old range) or abandoned (`moved` false: it stays where it
    /// was); either way the block goes to the cache. Returns how many cached
    /// neighbours it merged with.
    pub(crate) fn moved(&mut self, m: Move, moved: bool) -> usize {
        self.transit.virt -= m.block.len() + m.to.len();
        let block = if moved {
            self.virt.free(m.block.range);
            Block {
                range: m.to,
                segments: m.block.segments,
                last_used: m.block.last_used,
            }
        } else {
            self.virt.free(m.to);
            m.block
        };
        self.cache_freed(block)
    }

    /// Claims every cached block freed at or before `cutoff` for
    /// uncommitting: they stop counting as capacity now.
    pub(crate) fn claim_unused(&mut self, cutoff: Instant) -> Vec<Block> {
        let blocks = self.cache.take_unused_since(cutoff);
        let bytes: usize = blocks.iter().map(Block::len).sum();
        self.capacity -= bytes;
        self.transit.uncommitting += bytes;
        self.transit.virt += bytes;
        blocks
    }

    /// A claimed block was unmapped and its memory punched out.
    pub(crate) fn uncommitted(&mut self, block: &Block) {
        self.give_uncommitted(&block.segments);
        self.virt.free(block.range);
        self.transit.uncommitting -= block.len();
        self.transit.virt -= block.len();
    }

    /// A claimed block could not be uncommitted: it is mapped again and
    /// goes back to the cache.
    pub(crate) fn uncommit_failed(&mut self, block: Block) {
        self.capacity += block.len();
        self.transit.uncommitting -= block.len();
        self.transit.virt -= block.len();
        self.cache.insert(block);
    }

    /// Takes `bytes` of uncommitted granules, lowest offsets first, as
    /// coalesced segments. The caller commits them.
    fn take_uncommitted(&mut self, bytes: usize) -> Vec<Segment> {
        let mut segs = Vec::new();
        for _ in 0..bytes / self.granule {
            let offset = self
                .uncommitted
                .pop_first()
                .expect("capacity below max leaves granules");
            segs.push(Segment {
                offset,
                len: self.granule,
            });
        }
        coalesce(&mut segs);
        segs
    }

    /// Gives granules back to the uncommitted pool.
    fn give_uncommitted(&mut self, segments: &[Segment]) {
        for s in segments {
            for g in (s.offset..s.offset + s.len).step_by(self.granule) {
                let fresh = self.uncommitted.insert(g);
                debug_assert!(fresh, "granule {g:#x} given back twice");
            }
        }
    }

    /// The live pages.
    pub(crate) fn live_pages(&self) -> impl Iterator<Item = &PageRef> {
        self.live.values().map(|l| &l.page)
    }

    /// Used bytes (in pages, live or in transit).
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// The partition's slice of the heap's address space.
    pub(crate) fn space(&self) -> MemRange {
        self.virt.whole()
    }

    /// Committed bytes (in pages and in the cache).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn usage(&self) -> PartitionUsage {
        let [small, medium, large] = self.cache.counts(&self.sizes);
        PartitionUsage {
            node: self.node,
            max_capacity: self.max_capacity,
            capacity: self.capacity,
            used: self.used,
            cached: self.cache.bytes(),
            cached_pages: CachedPages {
                small,
                medium,
                large,
            },
        }
    }

    /// Checks the bookkeeping (tests, fuzzing, `check_invariants`).
    ///
    /// # Panics
    /// When an invariant does not hold (a bug).
    pub(crate) fn check(&self) {
        self.cache.check();
        let cached = self.cache.bytes();
        assert_eq!(
            self.capacity,
            self.used + cached,
            "capacity = used + cached"
        );
        assert!(self.capacity <= self.max_capacity);
        assert_eq!(
            self.uncommitted.len() * self.granule,
            self.max_capacity - self.capacity - self.transit.uncommitting,
            "uncommitted granules"
        );
        let mut ranges: Vec<MemRange> = Vec::new();
        let mut live_bytes = 0;
        for l in self.live.values() {
            assert_eq!(l.page.range(), l.block.range);
            assert_ne!(l.page.state(), PageState::Freed, "freed page still live");
            live_bytes += l.block.len();
            ranges.push(l.block.range);
        }
        assert_eq!(
            self.used,
            live_bytes + self.transit.used,
            "used = live pages"
        );
        ranges.extend(self.cache.ranges());
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(w[0].end() <= w[1].start(), "overlap {:?} {:?}", w[0], w[1]);
        }
        let whole = self.virt.whole();
        assert!(ranges.iter().all(|r| whole.contains_range(*r)));
        let mapped: usize = ranges.iter().map(|r| r.len()).sum();
        assert_eq!(
            mapped + self.virt.free_bytes() + self.transit.virt,
            whole.len(),
            "address space accounting"
        );
    }
}
