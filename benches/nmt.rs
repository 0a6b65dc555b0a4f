//! hotmem-nmt: the tree of address points against the sorted linked list
//! (HotSpot's virtual memory tracker before JDK 22) and against a tracker a
//! Rust user would write over `rangemap::RangeMap`; the cost of a call
//! stack per operation at detail level; and the cost of the reports.
//!
//! Before criterion runs, prints the bytes each structure uses per boundary
//! point / node (measured with a counting allocator) and a quick per-op
//! comparison table, so one run shows the ratios.

#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput};
use hotmem_nmt::linked_list::LinkedListTracker;
use hotmem_nmt::{CallStack, Level, MAX_TAGS, RegionStore, Scale, Tracker};
use hotmem_os::{Address, MemRange, MemTag};
use rangemap::RangeMap;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::ops::Range;
use std::sync::Mutex;
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

/// The state of a piece of address space in [`RangeMapTracker`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum RmState {
    Reserved(MemTag),
    Committed(MemTag),
}

/// Why [`RangeMapTracker`] refused an operation (nothing changed).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum RmError {
    Overlap,
    NotReserved,
}

/// What a Rust user would write instead of `Tracker`: a
/// `rangemap::RangeMap` from address range to state (it merges equal
/// neighbours itself), per-tag reserved/committed totals, the same checks
/// (no overlapping reservation; commit, uncommit and release only inside
/// reservations) and a mutex, since the tracker is shared like `Tracker`.
/// Its strongest honest form: pieces whose state does not change are not
/// rewritten, and the pieces to rewrite are collected in a reused buffer.
#[derive(Default)]
struct RangeMapTracker {
    inner: Mutex<RmInner>,
}

struct RmInner {
    map: RangeMap<usize, RmState>,
    /// (reserved, committed) bytes per tag number.
    totals: [(usize, usize); MAX_TAGS],
    scratch: Vec<(Range<usize>, RmState)>,
}

impl Default for RmInner {
    fn default() -> Self {
        RmInner {
            map: RangeMap::new(),
            totals: [(0, 0); MAX_TAGS],
            scratch: Vec::new(),
        }
    }
}

impl RmInner {
    fn fully_reserved(&self, r: &Range<usize>) -> Result<(), RmError> {
        match self.map.gaps(r).next() {
            Some(_) => Err(RmError::NotReserved),
            None => Ok(()),
        }
    }

    /// Rewrites the pieces of `r` that `f` changes, adjusting the totals.
    fn rewrite(&mut self, r: Range<usize>, f: impl Fn(RmState) -> RmState) -> Result<(), RmError> {
        self.fully_reserved(&r)?;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for (k, &v) in self.map.overlapping(&r) {
            let new = f(v);
            if new != v {
                scratch.push((k.start.max(r.start)..k.end.min(r.end), new));
            }
        }
        for (piece, new) in scratch.drain(..) {
            let len = piece.end - piece.start;
            match new {
                RmState::Committed(t) => self.totals[usize::from(t.raw())].1 += len,
                RmState::Reserved(t) => self.totals[usize::from(t.raw())].1 -= len,
            }
            self.map.insert(piece, new);
        }
        self.scratch = scratch;
        Ok(())
    }
}

impl RangeMapTracker {
    fn reserve(&self, r: MemRange, tag: MemTag) -> Result<(), RmError> {
        let mut m = self.inner.lock().unwrap();
        let r = r.start().get()..r.end().get();
        if m.map.overlaps(&r) {
            return Err(RmError::Overlap);
        }
        m.totals[usize::from(tag.raw())].0 += r.end - r.start;
        m.map.insert(r, RmState::Reserved(tag));
        Ok(())
    }

    fn commit(&self, r: MemRange) -> Result<(), RmError> {
        let mut m = self.inner.lock().unwrap();
        m.rewrite(r.start().get()..r.end().get(), |s| match s {
            RmState::Reserved(t) | RmState::Committed(t) => RmState::Committed(t),
        })
    }

    fn uncommit(&self, r: MemRange) -> Result<(), RmError> {
        let mut m = self.inner.lock().unwrap();
        m.rewrite(r.start().get()..r.end().get(), |s| match s {
            RmState::Reserved(t) | RmState::Committed(t) => RmState::Reserved(t),
        })
    }

