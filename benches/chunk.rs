//! hotmem-chunk: chunk get/return at mixed levels with 10k live chunks,
//! split-heavy and merge-heavy patterns, and arena allocation of small
//! metadata, each against the no-coalescing baseline and the
//! `buddy_system_allocator` crate on the same size pattern: its `Heap`
//! (single owner, `&mut self`, no lock) and its `LockedHeap` (a spin lock
//! around it, what a user shares between threads as `ChunkManager` is
//! shared). Then class loaders created and dropped by 1, 2 and 4 threads.

#![allow(missing_docs)]

use buddy_system_allocator::Heap;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_chunk::{
    Arena, ArenaCache, ArenaKind, Chunk, ChunkLevel, ChunkManager, Coalescing, MetadataType,
    SpaceConfig,
};
use hotmem_os::{Memory, Reservation};
use std::alloc::Layout;
use std::hint::black_box;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

#[path = "common/chunk_workload.rs"]
mod workload;
use workload::{BATCH, LEVELS, LIVE, LockedBsa, SPACE, XorShift, committed, layout, space};

fn manager(coalescing: Coalescing) -> ChunkManager {
    space(SPACE, coalescing)
}

/// A buddy_system_allocator heap over a committed hotmem-os reservation
/// (it keeps its free lists inside the free blocks).
struct BsaHeap {
    heap: Heap<33>,
    _memory: Reservation,
}

impl BsaHeap {
    fn new() -> BsaHeap {
        let r = committed(SPACE);
        let mut heap = Heap::<33>::empty();
        // SAFETY: the range is committed, owned by this value and used by
        // nothing else for as long as the heap lives.
        unsafe { heap.init(r.start().get(), SPACE) };
        BsaHeap { heap, _memory: r }
    }
}

fn get_return_mixed(c: &mut Criterion) {
    let mut g = c.benchmark_group("chunk/get_return_mixed_10k_live");
    g.throughput(Throughput::Elements(1));
    for coalescing in [Coalescing::Buddy, Coalescing::None] {
        let m = manager(coalescing);
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut live: Vec<Chunk> = (0..LIVE)
            .map(|_| {
                let l = ChunkLevel::new(LEVELS[rng.next() as usize % LEVELS.len()]);
                m.get_chunk(l, l, 0).unwrap()
            })
            .collect();
        let name = match coalescing {
            Coalescing::Buddy => "hotmem_buddy",
            Coalescing::None => "hotmem_baseline",
            _ => "hotmem_other",
        };
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let i = rng.next() as usize % LIVE;
                // The handle is owned: take it out (O(1)), return it, then
                // put the new chunk in its place.
                m.return_chunk(live.swap_remove(i)).unwrap();
                let l = ChunkLevel::new(LEVELS[rng.next() as usize % LEVELS.len()]);
                live.push(black_box(m.get_chunk(l, l, 0).unwrap()));
            })
        });
        for c in live {
            m.return_chunk(c).unwrap();
        }
    }
    let mut bsa = BsaHeap::new();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut live: Vec<(NonNull<u8>, Layout)> = (0..LIVE)
        .map(|_| {
            let l = layout(LEVELS[rng.next() as usize % LEVELS.len()]);
            (bsa.heap.alloc(l).unwrap(), l)
        })
        .collect();
    g.bench_function(BenchmarkId::from_parameter("buddy_system_allocator"), |b| {
        b.iter(|| {
            let i = rng.next() as usize % LIVE;
            bsa.heap.dealloc(live[i].0, live[i].1);
            let l = layout(LEVELS[rng.next() as usize % LEVELS.len()]);
            live[i] = (black_box(bsa.heap.alloc(l).unwrap()), l);
        })
    });
    drop(bsa);
    let locked = LockedBsa::new(SPACE);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut live: Vec<(NonNull<u8>, Layout)> = (0..LIVE)
        .map(|_| {
            let l = layout(LEVELS[rng.next() as usize % LEVELS.len()]);
            (locked.heap.lock().alloc(l).unwrap(), l)
        })
        .collect();
    g.bench_function(
        BenchmarkId::from_parameter("buddy_system_allocator_locked"),
        |b| {
            b.iter(|| {
                let i = rng.next() as usize % LIVE;
                locked.heap.lock().dealloc(live[i].0, live[i].1);
                let l = layout(LEVELS[rng.next() as usize % LEVELS.len()]);
                live[i] = (black_box(locked.heap.lock().alloc(l).unwrap()), l);
            })
        },
    );
    g.finish();
}

