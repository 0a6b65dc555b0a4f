//! The page allocator on real memory: cache reuse, merge, split, harvest
//! (flush), defragment, uncommit, partitions and binding, NMT-visible
//! commits, bad input; in both cache modes where they differ.

// Real memory and real threads: under `--cfg hotmem_loom` the crate's locks
// are loom's, which work only inside a loom model (`src/**/tests/loom_*.rs`).
#![cfg(not(hotmem_loom))]

use hotmem_os::{MemRange, MemTag, Memory, MemoryEvent, MemoryObserver};
use hotmem_page::{
    Age, AllocError, AllocPageError, CacheMode, FreeError, HeapConfig, MediumPageMode, NodeId,
    ObjectAllocator, ObjectLayout, OwnedPage, Page, PageAllocator, PageRequest, PageState,
    PageType, StatSampler,
};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

fn heap(capacity: usize) -> PageAllocator {
    heap_with(capacity, CacheMode::default())
}

fn heap_with(capacity: usize, mode: CacheMode) -> PageAllocator {
    PageAllocator::new(
        &Memory::new(),
        HeapConfig::new(capacity)
            .medium_page_size(4 * MIB)
            .cache_mode(mode),
    )
    .expect("heap")
}

fn small(h: &PageAllocator) -> OwnedPage {
    h.alloc_page(PageRequest::small(&h.page_sizes(), Age::EDEN, NodeId::ZERO))
        .expect("small page")
}

fn medium(h: &PageAllocator) -> OwnedPage {
    h.alloc_page(PageRequest::medium(
        &h.page_sizes(),
        Age::EDEN,
        NodeId::ZERO,
    ))
    .expect("medium page")
}

/// Frees pages through their owners' handles.
fn free_all(h: &PageAllocator, pages: impl IntoIterator<Item = OwnedPage>) {
    for p in pages {
        h.free_page(p).expect("free");
    }
}

fn touch(p: &Page) {
    let r = p.range();
    // SAFETY: the page is live: its whole range is mapped and committed.
    unsafe {
        r.start().as_ptr::<u8>().write_bytes(0x5A, r.len());
        assert_eq!(r.start().as_ptr::<u8>().add(r.len() - 1).read(), 0x5A);
    }
}

#[test]
fn cached_pages_are_reused_by_type() {
    let h = heap(16 * MIB);
    let a = small(&h);
    touch(&a);
    let range = a.range();
    h.free_page(a).unwrap();
    assert_eq!(h.usage().cached, 2 * MIB);
    let b = small(&h);
    assert_eq!(b.range(), range, "the cached small page comes back");
    assert_eq!(h.counters().commit_bytes, 2 * MIB as u64);
    h.check_invariants();
}

/// The page cache keeps freed small pages whole: a medium page at full
/// capacity flushes them and remaps their memory.
#[test]
fn page_cache_flushes_cached_small_pages_for_a_medium_page() {
    let h = heap_with(16 * MIB, CacheMode::PageCache);
    let smalls: Vec<_> = (0..8).map(|_| small(&h)).collect();
    smalls.iter().for_each(|p| touch(p));
    assert!(matches!(
        h.alloc_page(PageRequest::medium(
            &h.page_sizes(),
            Age::EDEN,
            NodeId::ZERO
        )),
        Err(AllocPageError::HeapExhausted { .. })
    ));
    free_all(&h, smalls);
    let m = medium(&h);
    touch(&m);
    let c = h.counters();
    assert_eq!(c.cache_flush_bytes, 4 * MIB as u64);
    assert_eq!(c.cache_flush_ops, 1);
    assert_eq!(
        c.commit_bytes,
        16 * MIB as u64,
        "no new memory: remapped, not copied"
    );
    assert_eq!(h.usage().capacity, 16 * MIB);
    assert_eq!(h.physical_committed_bytes().unwrap(), 16 * MIB);
    h.check_invariants();
}

