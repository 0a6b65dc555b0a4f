//! `PageAllocator`: pages on memfd-backed physical memory, with a page
//! cache, flush, undo, defragment and uncommit.

use crate::block::{Block, Segment};
use crate::cache::CacheHit;
use crate::error::{AllocPageError, ConfigError, FreeError, HeapError, MemoryError, RejectedPage};
use crate::partition::{HeapUsage, Partition};
use crate::source::{PageRequest, PageSource};
use crate::stats::counters::{CounterSnapshot, Counters};
use crate::sync::{self, Mutex, MutexGuard};
use crate::virt::VirtualSpace;
use crate::{
    HeapConfig, NodeBinder, NodeId, OwnedPage, Page, PageInfo, PageRef, PageSizes, PageState,
    PageType,
};
use hotmem_os::{MemRange, MemTag, Memory, OsError, Reservation};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The heap's page allocator (ZGC's `ZPageAllocator`).
///
/// The heap is `max_capacity` bytes of physical memory (one memfd per
/// partition, committed in 2 MiB granules as needed) mapped into an address
/// space reservation several times larger, all through the
/// [`hotmem_os::Memory`] given at creation and tagged
/// [`MemTag::JAVA_HEAP`]. A page is a range of that address space with
/// physical granules mapped behind it; because the memory is a memfd, the
/// same granules can be mapped elsewhere without copying. That is what the
/// allocator does to:
///
/// - **reuse** freed pages from the page cache (same type first, else a
///   larger cached page is split);
/// - **flush** the cache when the heap is at capacity and nothing cached
///   fits: physical memory is harvested from cached pages of other types and
///   mapped at the new page's address (counted as Page Cache Flush);
/// - **defragment**: a freed small page in the upper half of the address
///   space moves to the lowest free address;
/// - **uncommit** cached pages unused for the configured delay.
///
/// Allocation never waits for memory: when there is no room it returns
/// [`AllocPageError::HeapExhausted`], which a GC turns into a collection and
/// a retry.
///
/// # Who may free a page
/// [`alloc_page`](Self::alloc_page) returns the page's [`OwnedPage`] handle;
/// [`free_page`](Self::free_page) and [`undo_alloc_page`](Self::undo_alloc_page)
/// consume it and check it by identity against the page the heap lists as
/// live. Everything else sees read-only [`PageRef`] views
/// ([`pages`](Self::pages)), which cannot free: a view freed safely would
/// let its memory be handed out again while the owner still allocates in it.
///
/// ```compile_fail,E0308
/// # use hotmem_os::Memory;
/// # use hotmem_page::{Age, HeapConfig, NodeId, PageAllocator, PageRequest};
/// let heap = PageAllocator::new(&Memory::new(), HeapConfig::new(16 << 20)).unwrap();
/// let owned = heap.alloc_page(PageRequest::small(&heap.page_sizes(), Age::EDEN, NodeId::ZERO)).unwrap();
/// let view = heap.pages().pop().unwrap();
/// heap.free_page(view).unwrap(); // a view is not the owner's handle
/// ```
///
/// A collector that frees pages it found through views (the pages of retired
/// object allocators, large object pages, evacuated pages) uses the
/// `unsafe` bulk [`free_pages`](Self::free_pages), whose contract is that
/// nobody allocates in those pages or uses their memory any more:
///
/// ```compile_fail,E0133
/// # use hotmem_os::Memory;
/// # use hotmem_page::{HeapConfig, PageAllocator};
/// let heap = PageAllocator::new(&Memory::new(), HeapConfig::new(16 << 20)).unwrap();
/// heap.free_pages(&heap.pages()).unwrap(); // unsafe: needs the collector's promise
/// ```
pub struct PageAllocator {
    id: u64,
    sizes: PageSizes,
    /// What one partition can hold: no page is ever larger.
    partition_capacity: usize,
    nodes: Vec<NodeId>,
    binder: Option<Arc<dyn NodeBinder>>,
    uncommit_delay: Duration,
    counters: Counters,
    inner: Mutex<Inner>,
    reservation: Reservation,
}

struct Inner {
    partitions: Vec<Partition>,
    virt: VirtualSpace,
    /// Live pages by id, with their backing.
    live: BTreeMap<u64, Live>,
    next_page_id: u64,
}

struct Live {
    page: PageRef,
    block: Block,
    partition: usize,
}

/// What [`PageAllocator::uncommit`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UncommitStats {
    /// Cached blocks uncommitted.
    pub blocks: usize,
    /// Bytes uncommitted.
    pub bytes: usize,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Release {
    Free,
    Undo,
}