    fn release(&self, r: MemRange) -> Result<(), RmError> {
        let mut m = self.inner.lock().unwrap();
        let r = r.start().get()..r.end().get();
        m.fully_reserved(&r)?;
        let RmInner { map, totals, .. } = &mut *m;
        for (k, &v) in map.overlapping(&r) {
            let len = k.end.min(r.end) - k.start.max(r.start);
            match v {
                RmState::Reserved(t) => totals[usize::from(t.raw())].0 -= len,
                RmState::Committed(t) => {
                    totals[usize::from(t.raw())].0 -= len;
                    totals[usize::from(t.raw())].1 -= len;
                }
            }
        }
        map.remove(r);
        Ok(())
    }

    fn totals(&self, tag: MemTag) -> (usize, usize) {
        self.inner.lock().unwrap().totals[usize::from(tag.raw())]
    }
}

/// The operations the mix runs, on each tracker under test. `stack` is what
/// the caller captured (`Tracker::capture_stack`): empty below detail level.
trait Ops {
    fn reserve(&self, r: MemRange, tag: MemTag, stack: &CallStack);
    fn commit(&self, r: MemRange, stack: &CallStack);
    fn uncommit(&self, r: MemRange);
    fn release(&self, r: MemRange);
    fn capture(&self) -> CallStack {
        CallStack::EMPTY
    }
}

impl<S: RegionStore> Ops for Tracker<S> {
    #[inline]
    fn reserve(&self, r: MemRange, tag: MemTag, stack: &CallStack) {
        Tracker::reserve(self, r, tag, stack).unwrap();
    }
    #[inline]
    fn commit(&self, r: MemRange, stack: &CallStack) {
        Tracker::commit(self, r, stack).unwrap();
    }
    #[inline]
    fn uncommit(&self, r: MemRange) {
        Tracker::uncommit(self, r).unwrap();
    }
    #[inline]
    fn release(&self, r: MemRange) {
        Tracker::release(self, r).unwrap();
    }
    #[inline]
    fn capture(&self) -> CallStack {
        self.capture_stack()
    }
}

impl Ops for RangeMapTracker {
    #[inline]
    fn reserve(&self, r: MemRange, tag: MemTag, _: &CallStack) {
        RangeMapTracker::reserve(self, r, tag).unwrap();
    }
    #[inline]
    fn commit(&self, r: MemRange, _: &CallStack) {
        RangeMapTracker::commit(self, r).unwrap();
    }
    #[inline]
    fn uncommit(&self, r: MemRange) {
        RangeMapTracker::uncommit(self, r).unwrap();
    }
    #[inline]
    fn release(&self, r: MemRange) {
        RangeMapTracker::release(self, r).unwrap();
    }
}

/// Fills `t` with `n` live reservations, each with 4 committed pages.
/// Filled from the top address down, so that the list baseline inserts at
/// its head and filling it is not quadratic.
fn fill<T: Ops>(t: &T, n: usize) {
    for i in (0..n).rev() {
        t.reserve(pages(i, 0, 16), TAGS[i % 4], &CallStack::EMPTY);
        t.commit(pages(i, 4, 4), &CallStack::EMPTY);
    }
}

/// `n` live reservations, each with 4 committed pages.
fn filled<S: RegionStore>(n: usize) -> Tracker<S> {
    let t = Tracker::<S>::with_level(Level::Summary);
    fill(&t, n);
    t
}

/// The rangemap tracker with the same `n` reservations.
fn filled_rangemap(n: usize) -> RangeMapTracker {
    let t = RangeMapTracker::default();
    fill(&t, n);
    t
}

/// Operations per [`mix`].
const OPS_PER_MIX: u64 = 5;