/// The mapped cache merges the same freed small pages into one range: the
/// medium page is cut from it, with no remap.
#[test]
fn mapped_cache_merges_freed_small_pages_into_a_medium_page() {
    let h = heap(16 * MIB);
    let smalls: Vec<_> = (0..8).map(|_| small(&h)).collect();
    smalls.iter().for_each(|p| touch(p));
    let bottom = smalls[0].range().start();
    free_all(&h, smalls);
    assert_eq!(h.usage().partitions[0].cached_pages.large, 1, "one range");
    let m = medium(&h);
    touch(&m);
    let c = h.counters();
    assert_eq!((c.cache_flush_bytes, c.cache_flush_ops), (0, 0));
    assert_eq!((c.cache_hits, c.cache_splits), (1, 1));
    assert_eq!(c.cache_merges, 7, "each small page met its neighbour");
    assert_eq!(
        m.range().end().get(),
        bottom.get() + 16 * MIB,
        "cut at the top of the range"
    );
    h.check_invariants();
}

/// When no single cached range fits, the mapped cache harvests several and
/// remaps their memory into one new range, without committing more.
#[test]
fn mapped_cache_harvests_only_when_no_range_fits() {
    let h = heap(16 * MIB);
    let mut smalls: Vec<_> = (0..8).map(|_| small(&h)).collect();
    smalls.iter().for_each(|p| touch(p));
    // Every other page freed: four ranges of one granule, none adjacent.
    let kept: Vec<_> = (0..4).map(|i| smalls.remove(i)).collect();
    free_all(&h, smalls);
    assert_eq!(h.usage().partitions[0].cached_pages.small, 4);
    let m = medium(&h);
    touch(&m);
    let c = h.counters();
    assert_eq!(
        (c.cache_flush_bytes, c.cache_flush_ops),
        (4 * MIB as u64, 1)
    );
    assert_eq!(c.commit_bytes, 16 * MIB as u64, "remapped, not committed");
    assert_eq!(h.usage().partitions[0].cached_pages.small, 2);
    kept.iter().for_each(|p| touch(p));
    h.check_invariants();
}

#[test]
fn a_small_page_split_from_a_high_medium_page_is_defragmented_when_freed() {
    let h = heap(16 * MIB);
    let mediums: Vec<_> = (0..4).map(|_| medium(&h)).collect();
    let reserved = h.reserved();
    assert!(
        mediums
            .iter()
            .all(|m| m.range().start().get() >= reserved.start().get() + reserved.len() / 2)
    );
    free_all(&h, mediums);
    // No small page cached: a cached medium page is split; the small page
    // sits at a high address.
    let s = small(&h);
    assert!(s.range().start().get() >= reserved.start().get() + reserved.len() / 2);
    touch(&s);
    h.free_page(s).unwrap();
    assert_eq!(h.counters().defragment_ops, 1);
    // It went to the bottom of the address space and is reused from there.
    let again = small(&h);
    assert_eq!(again.range().start(), reserved.start());
    touch(&again);
    h.check_invariants();
}

#[test]
fn uncommit_returns_memory_unused_for_the_delay() {
    // The page cache uncommits the two pages; the mapped cache merged them
    // into one range.
    for (mode, blocks) in [(CacheMode::PageCache, 2), (CacheMode::Mapped, 1)] {
        uncommit_after_the_delay(mode, blocks);
    }
}

fn uncommit_after_the_delay(mode: CacheMode, blocks: usize) {
    let h = PageAllocator::new(
        &Memory::new(),
        HeapConfig::new(16 * MIB)
            .uncommit_delay(Duration::from_secs(60))
            .cache_mode(mode),
    )
    .unwrap();
    let mut pages: Vec<_> = (0..3).map(|_| small(&h)).collect();
    pages.iter().for_each(|p| touch(p));
    let kept = pages.pop().unwrap();
    free_all(&h, pages);
    let now = Instant::now();
    assert_eq!(h.uncommit(now).unwrap().bytes, 0, "not unused for 60 s yet");
    let stats = h.uncommit(now + Duration::from_secs(61)).unwrap();
    assert_eq!((stats.blocks, stats.bytes), (blocks, 4 * MIB), "{mode}");
    assert_eq!(h.usage().capacity, 2 * MIB);
    assert_eq!(h.physical_committed_bytes().unwrap(), 2 * MIB);
    assert_eq!(h.counters().uncommit_bytes, 4 * MIB as u64);
    touch(&kept);
    h.check_invariants();
}

