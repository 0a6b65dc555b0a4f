//! 16 threads allocating mixed sizes at once, in both medium page modes:
//! every object lies in a live page, is writable, and is disjoint from all
//! others; in synchronized mode no medium page is allocated in vain.

// Real memory and real threads: under `--cfg hotmem_loom` the crate's locks
// are loom's, which work only inside a loom model (`src/**/tests/loom_*.rs`).
#![cfg(not(hotmem_loom))]

use hotmem_os::{Address, Memory};
use hotmem_page::{
    Age, HeapConfig, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout, PageAllocator, PageType,
};
use std::sync::{Arc, Barrier};

const THREADS: usize = 16;
const PER_THREAD_BYTES: usize = 10 << 20;
const HEAP: usize = 1 << 30;

/// A small xorshift, so each thread has its own reproducible sizes.
fn sizes(seed: u64) -> impl Iterator<Item = usize> {
    let mut x = seed | 1;
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(match x % 100 {
            0 => (2 << 20) + (x as usize >> 8) % (1 << 20), // large
            1..=12 => (256 << 10) + (x as usize >> 8) % (768 << 10), // medium
            _ => 16 + (x as usize >> 8) % 4096,             // small
        })
    })
}

fn stress(mode: MediumPageMode) {
    // Room for all the work with a wide margin, even while the racy mode
    // briefly holds one extra medium page per thread: running out of memory
    // must not depend on how the threads are scheduled. Medium pages of
    // 8 MiB (objects up to 1 MiB), as ZGC sizes them for a 256 MiB heap.
    let config = HeapConfig::new(HEAP).medium_page_size(8 << 20);
    let heap = Arc::new(PageAllocator::new(&Memory::new(), config).expect("heap"));
    let objects = Arc::new(ObjectAllocator::new(heap.clone(), mode));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (objects, barrier) = (objects.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut mine: Vec<(Address, usize)> = Vec::new();
                let mut total = 0;
                for (seq, size) in sizes(0x9E37_79B9 * (t as u64 + 1)).enumerate() {
                    // A fixed amount of work, not a time limit: the objects
                    // each thread allocates do not depend on the machine.
                    if total >= PER_THREAD_BYTES {
                        break;
                    }
                    let layout = ObjectLayout::new(size).expect("layout");
                    let addr = match objects.alloc_object(layout, Age::EDEN, NodeId::ZERO) {
                        Ok(addr) => addr,
                        Err(e) => panic!("16 x 10 MiB fit in a 1 GiB heap: {e}"),
                    };
                    let stamp = ((t as u64) << 32) | seq as u64;
                    // SAFETY: a fresh object of at least 16 bytes in a mapped page.
                    unsafe {
                        addr.as_ptr::<u64>().write(stamp);
                        addr.as_ptr::<u8>()
                            .add(layout.size() - 8)
                            .cast::<u64>()
                            .write(stamp);
                    }
                    mine.push((addr, layout.size()));
                    total += layout.size();
                }
                (t, mine)
            })
        })
        .collect();
    let mut all: Vec<(Address, usize, u64)> = Vec::new();
    for h in handles {
        let (t, mine) = h.join().expect("thread");
        all.extend(
            mine.into_iter()
                .enumerate()
                .map(|(seq, (a, s))| (a, s, ((t as u64) << 32) | seq as u64)),
        );
    }
    assert!(all.len() > 1000, "only {} objects", all.len());
    all.sort();
    for w in all.windows(2) {
        assert!(
            w[0].0.get() + w[0].1 <= w[1].0.get(),
            "objects overlap: {:?} {:?}",
            w[0],
            w[1]
        );
    }
    let pages = heap.pages();
    for &(addr, size, stamp) in &all {
        let page = pages
            .iter()
            .find(|p| p.range().contains(addr))
            .unwrap_or_else(|| panic!("object {addr:?} in no live page"));
        assert!(
            addr.get() + size <= page.top().get(),
            "object beyond its page's top"
        );
        // SAFETY: the object is in a live page (checked above).
        let (first, last) = unsafe {
            (
                addr.as_ptr::<u64>().read(),
                addr.as_ptr::<u8>().add(size - 8).cast::<u64>().read(),
            )
        };
        assert_eq!(
            (first, last),
            (stamp, stamp),
            "object {addr:?} was overwritten"
        );
    }
    heap.check_invariants();
    let c = heap.counters();
    if mode == MediumPageMode::Synchronized {
        assert_eq!(
            c.undo_ops.medium, 0,
            "synchronized mode undid a medium page"
        );
        assert_eq!(c.pages_allocated.medium, c.pages_installed.medium);
    }
    assert_eq!(
        c.pages_allocated.medium,
        c.pages_installed.medium + c.undo_ops.medium
    );
    assert!(c.pages_allocated.get(PageType::Small) > 0 && c.pages_installed.medium > 0);
    // The GC: retire and free everything.
    let mut objects = Arc::into_inner(objects).expect("threads are done");
    drop(objects.retire_pages_exclusive());
    // SAFETY: the allocator is retired and the threads are done: nobody
    // allocates in or uses any page of the heap.
    unsafe { heap.free_pages(&heap.pages()) }.expect("free all");
    assert_eq!(heap.usage().used, 0);
    heap.check_invariants();
}

#[test]
fn stress_synchronized() {
    stress(MediumPageMode::Synchronized);
}

#[test]
fn stress_racy() {
    stress(MediumPageMode::Racy);
}
