//! Instructions per chunk operation, for callgrind: the split-heavy then
//! merge-heavy pattern of `chunk.rs` (4096 gets of the smallest chunk from
//! one root chunk, then 4096 returns), repeated, on one side only:
//! `hotmem` (a `ChunkManager` with buddy coalescing) or `locked_heap`
//! (`buddy_system_allocator::LockedHeap` over the same size pattern).
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
//! (The benches build rustix with `use-libc-auxv`, so that binaries which
//! reserve memory through `hotmem_os` run under valgrind.) Without
//! valgrind it prints the wall time per pair, which is not the comparison:
//! `chunk.rs` is.

#![allow(missing_docs)]

use buddy_system_allocator::LockedHeap;
use hotmem_chunk::{Chunk, ChunkLevel, ChunkManager, Coalescing, MetadataType, SpaceConfig};
use hotmem_os::{MemTag, Memory};
use std::alloc::Layout;
use std::process::ExitCode;
use std::ptr::NonNull;
use std::time::Instant;

const SPACE: usize = 64 << 20;
/// 1 KiB chunks: one 4 MiB root chunk's worth.
const N: usize = 4096;

/// Which allocator runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Side {
    Hotmem,
    LockedHeap,
}

fn parse() -> Result<(usize, Side), String> {
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
    Ok((rounds, side))
}

fn hotmem(rounds: usize) {
    let m = ChunkManager::new(
        &Memory::new(),
        MetadataType::NonClass,
        SpaceConfig::with_size(SPACE).coalescing(Coalescing::Buddy),
    )
    .expect("space");
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

fn locked_heap(rounds: usize) {
    let r = Memory::new()
        .reserve_aligned(SPACE, 4 << 20, MemTag::TEST)
        .expect("reserve");
    r.commit(r.range()).expect("commit");
    let heap = LockedHeap::<33>::new();
    // SAFETY: the range is committed, owned by `r`, which outlives the heap,
    // and used by nothing else.
    unsafe { heap.lock().init(r.start().get(), SPACE) };
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
    let (rounds, side) = match parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "chunk_instructions: {e}\nusage: chunk_instructions [rounds] [hotmem|locked_heap]"
            );
            return ExitCode::from(2);
        }
    };
    let t = Instant::now();
    match side {
        Side::Hotmem => hotmem(rounds),
        Side::LockedHeap => locked_heap(rounds),
    }
    let pairs = (rounds * N).max(1);
    println!(
        "{side:?}: {rounds} rounds of {N} gets and {N} returns, {:.1} ns per pair (wall time, not the comparison)",
        t.elapsed().as_nanos() as f64 / pairs as f64
    );
    ExitCode::SUCCESS
}
