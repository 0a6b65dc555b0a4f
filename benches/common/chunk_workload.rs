//! The 10k-live chunk workload that `chunk.rs` times and
//! `chunk_instructions.rs` counts: one definition, so both measure the same
//! sizes, live count and batch.

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