/// A freed page merges with a cached neighbour freed earlier; uncommit
/// still takes only the part unused since the cutoff.
#[test]
fn mapped_cache_uncommits_the_old_part_of_a_merged_range() {
    let h = heap(16 * MIB);
    let pages: Vec<_> = (0..3).map(|_| small(&h)).collect();
    pages.iter().for_each(|p| touch(p));
    let mut pages = pages.into_iter();
    let (old, new, kept) = (
        pages.next().unwrap(),
        pages.next().unwrap(),
        pages.next().unwrap(),
    );
    h.free_page(old).unwrap();
    let cutoff = Instant::now();
    // The next free must be later than the cutoff: wait for the clock to
    // move (it is monotonic; no scheduling is assumed).
    while Instant::now() <= cutoff {
        std::hint::spin_loop();
    }
    h.free_page(new).unwrap();
    assert_eq!(h.usage().partitions[0].cached_pages.medium, 1, "merged");
    let stats = h.uncommit_older_than(cutoff).unwrap();
    assert_eq!((stats.blocks, stats.bytes), (1, 2 * MIB));
    assert_eq!(h.usage().cached, 2 * MIB);
    assert_eq!(h.physical_committed_bytes().unwrap(), 4 * MIB);
    touch(&kept);
    h.check_invariants();
}

/// Issue 12: `uncommit` with a delay longer than the clock has run (a young
/// process or machine, here a delay no clock reaches) uncommitted every
/// cached page at once, instead of none.
#[test]
fn uncommit_with_a_delay_beyond_the_clock_uncommits_nothing() {
    for delay in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
        let h = PageAllocator::new(
            &Memory::new(),
            HeapConfig::new(16 * MIB).uncommit_delay(delay),
        )
        .unwrap();
        let p = small(&h);
        h.free_page(p).unwrap();
        let stats = h.uncommit(Instant::now()).unwrap();
        assert_eq!((stats.blocks, stats.bytes), (0, 0), "{delay:?}");
        assert_eq!(h.usage().cached, 2 * MIB);
        h.check_invariants();
    }
}

/// Counts committed JAVA_HEAP bytes the way NMT does, from the events.
#[derive(Default)]
struct CommittedHeap(AtomicIsize);

impl MemoryObserver for CommittedHeap {
    fn observe(&self, e: &MemoryEvent) {
        if e.tag() != MemTag::JAVA_HEAP {
            return;
        }
        match e {
            MemoryEvent::Commit { range, .. } => {
                self.0.fetch_add(range.len() as isize, Ordering::Relaxed)
            }
            MemoryEvent::Uncommit { range, .. } => {
                self.0.fetch_sub(range.len() as isize, Ordering::Relaxed)
            }
            _ => 0,
        };
    }
}

#[test]
fn an_observer_sees_exactly_the_committed_heap() {
    let nmt = Arc::new(CommittedHeap::default());
    let memory = Memory::with_observer(nmt.clone());
    let h =
        PageAllocator::new(&memory, HeapConfig::new(16 * MIB).medium_page_size(4 * MIB)).unwrap();
    let check = |h: &PageAllocator| {
        h.check_invariants();
        assert_eq!(nmt.0.load(Ordering::Relaxed) as usize, h.committed_bytes());
    };
    let smalls: Vec<_> = (0..8).map(|_| small(&h)).collect();
    check(&h);
    free_all(&h, smalls);
    let m = medium(&h); // flush
    check(&h);
    h.free_page(m).unwrap();
    let s = small(&h); // split of a cached medium page
    h.free_page(s).unwrap(); // maybe defragment
    check(&h);
    h.uncommit_older_than(Instant::now()).unwrap();
    check(&h);
    assert_eq!(h.committed_bytes(), 0);
}

