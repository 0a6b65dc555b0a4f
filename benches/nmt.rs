//! hotmem-nmt: the tree of address points against the sorted linked list
//! (HotSpot's virtual memory tracker before JDK 22), and the cost of the
//! reports.
//!
//! Before criterion runs, prints the bytes each structure uses per boundary
//! point / node (measured with a counting allocator) and a quick per-op
//! comparison table, so one run shows the ratios.

#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput};
use hotmem_nmt::linked_list::LinkedListTracker;
use hotmem_nmt::{CallStack, Level, RegionStore, Scale, Tracker};
use hotmem_os::{Address, MemRange, MemTag};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes, to measure the structures' footprint.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the
// counter is a relaxed atomic add, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const PAGE: usize = 4096;
const BASE: usize = 0x7000_0000_0000;
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const TAGS: [MemTag; 4] = [
    MemTag::JAVA_HEAP,
    MemTag::THREAD_STACK,
    MemTag::CODE,
    MemTag::METASPACE,
];

/// Region `i`: 16 pages, 32 pages apart (so that neighbours never merge).
fn pages(i: usize, first: usize, len: usize) -> MemRange {
    MemRange::new(Address::new(BASE + (i * 32 + first) * PAGE), len * PAGE).unwrap()
}

/// `n` live reservations, each with 4 committed pages. Filled from the top
/// address down, so that the list baseline inserts at its head and filling
/// it is not quadratic.
fn filled<S: RegionStore>(n: usize) -> Tracker<S> {
    let t = Tracker::<S>::with_level(Level::Summary);
    for i in (0..n).rev() {
        t.reserve(pages(i, 0, 16), TAGS[i % 4], &CallStack::EMPTY)
            .unwrap();
        t.commit(pages(i, 4, 4), &CallStack::EMPTY).unwrap();
    }
    t
}

/// Operations per [`mix`].
const OPS_PER_MIX: u64 = 5;

/// Commit, uncommit, release, reserve, commit on region `i`: the tracker
/// ends as it started, with the same number of live regions.
#[inline]
fn mix<S: RegionStore>(t: &Tracker<S>, i: usize) {
    let e = &CallStack::EMPTY;
    t.commit(pages(i, 8, 4), e).unwrap();
    t.uncommit(pages(i, 8, 4)).unwrap();
    t.release(pages(i, 0, 16)).unwrap();
    t.reserve(pages(i, 0, 16), TAGS[i % 4], e).unwrap();
    t.commit(pages(i, 4, 4), e).unwrap();
}

/// A cheap random region index (xorshift).
fn next(state: &Cell<u64>, n: usize) -> usize {
    let mut x = state.get();
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.set(x);
    (x % n as u64) as usize
}

fn footprint() {
    println!(
        "nmt footprint ({} regions, 4 committed pages each):",
        SIZES[2]
    );
    let before = LIVE.load(Ordering::SeqCst);
    let tree = filled::<hotmem_nmt::VmaTree>(SIZES[2]);
    let tree_bytes = LIVE.load(Ordering::SeqCst) - before;
    let points = tree.node_count();
    println!(
        "  vma_tree, address order: {points} boundary points, {tree_bytes} bytes, {:.1} bytes per boundary point",
        tree_bytes as f64 / points as f64
    );
    drop(tree);
    // The same regions reserved in random order (B-tree nodes fuller).
    let before = LIVE.load(Ordering::SeqCst);
    let tree = hotmem_nmt::Tracker::new(Level::Summary);
    let rng = Cell::new(0x1234_5678_9ABC_DEF1);
    let mut order: Vec<usize> = (0..SIZES[2]).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, next(&rng, i + 1));
    }
    let order_bytes = LIVE.load(Ordering::SeqCst) - before;
    for &i in &order {
        tree.reserve(pages(i, 0, 16), TAGS[i % 4], &CallStack::EMPTY)
            .unwrap();
        tree.commit(pages(i, 4, 4), &CallStack::EMPTY).unwrap();
    }
    let tree_bytes = LIVE.load(Ordering::SeqCst) - before - order_bytes;
    println!(
        "  vma_tree, random order: {:.1} bytes per boundary point",
        tree_bytes as f64 / tree.node_count() as f64
    );
    drop(tree);
    drop(order);
    let before = LIVE.load(Ordering::SeqCst);
    let list = filled::<hotmem_nmt::linked_list::LinkedList>(SIZES[2]);
    let list_bytes = LIVE.load(Ordering::SeqCst) - before;
    let nodes = list.node_count();
    println!(
        "  linked_list: {nodes} nodes, {list_bytes} bytes, {:.1} bytes per node, {:.1} per region",
        list_bytes as f64 / nodes as f64,
        list_bytes as f64 / SIZES[2] as f64
    );
}