// `get_return_split`: batches of `BATCH` random returns, then `BATCH`
// gets, at 10k live chunks of mixed levels: the returns timed in
// `chunk/return_10k_live`, the gets in `chunk/get_10k_live`, so that each
// side has its own figure.

/// The three allocators under [`get_return_split`], behind one interface.
enum Side {
    Hotmem(ChunkManager, Vec<Chunk>),
    Bsa(BsaHeap, Vec<(NonNull<u8>, Layout)>),
    Locked(LockedBsa, Vec<(NonNull<u8>, Layout)>),
}

impl Side {
    fn fill(mut self, rng: &mut XorShift) -> Side {
        for _ in 0..LIVE {
            let level = LEVELS[rng.next() as usize % LEVELS.len()];
            match &mut self {
                Side::Hotmem(m, live) => {
                    let l = ChunkLevel::new(level);
                    live.push(m.get_chunk(l, l, 0).unwrap());
                }
                Side::Bsa(h, live) => {
                    let l = layout(level);
                    live.push((h.heap.alloc(l).unwrap(), l));
                }
                Side::Locked(h, live) => {
                    let l = layout(level);
                    live.push((h.heap.lock().alloc(l).unwrap(), l));
                }
            }
        }
        self
    }

    /// Returns `BATCH` random live chunks, then gets `BATCH` new ones:
    /// (time of the returns, time of the gets).
    fn round(&mut self, rng: &mut XorShift, levels: &mut Vec<u8>) -> (Duration, Duration) {
        levels.clear();
        levels.extend((0..BATCH).map(|_| LEVELS[rng.next() as usize % LEVELS.len()]));
        // Pick the victims before timing (O(1) swap_remove each).
        match self {
            Side::Hotmem(m, live) => {
                let victims: Vec<Chunk> = (0..BATCH)
                    .map(|_| live.swap_remove(rng.next() as usize % live.len()))
                    .collect();
                let t = Instant::now();
                for c in victims {
                    m.return_chunk(c).unwrap();
                }
                let ret = t.elapsed();
                let t = Instant::now();
                for &level in levels.iter() {
                    let l = ChunkLevel::new(level);
                    live.push(black_box(m.get_chunk(l, l, 0).unwrap()));
                }
                (ret, t.elapsed())
            }
            Side::Bsa(h, live) => {
                let victims: Vec<_> = (0..BATCH)
                    .map(|_| live.swap_remove(rng.next() as usize % live.len()))
                    .collect();
                let t = Instant::now();
                for (p, l) in victims {
                    h.heap.dealloc(p, l);
                }
                let ret = t.elapsed();
                let t = Instant::now();
                for &level in levels.iter() {
                    let l = layout(level);
                    live.push((black_box(h.heap.alloc(l).unwrap()), l));
                }
                (ret, t.elapsed())
            }
            Side::Locked(h, live) => {
                let victims: Vec<_> = (0..BATCH)
                    .map(|_| live.swap_remove(rng.next() as usize % live.len()))
                    .collect();
                let t = Instant::now();
                for (p, l) in victims {
                    h.heap.lock().dealloc(p, l);
                }
                let ret = t.elapsed();
                let t = Instant::now();
                for &level in levels.iter() {
                    let l = layout(level);
                    live.push((black_box(h.heap.lock().alloc(l).unwrap()), l));
                }
                (ret, t.elapsed())
            }
        }
    }
}

