//! Instructions per chunk operation, for callgrind, on one side at a time:
//! `hotmem` (a `ChunkManager` with buddy coalescing) or `locked_heap`
//! (`buddy_system_allocator::LockedHeap` over the same size pattern), in
//! one of two patterns:
//!
//! - `split` (the default): the split-heavy then merge-heavy pattern of
//!   `chunk.rs` (4096 gets of the smallest chunk from one root chunk, then
//!   4096 returns), repeated; a round is 4096 get+return pairs.
//! - `mixed`: the shape of `chunk.rs`'s `chunk/get_10k_live` and
//!   `chunk/return_10k_live` workload (its sizes, live count and batch;
//!   its own random sequence): 10,000 live chunks of 1-16 KiB, then rounds
//!   of 256 random returns and 256 gets of random levels; a round is 256
//!   pairs.
//!
//! Wall time on a shared two-core VM moves by tens of percent from run to
//! run; callgrind's instruction counts do not, so this is how a change to
//! the chunk manager's hot path is weighed. Run each side at two round
//! counts; the difference divided by the extra pairs is the count per
//! get+return pair, with setup and teardown cancelled out:
//!
//! ```text
//! cargo bench -p hotmem-benches --bench chunk_instructions --no-run
//! B=$(ls -t target/release/deps/chunk_instructions-* | grep -v '\.d$' | head -1)
//! for side in hotmem locked_heap; do for r in 10 20; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $r $side 2>&1 | grep refs
//! done; done   # (refs at 20 - refs at 10) / 40960 = instructions per pair
//! ```
//!
//! For `mixed`, add the pattern (`$B $r $side mixed`, rounds such as 100
//! and 200; divide by 100 * 256) and `--cache-sim=yes` for the simulated
//! cache misses, which that pattern is about: its chunks are scattered.
//!
//! (The benches build rustix with `use-libc-auxv`, so that binaries which
//! reserve memory through `hotmem_os` run under valgrind.) Without
//! valgrind it prints the wall time per pair, which is not the comparison:
//! `chunk.rs` is.

#![allow(missing_docs)]

use hotmem_chunk::{Chunk, ChunkLevel, Coalescing};
use std::alloc::Layout;
use std::process::ExitCode;
use std::ptr::NonNull;
use std::time::Instant;

const SPACE: usize = 64 << 20;
/// 1 KiB chunks: one 4 MiB root chunk's worth.
const N: usize = 4096;

#[path = "common/chunk_workload.rs"]
mod workload;
use workload::{BATCH, LEVELS, LIVE, LockedBsa, SPACE as MIXED_SPACE, XorShift, layout, space};

/// Which allocator runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Side {
    Hotmem,
    LockedHeap,
}

/// Which workload runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Pattern {
    Split,
    Mixed,
}

/// A random level of the `mixed` pattern.
fn random_level(rng: &mut XorShift) -> u8 {
    LEVELS[rng.next() as usize % LEVELS.len()]
}

/// A random index below `len`.
fn pick(rng: &mut XorShift, len: usize) -> usize {
    rng.next() as usize % len
}

fn parse() -> Result<(usize, Side, Pattern), String> {
    // `cargo bench` passes `--bench`; everything else is ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let rounds = match args.first() {
        Some(r) => r.parse().map_err(|e| format!("rounds {r}: {e}"))?,
        None => 10,
    };
    let side = match args.get(1).map(String::as_str) {
        None | Some("hotmem") => Side::Hotmem,
        Some("locked_heap") => Side::LockedHeap,
        Some(other) => return Err(format!("side {other}: expected hotmem or locked_heap")),
    };
    let pattern = match args.get(2).map(String::as_str) {
        None | Some("split") => Pattern::Split,
        Some("mixed") => Pattern::Mixed,
        Some(other) => return Err(format!("pattern {other}: expected split or mixed")),
    };
    Ok((rounds, side, pattern))
}

fn hotmem(rounds: usize) {
    let m = space(SPACE, Coalescing::Buddy);
    let k1 = ChunkLevel::new(12);
    let mut live: Vec<Chunk> = Vec::with_capacity(N);
    for _ in 0..rounds {
        for _ in 0..N {
            live.push(m.get_chunk(k1, k1, 0).expect("a free 1 KiB chunk"));
        }
        for c in live.drain(..) {
            m.return_chunk(c).expect("our own chunk");
        }
    }
}

fn hotmem_mixed(rounds: usize) {
    let m = space(MIXED_SPACE, Coalescing::Buddy);
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let get = |rng: &mut XorShift| {
        let l = ChunkLevel::new(random_level(rng));
        m.get_chunk(l, l, 0).expect("a free chunk")
    };
    let mut live: Vec<Chunk> = (0..LIVE).map(|_| get(&mut rng)).collect();
    for _ in 0..rounds {
        for _ in 0..BATCH {
            let c = live.swap_remove(pick(&mut rng, live.len()));
            m.return_chunk(c).expect("our own chunk");
        }
        for _ in 0..BATCH {
            live.push(get(&mut rng));
        }
    }
}

fn locked_heap_mixed(rounds: usize) {
    let locked = LockedBsa::new(MIXED_SPACE);
    let heap = &locked.heap;
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let get = |rng: &mut XorShift| {
        let l = layout(random_level(rng));
        (heap.lock().alloc(l).expect("a free block"), l)
    };
    let mut live: Vec<(NonNull<u8>, Layout)> = (0..LIVE).map(|_| get(&mut rng)).collect();
    for _ in 0..rounds {
        for _ in 0..BATCH {
            let (p, l) = live.swap_remove(pick(&mut rng, live.len()));
            heap.lock().dealloc(p, l);
        }
        for _ in 0..BATCH {
            live.push(get(&mut rng));
        }
    }
}

fn locked_heap(rounds: usize) {
    let locked = LockedBsa::new(SPACE);
    let heap = &locked.heap;
    let l1 = Layout::from_size_align(1024, 1024).expect("layout");
    let mut live: Vec<NonNull<u8>> = Vec::with_capacity(N);
    for _ in 0..rounds {
        for _ in 0..N {
            live.push(heap.lock().alloc(l1).expect("a free 1 KiB block"));
        }
        for p in live.drain(..) {
            heap.lock().dealloc(p, l1);
        }
    }
}

fn main() -> ExitCode {
    let (rounds, side, pattern) = match parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "chunk_instructions: {e}\nusage: chunk_instructions [rounds] [hotmem|locked_heap] [split|mixed]"
            );
            return ExitCode::from(2);
        }
    };
    let t = Instant::now();
    match (side, pattern) {
        (Side::Hotmem, Pattern::Split) => hotmem(rounds),
        (Side::LockedHeap, Pattern::Split) => locked_heap(rounds),
        (Side::Hotmem, Pattern::Mixed) => hotmem_mixed(rounds),
        (Side::LockedHeap, Pattern::Mixed) => locked_heap_mixed(rounds),
    }
    let per_round = match pattern {
        Pattern::Split => N,
        Pattern::Mixed => BATCH,
    };
    let pairs = (rounds * per_round).max(1);
    println!(
        "{side:?} {pattern:?}: {rounds} rounds of {per_round} gets and {per_round} returns, {:.1} ns per pair (wall time, not the comparison)",
        t.elapsed().as_nanos() as f64 / pairs as f64
    );
    ExitCode::SUCCESS
}
