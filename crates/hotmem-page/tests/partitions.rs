//! Per-partition locking: threads allocate, free (with defragment), undo and
//! uncommit in two partitions at once while another thread checks every
//! invariant over and over. The system calls run between a claim and its
//! finish with no lock held, so the checker sees operations in transit:
//! the accounting must hold at every moment anyway, and nothing may be lost.

// Real memory and real threads: under `--cfg hotmem_loom` the crate's locks
// are loom's, which work only inside a loom model (`src/**/tests/loom_*.rs`).
#![cfg(not(hotmem_loom))]

use hotmem_os::Memory;
use hotmem_page::{
    Age, AllocPageError, CacheMode, HeapConfig, NodeId, OwnedPage, PageAllocator, PageRequest,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;
const THREADS: usize = 4;
const ROUNDS: usize = 300;

#[test]
fn invariants_hold_while_partitions_allocate_free_and_uncommit_concurrently() {
    for mode in [CacheMode::Mapped, CacheMode::PageCache] {
        concurrently(mode);
    }
}

fn concurrently(mode: CacheMode) {
    let nodes = [NodeId::new(0), NodeId::new(1)];
    let heap = Arc::new(
        PageAllocator::new(
            &Memory::new(),
            HeapConfig::new(64 * MIB)
                .medium_page_size(4 * MIB)
                .partitions(&nodes)
                .uncommit_delay(Duration::ZERO)
                .cache_mode(mode),
        )
        .expect("heap"),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let checker = {
        let (heap, stop) = (heap.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                heap.check_invariants();
                checks += 1;
            }
            checks
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (heap, start) = (heap.clone(), start.clone());
            std::thread::spawn(move || {
                let sizes = heap.page_sizes();
                let mut held: Vec<OwnedPage> = Vec::new();
                let mut allocated = 0usize;
                start.wait();
                for i in 0..ROUNDS {
                    let node = nodes[(t + i) % 2];
                    let req = if (i + t) % 5 == 0 {
                        PageRequest::medium(&sizes, Age::EDEN, node)
                    } else {
                        PageRequest::small(&sizes, Age::EDEN, node)
                    };
                    match heap.alloc_page(req) {
                        Ok(page) => {
                            // SAFETY: the page was just allocated: its whole
                            // range is mapped and committed, and it is ours.
                            unsafe { page.range().start().as_ptr::<u64>().write(i as u64) };
                            allocated += 1;
                            if i % 7 == 0 {
                                heap.undo_alloc_page(page).expect("undo our own page");
                            } else {
                                held.push(page);
                            }
                        }
                        Err(e) => assert!(matches!(e, AllocPageError::HeapExhausted { .. }), "{e}"),
                    }
                    if held.len() > 3 {
                        // Free the oldest: low small pages stay, high ones
                        // move down (defragment) on their way to the cache.
                        heap.free_page(held.remove(0)).expect("free our own page");
                    }
                    if i % 25 == 0 {
                        heap.uncommit(Instant::now()).expect("uncommit");
                    }
                }
                for page in held {
                    heap.free_page(page).expect("free our own page");
                }
                allocated
            })
        })
        .collect();
    start.wait();
    let allocated: usize = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    stop.store(true, Ordering::Relaxed);
    let checks = checker.join().expect("checker");
    assert!(allocated > 0 && checks > 0);
    heap.check_invariants();
    let usage = heap.usage();
    assert_eq!(usage.used, 0, "every page was freed");
    assert_eq!(usage.capacity, usage.cached);
    // Everything cached can be uncommitted: nothing is stuck in transit.
    heap.uncommit(Instant::now()).expect("uncommit");
    assert_eq!(heap.committed_bytes(), 0);
    heap.check_invariants();
    let c = heap.counters();
    println!("{mode}: {checks} checks; {c:?}");
    assert!(c.pages_freed > 0 && c.undo_ops.small + c.undo_ops.medium > 0);
}