fn get_return_split(c: &mut Criterion) {
    let names = [
        "hotmem_buddy",
        "buddy_system_allocator",
        "buddy_system_allocator_locked",
    ];
    for (op, group) in [(0, "chunk/return_10k_live"), (1, "chunk/get_10k_live")] {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(BATCH as u64));
        for name in names {
            let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
            let side = match name {
                "hotmem_buddy" => Side::Hotmem(manager(Coalescing::Buddy), Vec::new()),
                "buddy_system_allocator" => Side::Bsa(BsaHeap::new(), Vec::new()),
                _ => Side::Locked(LockedBsa::new(SPACE), Vec::new()),
            };
            let mut side = side.fill(&mut rng);
            let mut levels = Vec::with_capacity(BATCH);
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (ret, get) = side.round(&mut rng, &mut levels);
                        total += if op == 0 { ret } else { get };
                    }
                    total
                })
            });
            if let Side::Hotmem(m, live) = side {
                for c in live {
                    m.return_chunk(c).unwrap();
                }
            }
        }
        g.finish();
    }
}

/// Takes `n` 1 KiB chunks from root chunks (every other take splits), then
/// returns them all (every other return merges): timed separately.
fn split_merge(c: &mut Criterion) {
    const N: usize = 4096;
    let k1 = ChunkLevel::new(12);
    let mut split = c.benchmark_group("chunk/split_heavy_1k");
    split.throughput(Throughput::Elements(N as u64));
    let m = manager(Coalescing::Buddy);
    split.bench_function(BenchmarkId::from_parameter("hotmem_buddy"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let v: Vec<Chunk> = (0..N).map(|_| m.get_chunk(k1, k1, 0).unwrap()).collect();
                total += t.elapsed();
                for c in v {
                    m.return_chunk(c).unwrap();
                }
            }
            total
        })
    });
    let mut bsa = BsaHeap::new();
    let l1 = layout(12);
    split.bench_function(BenchmarkId::from_parameter("buddy_system_allocator"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let v: Vec<NonNull<u8>> = (0..N).map(|_| bsa.heap.alloc(l1).unwrap()).collect();
                total += t.elapsed();
                for p in v {
                    bsa.heap.dealloc(p, l1);
                }
            }
            total
        })
    });
    let locked = LockedBsa::new(SPACE);
    split.bench_function(
        BenchmarkId::from_parameter("buddy_system_allocator_locked"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let v: Vec<NonNull<u8>> = (0..N)
                        .map(|_| locked.heap.lock().alloc(l1).unwrap())
                        .collect();
                    total += t.elapsed();
                    for p in v {
                        locked.heap.lock().dealloc(p, l1);
                    }
                }
                total
            })
        },
    );
    split.finish();

    let mut merge = c.benchmark_group("chunk/merge_heavy_1k");
    merge.throughput(Throughput::Elements(N as u64));
    merge.bench_function(BenchmarkId::from_parameter("hotmem_buddy"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let v: Vec<Chunk> = (0..N).map(|_| m.get_chunk(k1, k1, 0).unwrap()).collect();
                let t = Instant::now();
                for c in v {
                    m.return_chunk(c).unwrap();
                }
                total += t.elapsed();
            }
            total
        })
    });
    merge.bench_function(BenchmarkId::from_parameter("buddy_system_allocator"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let v: Vec<NonNull<u8>> = (0..N).map(|_| bsa.heap.alloc(l1).unwrap()).collect();
                let t = Instant::now();
                for p in v {
                    bsa.heap.dealloc(p, l1);
                }
                total += t.elapsed();
            }
            total
        })
    });
    merge.bench_function(
        BenchmarkId::from_parameter("buddy_system_allocator_locked"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let v: Vec<NonNull<u8>> = (0..N)
                        .map(|_| locked.heap.lock().alloc(l1).unwrap())
                        .collect();
                    let t = Instant::now();
                    for p in v {
                        locked.heap.lock().dealloc(p, l1);
                    }
                    total += t.elapsed();
                }
                total
            })
        },
    );
    merge.finish();
}

