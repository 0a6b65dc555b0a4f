//! The mixed-size page workload of the `mapped_cache` example and
//! `benches/page.rs`: a heap filled with small, medium and large pages;
//! each round frees about half of its pages, in random order (the sizes
//! interleaved), then allocates again up to the fill level in the next
//! round's mix of sizes (small-heavy, medium-heavy, large-heavy, in turn).
//! Only the allocation calls are timed; the remap system calls are counted
//! by a memory observer, apart for the allocation path and the free path.
//!
//! The same work runs on three backends: the page allocator with each
//! [`CacheMode`], and what a Rust user would pick instead of a page cache:
//! the system allocator (`std::alloc::System`, 2 MiB aligned), which maps
//! and unmaps large blocks itself.

use hotmem_os::{MemTag, Memory, MemoryEvent, MemoryObserver};
use hotmem_page::{
    Age, CacheMode, GRANULE_SIZE, HeapConfig, NodeId, OwnedPage, PageAllocator, PageRequest,
    PageType,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Which backend a run uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// The page allocator with this cache mode.
    Heap(CacheMode),
    /// `std::alloc::System`, blocks of the pages' sizes aligned to 2 MiB.
    System,
}

impl Backend {
    /// Every backend, the new design first.
    pub(crate) const ALL: [Backend; 3] = [
        Backend::Heap(CacheMode::Mapped),
        Backend::Heap(CacheMode::PageCache),
        Backend::System,
    ];

    pub(crate) fn name(self) -> String {
        match self {
            Backend::Heap(mode) => mode.to_string(),
            Backend::System => "System".to_string(),
        }
    }
}

/// Counts the heap's map and unmap calls (`Commit` / `Uncommit` events of
/// [`MemTag::JAVA_HEAP`]: every mmap of memfd memory into the heap's
/// reservation, and every munmap), the way NMT sees them.
#[derive(Debug, Default)]
pub(crate) struct RemapCounter {
    maps: AtomicU64,
    unmaps: AtomicU64,
}

impl RemapCounter {
    /// Map plus unmap calls so far.
    pub(crate) fn syscalls(&self) -> u64 {
        self.maps.load(Ordering::Relaxed) + self.unmaps.load(Ordering::Relaxed)
    }
}

impl MemoryObserver for RemapCounter {
    fn observe(&self, event: &MemoryEvent) {
        if event.tag() != MemTag::JAVA_HEAP {
            return;
        }
        match event {
            MemoryEvent::Commit { .. } => self.maps.fetch_add(1, Ordering::Relaxed),
            MemoryEvent::Uncommit { .. } => self.unmaps.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }
}

/// A page of either backend.
enum Block {
    Heap(OwnedPage),
    System(*mut u8, Layout),
}

/// What one run did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Every allocation's latency, in nanoseconds.
    pub(crate) latencies_ns: Vec<u64>,
    /// Bytes allocated.
    pub(crate) bytes: u64,
    /// Rounds run.
    pub(crate) rounds: u64,
    /// Map + unmap calls during allocations (harvests and flushes).
    pub(crate) alloc_remaps: u64,
    /// Map + unmap calls during frees (defragment).
    pub(crate) free_remaps: u64,
    /// The heap's counters at the end (page allocator only).
    pub(crate) counters: Option<hotmem_page::CounterSnapshot>,
}

impl Outcome {
    /// The `q` quantile of the latencies (0.5 = median).
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        let mut v = self.latencies_ns.clone();
        v.sort_unstable();
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        Duration::from_nanos(v.get(i).copied().unwrap_or(0))
    }
}

/// The workload on one backend. Single-threaded: what it measures is the
/// cache's policy and the system calls it causes, not contention.
pub(crate) struct MixedPages {
    heap: Option<PageAllocator>,
    remaps: Arc<RemapCounter>,
    fill: usize,
    medium: usize,
    live: Vec<(Block, usize)>,
    used: usize,
    rng: u64,
    round: u64,
    outcome: Outcome,
}

/// Small-heavy, medium-heavy, large-heavy: percent small, medium (the
/// rest large).
const MIXES: [(u64, u64); 3] = [(70, 20), (20, 60), (20, 20)];
/// Large pages of 1 to 6 granules (2 to 12 MiB).
const LARGE_GRANULES: u64 = 6;