#[test]
fn partitions_prefer_the_callers_node_and_bind_fresh_memory() {
    let bound: Arc<Mutex<Vec<(MemRange, NodeId)>>> = Arc::default();
    let log = bound.clone();
    let config = HeapConfig::new(16 * MIB)
        .partitions(&[NodeId::new(3), NodeId::new(7)])
        .medium_page_size(4 * MIB)
        .binder(Arc::new(move |r: MemRange, n: NodeId| {
            log.lock().unwrap().push((r, n))
        }));
    let h = PageAllocator::new(&Memory::new(), config).unwrap();
    let sizes = h.page_sizes();
    let on7: Vec<_> = (0..4)
        .map(|_| {
            h.alloc_page(PageRequest::small(&sizes, Age::OLD, NodeId::new(7)))
                .unwrap()
        })
        .collect();
    assert!(on7.iter().all(|p| p.node() == NodeId::new(7)));
    // Node 7 is full: the next one comes from node 3.
    let spill = h
        .alloc_page(PageRequest::small(&sizes, Age::OLD, NodeId::new(7)))
        .unwrap();
    assert_eq!(spill.node(), NodeId::new(3));
    let b = bound.lock().unwrap();
    assert_eq!(b.len(), 5);
    assert!(b[..4].iter().all(|&(_, n)| n == NodeId::new(7)));
    assert_eq!(b[4], (spill.range(), NodeId::new(3)));
    assert_eq!(h.usage().partitions[1].used, 8 * MIB);
    assert_eq!(
        h.alloc_page(PageRequest::small(&sizes, Age::OLD, NodeId::new(5)))
            .unwrap_err(),
        AllocPageError::UnknownNode(NodeId::new(5))
    );
}

#[test]
fn bad_input_changes_nothing() {
    let h = heap(16 * MIB);
    let other = heap(16 * MIB);
    let sizes = h.page_sizes();
    let p = small(&h);
    let before = h.usage();
    let bad = |size| PageRequest {
        page_type: PageType::Large,
        size,
        age: Age::EDEN,
        node: NodeId::ZERO,
    };
    assert_eq!(
        h.alloc_page(bad(0)).unwrap_err(),
        AllocPageError::BadSize { size: 0 }
    );
    assert_eq!(
        h.alloc_page(bad(3 * MIB)).unwrap_err(),
        AllocPageError::BadSize { size: 3 * MIB }
    );
    assert!(matches!(
        h.alloc_page(bad(usize::MAX - MIB + 1)),
        Err(AllocPageError::BadSize { .. })
    ));
    // Larger than the heap: no GC can make room, so not "exhausted".
    assert_eq!(
        h.alloc_page(bad(64 * MIB)).unwrap_err(),
        AllocPageError::BadSize { size: 64 * MIB }
    );
    let wrong = PageRequest {
        page_type: PageType::Medium,
        ..PageRequest::small(&sizes, Age::EDEN, NodeId::ZERO)
    };
    assert!(matches!(
        h.alloc_page(wrong),
        Err(AllocPageError::BadSize { .. })
    ));
    // A page of this heap freed at another heap comes back, untouched.
    let rejected = other.free_page(p).unwrap_err();
    assert_eq!(rejected.error(), FreeError::ForeignPage);
    let p = rejected.into_page();
    let view = p.view();
    // SAFETY: refused (listed twice): nothing is freed.
    let twice = unsafe { h.free_pages(&[view.clone(), view.clone()]) };
    assert_eq!(twice, Err(FreeError::AlreadyFreed));
    assert_eq!(
        p.state(),
        PageState::Allocated,
        "a rejected batch freed nothing"
    );
    assert_eq!(h.usage(), before);
    h.free_page(p).unwrap();
    // SAFETY: the page is freed already: refused.
    let again = unsafe { h.free_pages(std::slice::from_ref(&view)) };
    assert_eq!(again, Err(FreeError::AlreadyFreed));
    h.check_invariants();
}