/// Small metadata blocks (16..256 bytes) from a loader's arena; a loader
/// dies every 4096 blocks (not timed). A standard loader takes ~40 chunks
/// and enlargements for them (2 KiB growing to 16 KiB); a boot loader's
/// first 4 MiB chunk holds them all: its time is the bump alone.
fn arena_alloc(c: &mut Criterion) {
    const BLOCKS: usize = 4096;
    let mut g = c.benchmark_group("chunk/arena_alloc_small");
    g.throughput(Throughput::Elements(BLOCKS as u64));
    let sizes: Vec<usize> = {
        let mut rng = XorShift(42);
        (0..BLOCKS)
            .map(|_| 16 + (rng.next() as usize % 31) * 8)
            .collect()
    };
    let runs = [
        (
            Coalescing::Buddy,
            ArenaKind::Standard,
            "hotmem_arena_buddy/standard",
        ),
        (
            Coalescing::None,
            ArenaKind::Standard,
            "hotmem_arena_baseline/standard",
        ),
        (
            Coalescing::Buddy,
            ArenaKind::Boot,
            "hotmem_arena_buddy/boot",
        ),
    ];
    for (coalescing, kind, name) in runs {
        let m = manager(coalescing);
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut a = Arena::new(&m, kind);
                    let t = Instant::now();
                    for &s in &sizes {
                        black_box(a.allocate(s).unwrap());
                    }
                    total += t.elapsed();
                }
                total
            })
        });
    }
    let mut bsa = BsaHeap::new();
    g.bench_function(BenchmarkId::from_parameter("buddy_system_allocator"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut v = Vec::with_capacity(BLOCKS);
            for _ in 0..iters {
                let t = Instant::now();
                for &s in &sizes {
                    let l = Layout::from_size_align(s, 8).unwrap();
                    v.push((black_box(bsa.heap.alloc(l).unwrap()), l));
                }
                total += t.elapsed();
                for (p, l) in v.drain(..) {
                    bsa.heap.dealloc(p, l);
                }
            }
            total
        })
    });
    g.finish();
}

/// Class loaders created and dropped by 1 to 16 threads at once over one
/// shared space (as a runtime's loaders share one manager): each loader is
/// an arena that allocates [`LOADER_BLOCKS`] small blocks (a small class's
/// metadata) and is dropped, handing its chunks back. One element is one
/// loader; all threads start together on a barrier and the slowest one's
/// time counts. Two spaces: without the arena cache (every loader takes the
/// space's lock for its first chunk and for its drop) and with
/// `ArenaCache::Sharded` (a dropped loader's chunks wait in the thread's
/// shard for the next loader).
fn loaders(c: &mut Criterion) {
    const LOADER_BLOCKS: usize = 32;
    let mut g = c.benchmark_group("chunk/loaders_create_drop");
    for (name, cache) in [
        ("hotmem_buddy_threads", ArenaCache::Off),
        ("hotmem_buddy_cached_threads", ArenaCache::Sharded),
    ] {
        let config = SpaceConfig::with_size(SPACE).arena_cache(cache);
        let m = ChunkManager::new(&Memory::new(), MetadataType::NonClass, config).unwrap();
        for threads in [1usize, 2, 4, 8, 16] {
            g.throughput(Throughput::Elements(threads as u64));
            g.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter_custom(|iters| loaders_round(&m, threads, iters, LOADER_BLOCKS))
            });
        }
        m.verify().unwrap();
    }
    g.finish();
}

/// `threads` threads each create and drop `iters` loaders of `blocks`
/// blocks; the slowest thread's time.
fn loaders_round(m: &ChunkManager, threads: usize, iters: u64, blocks: usize) -> Duration {
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 + t as u64);
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        let mut loader = Arena::new(m, ArenaKind::Standard);
                        for _ in 0..blocks {
                            let size = 16 + (rng.next() as usize % 31) * 8;
                            black_box(loader.allocate(size).unwrap());
                        }
                    }
                    start.elapsed()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .max()
            .unwrap()
    })
}

criterion_group!(
    benches,
    get_return_mixed,
    get_return_split,
    split_merge,
    arena_alloc,
    loaders
);
criterion_main!(benches);