/// Nanoseconds per operation of `mixes` random mixes.
fn ns_per_op<S: RegionStore>(t: &Tracker<S>, n: usize, mixes: usize) -> f64 {
    let rng = Cell::new(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    for _ in 0..mixes {
        mix(t, next(&rng, n));
    }
    start.elapsed().as_nanos() as f64 / (mixes as f64 * OPS_PER_MIX as f64)
}

fn quick_comparison() {
    println!("nmt quick comparison (random reserve/commit/uncommit/release mix, ns per op):");
    println!(
        "  {:>8} {:>12} {:>14} {:>8}",
        "regions", "vma_tree", "linked_list", "ratio"
    );
    let mut tree_at = Vec::new();
    for n in SIZES {
        let tree = filled::<hotmem_nmt::VmaTree>(n);
        let list = filled::<hotmem_nmt::linked_list::LinkedList>(n);
        let t = ns_per_op(&tree, n, 20_000);
        let l = ns_per_op(&list, n, (2_000_000 / n).clamp(20, 2000));
        tree_at.push(t);
        println!("  {n:>8} {t:>12.0} {l:>14.0} {:>7.1}x", l / t);
    }
    println!(
        "  vma_tree per-op cost at {} vs {} regions: {:.2}x",
        SIZES[2],
        SIZES[0],
        tree_at[2] / tree_at[0]
    );
}

fn ops_mix(c: &mut Criterion) {
    let mut g = c.benchmark_group("nmt/ops_mix");
    g.sample_size(20);
    g.throughput(Throughput::Elements(OPS_PER_MIX));
    for n in SIZES {
        let tree = filled::<hotmem_nmt::VmaTree>(n);
        let rng = Cell::new(0x2545_F491_4F6C_DD1D);
        g.bench_with_input(BenchmarkId::new("vma_tree", n), &n, |b, &n| {
            b.iter(|| mix(&tree, next(&rng, n)))
        });
        drop(tree);
        let list: LinkedListTracker = filled(n);
        g.bench_with_input(BenchmarkId::new("linked_list", n), &n, |b, &n| {
            b.iter(|| mix(&list, next(&rng, n)))
        });
    }
    g.finish();
}

fn reports(c: &mut Criterion) {
    let t = filled::<hotmem_nmt::VmaTree>(10_000);
    let custom = t.register_tag("Embedder arena").unwrap();
    t.reserve(pages(20_000, 0, 16), custom, &CallStack::EMPTY)
        .unwrap();
    let baseline = t.baseline();
    let mut out = String::with_capacity(1 << 20);

    let mut g = c.benchmark_group("nmt/summary_report");
    g.throughput(Throughput::Elements(1));
    g.bench_function("write_summary", |b| {
        b.iter(|| {
            out.clear();
            t.write_summary(&mut out, Scale::Kilo).unwrap();
            black_box(out.len())
        })
    });
    g.bench_function("write_summary_diff", |b| {
        b.iter(|| {
            out.clear();
            t.write_summary_diff(&baseline, &mut out, Scale::Kilo)
                .unwrap();
            black_box(out.len())
        })
    });
    g.bench_function("totals_one_tag", |b| {
        b.iter(|| black_box(t.totals(black_box(MemTag::JAVA_HEAP))))
    });
    g.finish();

    let mut g = c.benchmark_group("nmt/detail_report_10k_regions");
    g.sample_size(20);
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("write_detail", |b| {
        b.iter(|| {
            out.clear();
            t.write_detail(&mut out, Scale::Kilo).unwrap();
            black_box(out.len())
        })
    });
    g.finish();
}

fn main() {
    footprint();
    quick_comparison();
    let mut c = Criterion::default().configure_from_args();
    ops_mix(&mut c);
    reports(&mut c);
    c.final_summary();
}
