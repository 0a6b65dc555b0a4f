//! hotmem-page: the small-object fast path; the scaling curve: small
//! (1 KiB) and medium (512 KiB) objects allocated by 1, 2, 4, 8 and 16
//! threads, Synchronized vs Racy in one group per object class, with the
//! undo and flush counts each configuration caused; and pages of mixed
//! sizes freed interleaved and allocated again in other sizes, the mapped
//! cache vs the page cache it replaced vs the system allocator, with the
//! harvests and remap calls each caused.

#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_os::Memory;
use hotmem_page::{
    Age, HeapConfig, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout, PageAllocator,
    PageRequest,
};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "../examples/stand_in_safepoint.rs"]
mod stand_in_safepoint;
use stand_in_safepoint::{StandInSafepoint, Step};

// The example's `run_rounds` is not used here: the bench drives the
// workload one allocation at a time.
#[allow(dead_code)]
#[path = "../examples/mixed_pages.rs"]
mod mixed_pages;
use mixed_pages::{Backend, MixedPages};

type Objects = ObjectAllocator<Arc<PageAllocator>>;

fn heap(capacity: usize, mode: MediumPageMode) -> (Arc<PageAllocator>, Arc<Objects>) {
    let heap =
        Arc::new(PageAllocator::new(&Memory::new(), HeapConfig::new(capacity)).expect("heap"));
    // Commit the whole heap up front (into the page cache), so that every
    // configuration measures allocation, not first-time commits.
    let req = PageRequest::medium(&heap.page_sizes(), Age::EDEN, NodeId::ZERO);
    let pages: Vec<_> = std::iter::from_fn(|| heap.alloc_page(req).ok()).collect();
    for page in pages {
        heap.free_page(page).expect("free");
    }
    let objects = Arc::new(ObjectAllocator::new(heap.clone(), mode));
    (heap, objects)
}

/// The "GC": free everything. The caller holds the write side of the
/// safepoint lock (or is the only thread).
fn collect(heap: &PageAllocator, objects: &Objects) {
    // SAFETY: no thread allocates: the caller excludes them; no object is
    // used any more (this "GC" frees everything).
    unsafe {
        objects.retire_pages();
        heap.free_pages(&heap.pages()).expect("free");
    }
}

fn small_fast_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("page/small_alloc");
    g.throughput(Throughput::Elements(1));
    let (heap, objects) = heap(256 << 20, MediumPageMode::Synchronized);
    for size in [16usize, 256, 4096] {
        let layout = ObjectLayout::new(size).expect("layout");
        g.bench_with_input(BenchmarkId::from_parameter(size), &layout, |b, &layout| {
            b.iter(
                || match objects.alloc_object(layout, Age::EDEN, NodeId::ZERO) {
                    Ok(a) => black_box(a),
                    Err(_) => {
                        collect(&heap, &objects);
                        objects
                            .alloc_object(layout, Age::EDEN, NodeId::ZERO)
                            .expect("after GC")
                    }
                },
            )
        });
    }
    g.finish();
}

/// Allocations a thread makes per hold of the read side of the stand-in
/// safepoint lock: a mutator allocates many objects between two polls (see
/// `examples/stand_in_safepoint.rs` for what one lock per object measured).
const ALLOCS_PER_POLL: u64 = 64;