/// Commit, uncommit, release, reserve, commit on region `i`: the tracker
/// ends as it started, with the same number of live regions. The operations
/// that record a stack are given what `t.capture()` returns, each captured
/// at its own call site (as `hotmem_os::Memory`'s observer does).
#[inline]
fn mix<T: Ops>(t: &T, i: usize) {
    t.commit(pages(i, 8, 4), &t.capture());
    t.uncommit(pages(i, 8, 4));
    t.release(pages(i, 0, 16));
    t.reserve(pages(i, 0, 16), TAGS[i % 4], &t.capture());
    t.commit(pages(i, 4, 4), &t.capture());
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
fn ns_per_op<T: Ops>(t: &T, n: usize, mixes: usize) -> f64 {
    let rng = Cell::new(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    for _ in 0..mixes {
        mix(t, next(&rng, n));
    }
    start.elapsed().as_nanos() as f64 / (mixes as f64 * OPS_PER_MIX as f64)
}

/// Both trackers hold the same regions: same per-tag totals.
fn assert_same_totals(tree: &Tracker, rm: &RangeMapTracker) {
    for tag in TAGS {
        let t = tree.totals(tag);
        assert_eq!(
            (t.reserved, t.committed),
            rm.totals(tag),
            "rangemap tracker disagrees on {tag:?}"
        );
    }
}

fn quick_comparison() {
    println!("nmt quick comparison (random reserve/commit/uncommit/release mix, ns per op):");
    println!(
        "  {:>8} {:>10} {:>10} {:>12} {:>14} {:>12}",
        "regions", "vma_tree", "rangemap", "rm/tree", "linked_list", "list/tree"
    );
    let mut tree_at = Vec::new();
    for n in SIZES {
        let tree = filled::<hotmem_nmt::VmaTree>(n);
        let rm = filled_rangemap(n);
        let list = filled::<hotmem_nmt::linked_list::LinkedList>(n);
        let t = ns_per_op(&tree, n, 20_000);
        let r = ns_per_op(&rm, n, 20_000);
        assert_same_totals(&tree, &rm);
        let l = ns_per_op(&list, n, (2_000_000 / n).clamp(20, 2000));
        tree_at.push(t);
        println!(
            "  {n:>8} {t:>10.0} {r:>10.0} {:>11.1}x {l:>14.0} {:>11.1}x",
            r / t,
            l / t
        );
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
        let rng = Cell::new(0x2545_F491_4F6C_DD1D);
        let tree = filled::<hotmem_nmt::VmaTree>(n);
        g.bench_with_input(BenchmarkId::new("vma_tree", n), &n, |b, &n| {
            b.iter(|| mix(&tree, next(&rng, n)))
        });
        let rm = filled_rangemap(n);
        g.bench_with_input(BenchmarkId::new("rangemap", n), &n, |b, &n| {
            b.iter(|| mix(&rm, next(&rng, n)))
        });
        assert_same_totals(&tree, &rm);
        drop((tree, rm));
        let list: LinkedListTracker = filled(n);
        g.bench_with_input(BenchmarkId::new("linked_list", n), &n, |b, &n| {
            b.iter(|| mix(&list, next(&rng, n)))
        });
    }
    g.finish();
}

/// The mix at 10k regions with a stack captured for every operation that
/// records one: summary level (`capture_stack` is free), detail level, and
/// detail level with every stack unwound through `backtrace` (the slow path
/// detail level falls back to without frame pointers).
fn stacks(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut g = c.benchmark_group("nmt/ops_mix_with_stacks_10k");
    g.sample_size(20);
    g.throughput(Throughput::Elements(OPS_PER_MIX));
    let rng = Cell::new(0x2545_F491_4F6C_DD1D);
    let summary = filled::<hotmem_nmt::VmaTree>(N);
    g.bench_function("summary", |b| b.iter(|| mix(&summary, next(&rng, N))));
    drop(summary);
    let detail = Tracker::new(Level::Detail);
    fill(&detail, N);
    g.bench_function("detail", |b| b.iter(|| mix(&detail, next(&rng, N))));
    let unwound = Unwound(detail);
    g.bench_function("detail_backtrace", |b| {
        b.iter(|| mix(&unwound, next(&rng, N)))
    });
    g.finish();
}

/// A detail tracker whose stacks are always unwound through `backtrace`.
struct Unwound(Tracker);

impl Ops for Unwound {
    fn reserve(&self, r: MemRange, tag: MemTag, stack: &CallStack) {
        Ops::reserve(&self.0, r, tag, stack);
    }
    fn commit(&self, r: MemRange, stack: &CallStack) {
        Ops::commit(&self.0, r, stack);
    }
    fn uncommit(&self, r: MemRange) {
        Ops::uncommit(&self.0, r);
    }
    fn release(&self, r: MemRange) {
        Ops::release(&self.0, r);
    }
    fn capture(&self) -> CallStack {
        CallStack::capture_unwound()
    }
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
    // `--profile-time` (callgrind, perf) runs one benchmark alone.
    if !std::env::args().any(|a| a == "--profile-time") {
        footprint();
        quick_comparison();
    }
    let mut c = Criterion::default().configure_from_args();
    ops_mix(&mut c);
    stacks(&mut c);
    reports(&mut c);
    c.final_summary();
}