impl fmt::Debug for PageAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageAllocator")
            .field("id", &self.id)
            .field("sizes", &self.sizes)
            .field("nodes", &self.nodes)
            .field("reserved", &self.reservation.range())
            .field("usage", &self.usage())
            .finish()
    }
}

impl PageAllocator {
    /// Creates a heap as `config` says, reserving its address space and
    /// creating its physical memory through `memory`. Nothing is committed
    /// until pages are allocated.
    ///
    /// # Errors
    /// [`HeapError::Config`] for a bad configuration; the OS errors of the
    /// reservation and of creating the memfds.
    pub fn new(memory: &Memory, config: HeapConfig) -> Result<PageAllocator, HeapError> {
        let (sizes, per_partition) = config.validate()?;
        let reserved = config
            .max_capacity
            .checked_mul(config.address_space_ratio)
            .ok_or(ConfigError::BadAddressSpaceRatio {
                ratio: config.address_space_ratio,
            })?;
        let reservation = memory
            .reserve_aligned(reserved, sizes.medium_page(), MemTag::JAVA_HEAP)
            .map_err(HeapError::Reserve)?;
        let mut partitions = Vec::with_capacity(config.partitions.len());
        for &node in &config.partitions {
            let physical = memory
                .physical(per_partition)
                .map_err(HeapError::Physical)?;
            partitions.push(Partition::new(
                node,
                per_partition,
                sizes.granule(),
                physical,
            ));
        }
        Ok(PageAllocator {
            id: sync::next_heap_id(),
            sizes,
            partition_capacity: per_partition,
            nodes: config.partitions.clone(),
            binder: config.binder.clone(),
            uncommit_delay: config.uncommit_delay,
            counters: Counters::default(),
            inner: Mutex::new(Inner {
                partitions,
                virt: VirtualSpace::new(reservation.range()),
                live: BTreeMap::new(),
                next_page_id: 1,
            }),
            reservation,
        })
    }

    /// This heap's id, as [`Page::heap_id`] reports it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The page sizes.
    pub fn page_sizes(&self) -> PageSizes {
        self.sizes
    }

    /// The partitions' nodes, in partition order.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// The address space reserved for the heap.
    pub fn reserved(&self) -> MemRange {
        self.reservation.range()
    }

    fn check_request(&self, req: &PageRequest) -> Result<usize, AllocPageError> {
        let part = self
            .nodes
            .iter()
            .position(|&n| n == req.node)
            .ok_or(AllocPageError::UnknownNode(req.node))?;
        let ok = match req.page_type {
            PageType::Small => req.size == self.sizes.small_page(),
            PageType::Medium => req.size == self.sizes.medium_page(),
            PageType::Large => req.size > 0 && req.size % self.sizes.granule() == 0,
        };
        // A page larger than a partition can never be had, however much a GC
        // frees: that is a bad size, not exhaustion (a caller that collects
        // and retries on exhaustion would loop forever).
        if !ok || req.size > self.partition_capacity {
            return Err(AllocPageError::BadSize { size: req.size });
        }
        Ok(part)
    }