impl MixedPages {
    /// A heap of `capacity_mib` (medium pages as ZGC sizes them: 8 MiB at
    /// 256 MiB), filled to `fill_percent` each round. The page allocator's
    /// heap is committed in full up front (into its cache), so that every
    /// round measures reuse, not first commits.
    ///
    /// # Panics
    /// If the heap cannot be created.
    pub(crate) fn new(backend: Backend, capacity_mib: usize, fill_percent: usize) -> MixedPages {
        let capacity = capacity_mib << 20;
        let remaps = Arc::new(RemapCounter::default());
        let config = HeapConfig::new(capacity);
        let medium = config.page_sizes().expect("page sizes").medium_page();
        let heap = match backend {
            Backend::Heap(mode) => {
                let memory = Memory::with_observer(remaps.clone());
                let heap = PageAllocator::new(&memory, config.cache_mode(mode)).expect("heap");
                let req = PageRequest::medium(&heap.page_sizes(), Age::EDEN, NodeId::ZERO);
                let pages: Vec<_> = std::iter::from_fn(|| heap.alloc_page(req).ok()).collect();
                for page in pages {
                    heap.free_page(page).expect("free");
                }
                Some(heap)
            }
            Backend::System => None,
        };
        let base = heap.as_ref().map(PageAllocator::counters);
        MixedPages {
            heap,
            remaps,
            fill: capacity / 100 * fill_percent.clamp(1, 100),
            medium,
            live: Vec::new(),
            used: 0,
            rng: 0x2545_F491_4F6C_DD1D,
            round: 0,
            outcome: Outcome {
                counters: base,
                ..Outcome::default()
            },
        }
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// The next page of this round's mix.
    fn next_page(&mut self) -> (PageType, usize) {
        let (small, medium) = MIXES[(self.round % MIXES.len() as u64) as usize];
        let r = self.next() % 100;
        if r < small {
            (PageType::Small, GRANULE_SIZE)
        } else if r < small + medium {
            (PageType::Medium, self.medium)
        } else {
            let granules = 1 + self.next() % LARGE_GRANULES;
            (PageType::Large, granules as usize * GRANULE_SIZE)
        }
    }

    fn alloc(&mut self, page_type: PageType, size: usize) -> Option<Block> {
        match &self.heap {
            Some(heap) => {
                let req = PageRequest {
                    page_type,
                    size,
                    age: Age::EDEN,
                    node: NodeId::ZERO,
                };
                heap.alloc_page(req).ok().map(Block::Heap)
            }
            None => {
                let layout = Layout::from_size_align(size, GRANULE_SIZE).expect("layout");
                // SAFETY: the layout has a non-zero size.
                let ptr = unsafe { System.alloc(layout) };
                (!ptr.is_null()).then_some(Block::System(ptr, layout))
            }
        }
    }

    fn free(&mut self, block: Block) {
        match block {
            Block::Heap(page) => {
                let heap = self.heap.as_ref().expect("a heap page");
                heap.free_page(page).expect("our own page");
            }
            // SAFETY: allocated by `System.alloc` with this layout, freed once.
            Block::System(ptr, layout) => unsafe { System.dealloc(ptr, layout) },
        }
    }

    /// Frees about half of the live pages, in random order, and starts the
    /// next round's mix.
    fn free_half(&mut self) {
        let before = self.remaps.syscalls();
        let mut live = std::mem::take(&mut self.live);
        // Shuffle (Fisher-Yates), then free the first half.
        for i in (1..live.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            live.swap(i, j);
        }
        let keep = live.split_off(live.len() / 2);
        for (block, size) in live {
            self.free(block);
            self.used -= size;
        }
        self.live = keep;
        self.round += 1;
        self.outcome.rounds += 1;
        self.outcome.free_remaps += self.remaps.syscalls() - before;
    }

    /// One timed allocation (after a free phase when the fill level is
    /// reached); returns how long the allocation call took.
    ///
    /// # Panics
    /// If a page cannot be had below the fill level even after freeing.
    pub(crate) fn step(&mut self) -> Duration {
        let (page_type, size) = self.next_page();
        if self.used + size > self.fill {
            self.free_half();
        }
        let before = self.remaps.syscalls();
        let t0 = Instant::now();
        let block = self.alloc(page_type, size);
        let took = t0.elapsed();
        self.outcome.alloc_remaps += self.remaps.syscalls() - before;
        let block = block.expect("below the fill level there is room");
        let addr = match &block {
            Block::Heap(page) => page.range().start().as_ptr::<u64>(),
            Block::System(ptr, _) => ptr.cast::<u64>(),
        };
        // SAFETY: the block was just allocated, mapped and committed, and
        // is ours: initialise its first word, as a user of the page would.
        unsafe { addr.write_volatile(size as u64) };
        self.used += size;
        self.live.push((block, size));
        self.outcome.latencies_ns.push(took.as_nanos() as u64);
        self.outcome.bytes += size as u64;
        took
    }

    /// Runs `rounds` rounds and returns what they did.
    pub(crate) fn run_rounds(mut self, rounds: u64) -> Outcome {
        while self.outcome.rounds < rounds {
            self.step();
        }
        self.finish()
    }

    /// Frees everything, checks the heap, and returns what was done (the
    /// counters as differences over the run).
    pub(crate) fn finish(mut self) -> Outcome {
        for (block, _) in std::mem::take(&mut self.live) {
            self.free(block);
        }
        if let Some(heap) = &self.heap {
            heap.check_invariants();
            let base = self.outcome.counters.unwrap_or_default();
            let end = heap.counters();
            self.outcome.counters = Some(hotmem_page::CounterSnapshot {
                page_bytes_allocated: end.page_bytes_allocated - base.page_bytes_allocated,
                cache_flush_bytes: end.cache_flush_bytes - base.cache_flush_bytes,
                cache_flush_ops: end.cache_flush_ops - base.cache_flush_ops,
                cache_hits: end.cache_hits - base.cache_hits,
                cache_splits: end.cache_splits - base.cache_splits,
                cache_merges: end.cache_merges - base.cache_merges,
                defragment_ops: end.defragment_ops - base.defragment_ops,
                commit_bytes: end.commit_bytes - base.commit_bytes,
                ..end
            });
        }
        std::mem::take(&mut self.outcome)
    }
}
