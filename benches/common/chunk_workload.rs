//! The 10k-live chunk workload that `chunk.rs` times and
//! `chunk_instructions.rs` counts, and the allocators it runs on: one
//! definition, so both measure the same sizes, live count and batch on the
//! same setup.

use buddy_system_allocator::LockedHeap;
use hotmem_chunk::{ChunkManager, Coalescing, MetadataType, SpaceConfig};
use hotmem_os::{MemTag, Memory, Reservation};
use std::alloc::Layout;

/// The space both allocators work in.
pub(crate) const SPACE: usize = 256 << 20;
/// Live chunks before the timed rounds.
pub(crate) const LIVE: usize = 10_000;
/// Returns, then gets, per round.
pub(crate) const BATCH: usize = 256;
/// 1 KiB .. 16 KiB: the chunk sizes class loaders mostly take.
pub(crate) const LEVELS: [u8; 5] = [12, 11, 10, 9, 8];

/// A xorshift generator: cheap and the same sequence on every run.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The layout `buddy_system_allocator` is asked for in place of a chunk
/// of `level` (4 MiB roots): the chunk's size, aligned to it.
pub(crate) fn layout(level: u8) -> Layout {
    let size = 1usize << (22 - level);
    Layout::from_size_align(size, size).expect("a power of two below 4 MiB")
}

/// A non-class space of `size` bytes with `coalescing`.
pub(crate) fn space(size: usize, coalescing: Coalescing) -> ChunkManager {
    let config = SpaceConfig::with_size(size).coalescing(coalescing);
    ChunkManager::new(&Memory::new(), MetadataType::NonClass, config).expect("space")
}

/// `size` bytes of committed memory aligned to a 4 MiB root chunk, for a
/// `buddy_system_allocator` heap (it keeps its free lists inside the free
/// blocks).
pub(crate) fn committed(size: usize) -> Reservation {
    let r = Memory::new()
        .reserve_aligned(size, 4 << 20, MemTag::TEST)
        .expect("reserve");
    r.commit(r.range()).expect("commit");
    r
}

/// `buddy_system_allocator`'s `LockedHeap` over its own committed memory:
/// every operation takes its spin lock, as a user sharing it between
/// threads (as `ChunkManager` is shared) would have it.
pub(crate) struct LockedBsa {
    pub(crate) heap: LockedHeap<33>,
    _memory: Reservation,
}

impl LockedBsa {
    pub(crate) fn new(size: usize) -> LockedBsa {
        let memory = committed(size);
        let heap = LockedHeap::<33>::new();
        // SAFETY: the range is committed, owned by this value (which drops
        // the heap first: fields drop in order) and used by nothing else.
        unsafe { heap.lock().init(memory.start().get(), size) };
        LockedBsa {
            heap,
            _memory: memory,
        }
    }
}