    /// Allocates an empty page, from the preferred node's partition if it
    /// has room, else from another partition. The page comes back in state
    /// [`PageState::Allocated`], as the owner's [`OwnedPage`] handle: its
    /// owner allocates objects in it with [`OwnedPage::alloc_object`] (from
    /// any number of threads) and frees it with [`PageAllocator::free_page`].
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
        let mut inner = self.inner.lock();
        let n = inner.partitions.len();
        for p in (0..n).map(|i| (preferred + i) % n) {
            let part = &inner.partitions[p];
            // `req.size` is at most a partition's capacity, but a caller's
            // number is never added unchecked.
            let fits = part
                .used
                .checked_add(req.size)
                .is_some_and(|used| used <= part.max_capacity);
            if !fits {
                continue;
            }
            let block = self.alloc_block(&mut inner, p, req.page_type, req.size)?;
            let id = inner.next_page_id;
            inner.next_page_id = id.checked_add(1).expect("2^64 pages");
            let node = inner.partitions[p].node;
            let page = PageRef::new(Page::new(
                req.page_type,
                req.age,
                node,
                block.range,
                self.id,
                id,
            ));
            inner.live.insert(
                id,
                Live {
                    page: page.clone(),
                    block,
                    partition: p,
                },
            );
            self.counters.page_allocated(req.page_type, req.size);
            return Ok(OwnedPage::new(page));
        }
        Err(AllocPageError::HeapExhausted {
            page_type: req.page_type,
            size: req.size,
            node: req.node,
        })
    }

    /// The backing of a new page in partition `p`, which has room for it.
    fn alloc_block(
        &self,
        inner: &mut Inner,
        p: usize,
        page_type: PageType,
        size: usize,
    ) -> Result<Block, AllocPageError> {
        let part = &mut inner.partitions[p];
        if let Some(hit) = part.cache.alloc(&self.sizes, page_type, size) {
            let (CacheHit::Exact(block) | CacheHit::Split(block)) = hit;
            part.used += size;
            return Ok(block);
        }
        // Nothing cached fits: commit what the capacity allows, and take the
        // rest from cached pages of other types (flush).
        let grow = size.min(part.max_capacity - part.capacity);
        let flush = size - grow;
        let range = match page_type {
            PageType::Small => inner.virt.alloc_low(size),
            PageType::Medium | PageType::Large => inner.virt.alloc_high(size),
        };
        let Some(range) = range else {
            // Address space too fragmented for this page; a GC that frees
            // pages lets it coalesce.
            return Err(AllocPageError::HeapExhausted {
                page_type,
                size,
                node: inner.partitions[p].node,
            });
        };
        let part = &mut inner.partitions[p];
        let fresh = part.take_uncommitted(grow);
        let harvested = part.cache.flush(&self.sizes, flush);
        debug_assert_eq!(harvested.iter().map(Block::len).sum::<usize>(), flush);
        match self.compose(part, range, &harvested, &fresh) {
            Ok(segments) => {
                for old in &harvested {
                    self.unmap_quietly(old.range);
                    inner.virt.free(old.range);
                }
                let part = &mut inner.partitions[p];
                part.capacity += grow;
                part.used += size;
                if grow > 0 {
                    self.counters.committed(grow);
                }
                if flush > 0 {
                    self.counters.flushed(flush);
                }
                Ok(Block {
                    range,
                    segments,
                    last_used: Instant::now(),
                })
            }
            Err(e) => {
                // Undo everything: the harvested blocks are still mapped
                // where they were, the fresh granules are uncommitted.
                part.give_uncommitted(&fresh);
                for b in harvested {
                    part.cache.insert(&self.sizes, b);
                }
                inner.virt.free(range);
                Err(AllocPageError::Memory(e))
            }
        }
    }

    /// Maps `harvested` blocks' physical memory and then `fresh` granules
    /// (bound to the node and committed) at `range`. On error, unmaps what
    /// it mapped and uncommits what it committed.
    fn compose(
        &self,
        part: &Partition,
        range: MemRange,
        harvested: &[Block],
        fresh: &[Segment],
    ) -> Result<Vec<Segment>, MemoryError> {
        let mut at = range.start();
        let mut committed: Vec<Segment> = Vec::new();
        let result = (|| {
            for seg in harvested.iter().flat_map(|b| b.segments.iter()) {
                self.reservation
                    .map(at, &part.physical, seg.offset, seg.len)
                    .map_err(MemoryError::Map)?;
                at = at + seg.len;
            }
            for seg in fresh {
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
                let mut segments: Vec<Segment> = harvested
                    .iter()
                    .flat_map(|b| b.segments.iter().copied())
                    .chain(fresh.iter().copied())
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

    /// Unmaps a range of our own reservation. Failing leaves an extra
    /// mapping of memory we still own (harmless); it is not reported.
    fn unmap_quietly(&self, range: MemRange) {
        let _ = self.reservation.unmap(range);
    }

    /// Frees a page: it goes to the page cache, still committed, and no
    /// longer counts as used. A small page in the upper half of the address
    /// space is moved to the lowest free address first (Defragment).
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

    /// Frees many pages found through views, under one lock: either all of
    /// them or, on the first error, none. This is the collector's free: the
    /// pages of retired object allocators, large object pages and evacuated
    /// pages, which it finds through [`PageAllocator::pages`]. Each page is
    /// checked by identity against the live page the heap holds; installed
    /// pages are refused.
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
        let mut inner = self.inner.lock();
        let mut seen = std::collections::BTreeSet::new();
        for page in pages {
            self.check_release(&inner, page)?;
            if !seen.insert(page.id()) {
                return Err(FreeError::AlreadyFreed);
            }
        }
        for page in pages {
            self.release_locked(&mut inner, page, Release::Free)?;
        }
        Ok(())
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

    /// Whether `page` may be freed now: it is the very page this heap lists
    /// as live (identity, not ids: a page with the same heap and page id is
    /// not enough) and not installed in an object allocator.
    fn check_release(&self, inner: &Inner, page: &Page) -> Result<(), FreeError> {
        if page.heap_id() != self.id {
            return Err(FreeError::ForeignPage);
        }
        let live = inner
            .live
            .get(&page.id())
            .is_some_and(|l| std::ptr::eq::<Page>(&*l.page, page));
        match (live, page.state()) {
            (true, PageState::Allocated) => Ok(()),
            (true, PageState::Installed) => Err(FreeError::InUse),
            (_, PageState::Freed) => Err(FreeError::AlreadyFreed),
            (false, _) => Err(FreeError::ForeignPage),
        }
    }

    fn release(&self, page: OwnedPage, how: Release) -> Result<(), RejectedPage> {
        let mut inner = self.inner.lock();
        let result = self
            .check_release(&inner, &page)
            .and_then(|()| self.release_locked(&mut inner, &page, how));
        result.map_err(|e| RejectedPage::new(e, page))
    }

    fn release_locked(
        &self,
        inner: &mut MutexGuard<'_, Inner>,
        page: &Page,
        how: Release,
    ) -> Result<(), FreeError> {
        // The state may still change under us (an object allocator
        // installing a page it was handed): the transition decides.
        page.transition(PageState::Allocated, PageState::Freed)
            .map_err(|s| match s {
                PageState::Installed => FreeError::InUse,
                _ => FreeError::AlreadyFreed,
            })?;
        let live = inner.live.remove(&page.id()).expect("checked live");
        let size = live.block.len();
        let mut block = live.block;
        if self.should_defragment(inner, page) {
            block = self.defragment(inner, live.partition, block);
        }
        block.last_used = Instant::now();
        let part = &mut inner.partitions[live.partition];
        part.used -= size;
        part.cache.insert(&self.sizes, block);
        match how {
            Release::Free => self.counters.freed(),
            Release::Undo => self.counters.undo(page.page_type(), size),
        }
        Ok(())
    }

    /// ZGC's rule: a small page in the upper half of the address space, when
    /// there is free address space below it.
    fn should_defragment(&self, inner: &Inner, page: &Page) -> bool {
        let whole = inner.virt.whole();
        page.page_type() == PageType::Small
            && page.range().start().get() >= whole.start().get() + whole.len() / 2
            && inner
                .virt
                .lowest_free()
                .is_some_and(|low| low < page.range().start())
    }

    /// Moves a block of partition `p` to the lowest free address: maps its
    /// physical memory there, then unmaps the old range. On failure the
    /// block stays where it is.
    fn defragment(&self, inner: &mut Inner, p: usize, block: Block) -> Block {
        let Some(to) = inner.virt.alloc_low(block.len()) else {
            return block;
        };
        if to.start() >= block.range.start() {
            inner.virt.free(to);
            return block;
        }
        let physical = &inner.partitions[p].physical;
        let mut new_at = to.start();
        for seg in &block.segments {
            let failed = self
                .reservation
                .map(new_at, physical, seg.offset, seg.len)
                .is_err();
            if failed {
                if new_at > to.start() {
                    self.unmap_quietly(MemRange::from_bounds(to.start(), new_at).expect("ordered"));
                }
                inner.virt.free(to);
                return block;
            }
            new_at = new_at + seg.len;
        }
        self.unmap_quietly(block.range);
        inner.virt.free(block.range);
        self.counters.defragmented();
        Block {
            range: to,
            segments: block.segments,
            last_used: block.last_used,
        }
    }

    /// Uncommits cached pages that have not been used for the configured
    /// delay (as of `now`): their address space is unmapped and their
    /// physical memory returned to the OS (punched out of the memfd).
    ///
    /// # Errors
    /// The first OS error; pages uncommitted before it stay uncommitted,
    /// the failing one stays cached.
    pub fn uncommit(&self, now: Instant) -> Result<UncommitStats, MemoryError> {
        match now.checked_sub(self.uncommit_delay) {
            Some(cutoff) => self.uncommit_older_than(cutoff),
            // The clock has not run for the delay yet (a young process or
            // machine): nothing can have been unused that long.
            None => Ok(UncommitStats::default()),
        }
    }

    /// Uncommits every cached page freed at or before `cutoff`.
    ///
    /// # Errors
    /// As [`PageAllocator::uncommit`].
    pub fn uncommit_older_than(&self, cutoff: Instant) -> Result<UncommitStats, MemoryError> {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let mut stats = UncommitStats::default();
        for p in 0..inner.partitions.len() {
            let blocks = inner.partitions[p].cache.take_unused_since(cutoff);
            let mut blocks = blocks.into_iter();
            while let Some(block) = blocks.next() {
                let part = &mut inner.partitions[p];
                let result = self
                    .reservation
                    .unmap(block.range)
                    .map_err(MemoryError::Unmap)
                    .and_then(|()| {
                        block
                            .segments
                            .iter()
                            .try_for_each(|s| part.physical.uncommit(s.offset, s.len))
                            .map_err(MemoryError::Physical)
                    });
                if let Err(e) = result {
                    // Keep it (and the rest) cached; remap in case the unmap went through.
                    let mut at = block.range.start();
                    for s in &block.segments {
                        let _ = self.reservation.map(at, &part.physical, s.offset, s.len);
                        at = at + s.len;
                    }
                    part.cache.insert(&self.sizes, block);
                    for b in blocks {
                        part.cache.insert(&self.sizes, b);
                    }
                    return Err(e);
                }
                part.give_uncommitted(&block.segments);
                part.capacity -= block.len();
                inner.virt.free(block.range);
                self.counters.uncommitted(block.len());
                stats.blocks += 1;
                stats.bytes += block.len();
            }
        }
        Ok(stats)
    }

    /// Every live page, by address, as read-only views (see
    /// [`free_pages`](Self::free_pages) for what a collector does with them).
    pub fn pages(&self) -> Vec<PageRef> {
        let inner = self.inner.lock();
        let mut pages: Vec<PageRef> = inner.live.values().map(|l| l.page.clone()).collect();
        pages.sort_by_key(|p| p.range().start());
        pages
    }

    /// A snapshot of every live page as plain data, by address.
    pub fn page_infos(&self) -> Vec<PageInfo> {
        self.pages().iter().map(|p| p.info()).collect()
    }

    /// Capacity, used and cached memory, overall and per partition.
    pub fn usage(&self) -> HeapUsage {
        let inner = self.inner.lock();
        let partitions: Vec<_> = inner.partitions.iter().map(Partition::usage).collect();
        HeapUsage {
            max_capacity: partitions.iter().map(|p| p.max_capacity).sum(),
            capacity: partitions.iter().map(|p| p.capacity).sum(),
            used: partitions.iter().map(|p| p.used).sum(),
            cached: partitions.iter().map(|p| p.cached).sum(),
            partitions,
        }
    }

    /// Committed memory (in pages and in the cache): what NMT should see as
    /// committed under [`MemTag::JAVA_HEAP`] for this heap.
    pub fn committed_bytes(&self) -> usize {
        self.usage().capacity
    }

    /// Physical memory the memfds hold as the kernel counts it (`fstat`),
    /// to check [`PageAllocator::committed_bytes`] against.
    ///
    /// # Errors
    /// The OS error of `fstat`.
    pub fn physical_committed_bytes(&self) -> Result<usize, OsError> {
        let inner = self.inner.lock();
        inner
            .partitions
            .iter()
            .map(|p| p.physical.committed_bytes())
            .sum()
    }

    /// The counters (totals since creation).
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// Checks every internal invariant: capacity = used + cached per
    /// partition, used = the live pages, pages and cached blocks disjoint
    /// and inside the reservation, address space accounted for.
    ///
    /// # Panics
    /// When an invariant does not hold (a bug).
    pub fn check_invariants(&self) {
        let inner = self.inner.lock();
        let mut ranges: Vec<MemRange> = Vec::new();
        let mut used = vec![0usize; inner.partitions.len()];
        for l in inner.live.values() {
            assert_eq!(l.page.range(), l.block.range);
            assert_ne!(l.page.state(), PageState::Freed, "freed page still live");
            used[l.partition] += l.block.len();
            ranges.push(l.block.range);
        }
        for (p, part) in inner.partitions.iter().enumerate() {
            part.check();
            assert_eq!(part.used, used[p], "used = live pages");
            ranges.extend(part.cache.blocks().map(|b| b.range));
        }
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(w[0].end() <= w[1].start(), "overlap {:?} {:?}", w[0], w[1]);
        }
        let mapped: usize = ranges.iter().map(|r| r.len()).sum();
        assert_eq!(
            mapped + inner.virt.free_bytes(),
            inner.virt.whole().len(),
            "address space accounting"
        );
        assert!(ranges.iter().all(|r| inner.virt.whole().contains_range(*r)));
    }
}

impl PageSource for PageAllocator {
    fn page_sizes(&self) -> PageSizes {
        self.sizes
    }

    fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError> {
        PageAllocator::alloc_page(self, request)
    }

    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        PageAllocator::undo_alloc_page(self, page)
    }

    fn page_installed(&self, page: &Page) {
        self.counters.page_installed(page.page_type());
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use crate::{Age, PageRequest};

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