#[test]
fn object_allocator_errors_and_retirement() {
    let h = Arc::new(heap(16 * MIB));
    let objects = ObjectAllocator::new(h.clone(), MediumPageMode::Synchronized);
    let l = |n| ObjectLayout::new(n).unwrap();
    let obj = objects
        .alloc_object(l(300 << 10), Age::EDEN, NodeId::ZERO)
        .unwrap();
    let page = objects
        .current_medium_page(Age::EDEN, NodeId::ZERO)
        .expect("installed");
    assert!(page.contains_object(obj));
    assert_eq!(page.state(), PageState::Installed);
    // SAFETY: refused: the page is installed (and nothing would use it).
    let freed = unsafe { h.free_pages(std::slice::from_ref(&page)) };
    assert_eq!(freed, Err(FreeError::InUse));
    assert_eq!(
        objects.alloc_object(l(64), Age::EDEN, NodeId::new(9)),
        Err(AllocError::Page(AllocPageError::UnknownNode(NodeId::new(
            9
        ))))
    );
    // Exhaustion is an error a GC can act on, never a panic.
    let mut large = Vec::new();
    let err = loop {
        match objects.alloc_object(l(3 * MIB), Age::OLD, NodeId::ZERO) {
            Ok(a) => large.push(a),
            Err(e) => break e,
        }
    };
    assert!(err.is_heap_exhausted(), "{err}");
    assert_eq!(large.len(), 3);
    // SAFETY: `objects` is used by this thread only.
    let retired = unsafe { objects.retire_pages() };
    assert_eq!(retired.len(), 1);
    assert!(
        objects
            .current_medium_page(Age::EDEN, NodeId::ZERO)
            .is_none()
    );
    assert_eq!(page.state(), PageState::Allocated);
    // SAFETY: `objects` is retired and the large objects are dead: nobody
    // allocates in or uses any page of the heap.
    unsafe { h.free_pages(&h.pages()) }.unwrap();
    drop(retired);
    assert_eq!(h.usage().used, 0);
    let again = objects
        .alloc_object(l(300 << 10), Age::EDEN, NodeId::ZERO)
        .unwrap();
    assert!(h.pages().iter().any(|p| p.contains_object(again)));
}

/// Retiring the replaced pages only: the page a slot still allocates in
/// stays installed and goes on filling above its top, the one it replaced
/// leaves the allocator (and can be freed).
#[test]
fn retiring_the_replaced_pages_keeps_the_current_one() {
    let h = Arc::new(heap(64 * MIB));
    let objects = ObjectAllocator::new(h.clone(), MediumPageMode::Synchronized);
    let l = |n| ObjectLayout::new(n).unwrap();
    let alloc = || {
        objects
            .alloc_object(l(300 << 10), Age::EDEN, NodeId::ZERO)
            .unwrap()
    };
    alloc();
    let first = objects
        .current_medium_page(Age::EDEN, NodeId::ZERO)
        .expect("installed");
    let second = loop {
        let obj = alloc();
        if !first.contains_object(obj) {
            break objects
                .current_medium_page(Age::EDEN, NodeId::ZERO)
                .expect("installed");
        }
    };
    let top = second.top();
    // SAFETY: `objects` is used by this thread only.
    let retired = unsafe { objects.retire_replaced_pages() };
    assert_eq!(retired.len(), 1);
    assert_eq!(retired[0].range(), first.range());
    assert_eq!(first.state(), PageState::Allocated);
    assert_eq!(second.state(), PageState::Installed);
    assert_eq!(objects.installed_pages().len(), 1);
    let next = alloc();
    assert!(second.contains_object(next) && next >= top, "above the top");
    // SAFETY: the replaced page is retired and its objects dead.
    unsafe { h.free_pages(std::slice::from_ref(&first)) }.unwrap();
    drop(retired);
    // SAFETY: as above: nothing was replaced since.
    assert!(unsafe { objects.retire_replaced_pages() }.is_empty());
}

