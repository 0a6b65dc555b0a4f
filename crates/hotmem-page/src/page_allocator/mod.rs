//! `PageAllocator`: pages on memfd-backed physical memory, with a cache of
//! free memory (mapped cache or page cache), harvest, undo, defragment and
//! uncommit — the type people use and its
//! locking. Each partition has its own lock, held only for bookkeeping
//! ([`partition`](crate::partition) is the algorithm under it); the system
//! calls (map, commit, unmap, punch) run with no lock held. The operations
//! live in the submodules: [`alloc`] (allocate and compose), [`release`]
//! (free, undo, defragment), [`uncommit`] and [`introspect`].

mod alloc;
mod introspect;
mod release;
mod uncommit;

use crate::error::{ConfigError, HeapError};
use crate::partition::Partition;
use crate::source::{PageRequest, PageSource};
use crate::stats::counters::Counters;
use crate::sync::{AtomicU64, CounterU64, Ordering};
use crate::{
    AllocPageError, CacheMode, HeapConfig, NodeBinder, NodeId, OwnedPage, Page, PageRef, PageSizes,
    PageType, RejectedPage,
};
use hotmem_os::{MemRange, MemTag, Memory, Reservation};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use uncommit::UncommitStats;

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
/// - **reuse** freed memory from the cache. In the default
///   [`CacheMode::Mapped`] freed pages become ranges of the address space
///   that merge with their cached neighbours, and a page of any size is cut
///   from a range that fits; in the baseline [`CacheMode::PageCache`] freed
///   pages are kept whole by size class (same type first, else a larger
///   cached page is split);
/// - **harvest** the cache when the heap is at capacity and no cached range
///   fits: physical memory is taken from several cached ranges and mapped
///   at the new page's address (counted as Page Cache Flush);
/// - **defragment**: a freed small page in the upper half of the address
///   space moves to the lowest free address;
/// - **uncommit** cached pages unused for the configured delay.
///
/// Each partition (one per node) has its own lock, its own cache and
/// its own slice of the address space; a thread holds a partition's lock
/// only to claim or give back capacity, cached blocks and address space,
/// never across a system call: mapping, committing (`fallocate`), binding,
/// unmapping and punching run after the claim, with no lock held, and a
/// short second critical section finishes or undoes the claim. Allocating
/// threads therefore never wait for another thread's system call.
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
    cache_mode: CacheMode,
    counters: Counters,
    next_page_id: AtomicU64,
    partitions: Vec<Partition>,
    reservation: Reservation,
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
        // Each partition gets its own slice of the address space, so that
        // partitions never share a lock: `reserved` is `per_partition *
        // ratio` per partition, a whole number of granules.
        let slice = reserved / config.partitions.len();
        let mut partitions = Vec::with_capacity(config.partitions.len());
        for (i, &node) in config.partitions.iter().enumerate() {
            let physical = memory
                .physical(per_partition)
                .map_err(HeapError::Physical)?;
            let space = reservation
                .subrange(i * slice, slice)
                .expect("the slices tile the reservation");
            partitions.push(Partition::new(
                node,
                per_partition,
                sizes,
                config.cache_mode,
                physical,
                space,
            ));
        }
        Ok(PageAllocator {
            id: next_heap_id(),
            sizes,
            partition_capacity: per_partition,
            nodes: config.partitions.clone(),
            binder: config.binder.clone(),
            uncommit_delay: config.uncommit_delay,
            cache_mode: config.cache_mode,
            counters: Counters::default(),
            next_page_id: AtomicU64::new(1),
            partitions,
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

    /// How free memory is cached ([`HeapConfig::cache_mode`]).
    pub fn cache_mode(&self) -> CacheMode {
        self.cache_mode
    }

    /// The address space reserved for the heap.
    pub fn reserved(&self) -> MemRange {
        self.reservation.range()
    }

    /// The partition of a page of this heap (by its node).
    fn partition_of(&self, page: &Page) -> Option<usize> {
        if page.heap_id() != self.id {
            return None;
        }
        self.nodes.iter().position(|&n| n == page.node())
    }

    /// A new page over `range` of partition `p`, in state `Allocated`.
    fn new_page(&self, req: &PageRequest, p: usize, range: MemRange) -> PageRef {
        let id = self.next_page_id.fetch_add(1, Ordering::Relaxed);
        PageRef::new(Page::new(
            req.page_type,
            req.age,
            self.nodes[p],
            range,
            self.id,
            id,
        ))
    }

    /// Unmaps a range of our own reservation. Failing leaves an extra
    /// mapping of memory we still own (harmless); it is not reported.
    fn unmap_quietly(&self, range: MemRange) {
        let _ = self.reservation.unmap(range);
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
}

/// A process-wide unique id for each heap, so that a page of one heap is
/// recognised as foreign by another.
fn next_heap_id() -> u64 {
    static NEXT: CounterU64 = CounterU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
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