/// `threads` threads allocate `per_thread` objects of `layout` each;
/// returns the wall time from the start barrier to the last thread's end.
fn contended_round(
    heap: &Arc<PageAllocator>,
    objects: &Arc<Objects>,
    threads: usize,
    per_thread: u64,
    layout: ObjectLayout,
) -> Duration {
    let safepoint = Arc::new(StandInSafepoint::default());
    let barrier = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (heap, objects, safepoint, barrier) = (
                heap.clone(),
                objects.clone(),
                safepoint.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                barrier.wait();
                let mut done = 0;
                while done < per_thread {
                    let batch = ALLOCS_PER_POLL.min(per_thread - done);
                    let alloc = || match objects.alloc_object(layout, Age::EDEN, NodeId::ZERO) {
                        Ok(a) => {
                            black_box(a);
                            done += 1;
                            Step::Allocated
                        }
                        Err(e) if e.is_heap_exhausted() => Step::HeapExhausted,
                        Err(e) => panic!("{e}"),
                    };
                    safepoint.batch(batch, alloc, || collect(&heap, &objects));
                }
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    workers.into_iter().for_each(|w| w.join().expect("worker"));
    t0.elapsed()
}

/// The scaling curve of one object class: every thread count in both
/// modes, in one group.
fn scaling(c: &mut Criterion, name: &str, layout: ObjectLayout) {
    let mut g = c.benchmark_group(format!("page/{name}_alloc_threads"));
    g.sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    let mut summary = Vec::new();
    for threads in [1usize, 2, 4, 8, 16] {
        for mode in [MediumPageMode::Racy, MediumPageMode::Synchronized] {
            let (heap, objects) = heap(1 << 30, mode);
            let base = heap.counters();
            g.throughput(Throughput::Elements(1));
            let id = BenchmarkId::new(mode.to_string(), format!("{threads}t"));
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    contended_round(
                        &heap,
                        &objects,
                        threads,
                        iters.div_ceil(threads as u64).max(1),
                        layout,
                    )
                })
            });
            let k = heap.counters();
            summary.push(format!(
                "{mode:>12} {threads:>2} threads: pages allocated small {:>6} medium {:>6}  medium installed {:>6} undo {:>5}  page cache flush {:>5} MiB  defragment {}",
                k.pages_allocated.small - base.pages_allocated.small,
                k.pages_allocated.medium - base.pages_allocated.medium,
                k.pages_installed.medium,
                k.undo_ops.medium,
                k.cache_flush_bytes >> 20,
                k.defragment_ops
            ));
        }
    }
    g.finish();
    println!("\npage/{name}_alloc_threads counts over the whole run of each configuration:");
    for line in summary {
        println!("  {line}");
    }
}

fn small_contended(c: &mut Criterion) {
    scaling(c, "small", ObjectLayout::new(1 << 10).expect("layout"));
}

fn medium_contended(c: &mut Criterion) {
    scaling(c, "medium", ObjectLayout::new(512 << 10).expect("layout"));
}

/// One allocation per iteration of the mixed-size workload
/// (`examples/mixed_pages.rs`: rounds that free about half of the pages,
/// interleaved, and allocate again to the fill level in another mix of
/// sizes), timing only the allocation calls: each cache mode and the
/// system allocator in one group, at 90% (a collector that starts before
/// the heap is full) and 100% (every round runs the heap to exhaustion).
fn mixed_sizes(c: &mut Criterion) {
    let mut g = c.benchmark_group("page/mixed_sizes");
    g.throughput(Throughput::Elements(1))
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    let mut summary = Vec::new();
    for fill in [90usize, 100] {
        for backend in Backend::ALL {
            let mut work = MixedPages::new(backend, 256, fill);
            let id = BenchmarkId::new(backend.name(), format!("fill{fill}"));
            g.bench_function(id, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| work.step()).sum())
            });
            let o = work.finish();
            let us = |q: f64| o.quantile(q).as_secs_f64() * 1e6;
            let counts = o.counters.map_or_else(
                || "harvests      -             map+unmap calls      -      ".to_string(),
                |k| {
                    format!(
                        "harvests {:>6} ({:>7} MiB)  map+unmap calls {:>7}",
                        k.cache_flush_ops,
                        k.cache_flush_bytes >> 20,
                        o.alloc_remaps
                    )
                },
            );
            summary.push(format!(
                "{:>10} fill {fill:>3}%: {:>9} allocations  {counts}  p50 {:>6.1} us  p99 {:>6.1} us",
                backend.name(),
                o.latencies_ns.len(),
                us(0.5),
                us(0.99)
            ));
        }
    }
    g.finish();
    println!("\npage/mixed_sizes over the whole run of each configuration (allocation path):");
    for line in summary {
        println!("  {line}");
    }
}

criterion_group!(
    benches,
    small_fast_path,
    small_contended,
    medium_contended,
    mixed_sizes
);
criterion_main!(benches);