#[test]
fn statistics_report_as_text_and_data() {
    let h = heap(16 * MIB);
    let t0 = Instant::now();
    let mut sampler = StatSampler::new(h.counters(), t0);
    let p = medium(&h);
    h.undo_alloc_page(p).unwrap();
    sampler.sample(h.counters(), t0 + Duration::from_secs(1));
    let report = sampler.report();
    let undo = report.row("Memory: Medium Page Undo").unwrap();
    assert_eq!((undo.last_10s.avg, undo.total.max), (1.0, 1.0));
    assert_eq!(
        report.row("Memory: Allocation Rate").unwrap().last_10s.max,
        4.0
    );
    let text = report.to_string();
    assert!(text.lines().count() == 2 + report.rows.len());
    assert!(text.contains("[gc,stats    ] Memory: Undo Page Allocation"));
    assert!(text.contains("MB/s") && text.contains("ops/s"));
    let json = serde_json::to_string(&report).unwrap();
    let back: hotmem_page::StatsReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
    let counters: hotmem_page::CounterSnapshot =
        serde_json::from_str(&serde_json::to_string(&h.counters()).unwrap()).unwrap();
    assert_eq!(counters.undo_ops.medium, 1);
}

/// Issue 12: sizes near the top of `usize` flowed into `used + size`
/// unchecked (a panic in debug builds, a wrap in release).
#[test]
fn sizes_near_the_top_of_usize_are_bad_sizes() {
    let h = heap(16 * MIB);
    let _used = small(&h); // `used` > 0, so that `used + size` would overflow
    let before = h.usage();
    let granule = h.page_sizes().granule();
    let down = |n: usize| n & !(granule - 1);
    for size in [
        usize::MAX,
        down(usize::MAX),
        down(usize::MAX) - granule,
        isize::MAX as usize,
        down(isize::MAX as usize),
        down(isize::MAX as usize) + granule,
        16 * MIB + granule,
    ] {
        for page_type in PageType::ALL {
            let req = PageRequest {
                page_type,
                size,
                age: Age::EDEN,
                node: NodeId::ZERO,
            };
            assert_eq!(
                h.alloc_page(req).unwrap_err(),
                AllocPageError::BadSize { size },
                "{page_type} page of {size:#x}"
            );
        }
    }
    let objects = ObjectAllocator::new(&h, MediumPageMode::Synchronized);
    for size in [
        usize::MAX - ObjectLayout::MAX_ALIGN - ObjectLayout::MIN_ALIGN,
        isize::MAX as usize,
        isize::MAX as usize + 1,
    ] {
        let Ok(layout) = ObjectLayout::new(size) else {
            continue; // rejected by the layout: fine too
        };
        let err = objects
            .alloc_object(layout, Age::EDEN, NodeId::ZERO)
            .unwrap_err();
        assert!(!err.is_heap_exhausted(), "{size:#x}: {err}");
        assert!(
            matches!(err, AllocError::Page(AllocPageError::BadSize { .. })),
            "{size:#x}: {err}"
        );
    }
    assert_eq!(h.usage(), before, "a rejected request changed the heap");
    h.check_invariants();
}

/// Issue 12: an object larger than the heap got `HeapExhausted`, so a caller
/// that collects and retries on exhaustion looped forever. Larger than any
/// partition can hold is `BadSize`; up to a partition it is a real page.
#[test]
fn an_object_larger_than_any_partition_is_a_bad_size_not_exhaustion() {
    let config = HeapConfig::new(32 * MIB)
        .partitions(&[NodeId::ZERO, NodeId::new(1)])
        .medium_page_size(4 * MIB);
    let h = Arc::new(PageAllocator::new(&Memory::new(), config).expect("heap"));
    let objects = ObjectAllocator::new(h.clone(), MediumPageMode::Synchronized);
    let l = |n| ObjectLayout::new(n).unwrap();
    // Beyond a partition (16 MiB), though within the heap (32 MiB), and
    // beyond the heap: no collection can ever make room.
    for size in [16 * MIB + 1, 20 * MIB, 32 * MIB, 32 * MIB + 1, 1 << 40] {
        let err = objects
            .alloc_object(l(size), Age::EDEN, NodeId::ZERO)
            .unwrap_err();
        assert!(!err.is_heap_exhausted(), "{size}: {err}");
        assert!(
            matches!(err, AllocError::Page(AllocPageError::BadSize { .. })),
            "{size}: {err}"
        );
        let page = size.next_multiple_of(2 * MIB);
        let req = PageRequest {
            page_type: PageType::Large,
            size: page,
            age: Age::EDEN,
            node: NodeId::ZERO,
        };
        assert_eq!(
            h.alloc_page(req).unwrap_err(),
            AllocPageError::BadSize { size: page }
        );
    }
    assert_eq!(h.usage().used, 0);
    // A whole partition is a legitimate page: allocated when there is room,
    // exhaustion (a GC helps) when there is not.
    let whole = objects
        .alloc_object(l(16 * MIB), Age::EDEN, NodeId::ZERO)
        .expect("a page of one whole partition");
    assert!(h.pages().iter().any(|p| p.contains_object(whole)));
    let _second = objects
        .alloc_object(l(16 * MIB), Age::EDEN, NodeId::ZERO)
        .expect("the other partition");
    let err = objects
        .alloc_object(l(16 * MIB), Age::EDEN, NodeId::ZERO)
        .unwrap_err();
    assert!(err.is_heap_exhausted(), "{err}");
    h.check_invariants();
}

/// Issue 12: only the owner's handle frees a page safely; a rejected free
/// hands the page back untouched.
#[test]
fn the_owner_frees_through_its_handle_and_gets_it_back_on_refusal() {
    let h = heap(16 * MIB);
    let p = small(&h);
    touch(&p);
    let view = p.view();
    assert_eq!(h.pages().len(), 1);
    assert!(std::ptr::eq::<Page>(&*h.pages()[0], &*view));
    assert_eq!(h.page_infos()[0], view.info());
    let a = p.alloc_object(ObjectLayout::new(64).unwrap()).unwrap();
    assert!(view.contains_object(a));
    h.free_page(p).unwrap();
    assert_eq!(view.state(), PageState::Freed);
    assert!(h.pages().is_empty());
    h.check_invariants();
}

/// Binds the calling thread to `cpu` alone (it runs there on return).
fn run_on(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).expect("bind to one allowed CPU");
}

/// A small object whose CPU has no page installed yet, in a heap with no
/// page left, goes into the room left in the page installed for another
/// CPU: the heap is exhausted only when every installed page of its age
/// and node is full too. (A collector's relocation with one free page
/// left, a worker and a mutator each on its own CPU, found no target for
/// the second and left its evacuation incomplete.)
#[test]
fn a_small_object_takes_another_cpus_page_before_the_heap_is_exhausted() {
    let allowed = rustix::thread::sched_getaffinity(None).expect("affinity");
    let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .take(2)
        .collect();
    let [first, second] = cpus[..] else {
        eprintln!("skipped: needs two CPUs to allocate from");
        return;
    };
    // A thread of its own: the binding stays with it.
    std::thread::spawn(move || {
        let h = Arc::new(heap(8 * MIB));
        let objects = ObjectAllocator::new(h.clone(), MediumPageMode::Synchronized);
        let layout = ObjectLayout::new(64).unwrap();
        run_on(first);
        let a = objects
            .alloc_object(layout, Age::EDEN, NodeId::ZERO)
            .expect("the first CPU's page");
        // Every other page of the heap taken.
        let mut taken = Vec::new();
        while let Ok(p) = h.alloc_page(PageRequest::small(&h.page_sizes(), Age::EDEN, NodeId::ZERO))
        {
            taken.push(p);
        }
        assert!(!taken.is_empty());
        run_on(second);
        let b = objects
            .alloc_object(layout, Age::EDEN, NodeId::ZERO)
            .expect("room in the first CPU's page");
        let page = objects.installed_pages();
        assert_eq!(page.len(), 1, "no page installed for the second CPU");
        let range = page[0].range();
        assert!(
            range.contains(a) && range.contains(b),
            "{a:?} {b:?} {range:?}"
        );
        // Another age has no page to share: the heap is exhausted for it.
        let err = objects
            .alloc_object(layout, Age::OLD, NodeId::ZERO)
            .unwrap_err();
        assert!(err.is_heap_exhausted(), "{err}");
        drop(objects);
        free_all(&h, taken);
    })
    .join()
    .unwrap();
}
