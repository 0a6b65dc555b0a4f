//! `ChunkRef`: the handle to a chunk that a space handed out.

use crate::ChunkLevel;
use hotmem_os::{Address, MemRange};
use std::fmt;

/// A chunk handed out by a [`ChunkManager`](crate::ChunkManager): where it
/// starts, its level and size, which space it came from, and which hand-out
/// it is (so that a handle kept after the chunk was returned and handed out
/// again is recognised as stale rather than freeing someone else's chunk).
///
/// It is a plain value: copying it does not copy the chunk, and the space
/// checks every handle it is given.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ChunkRef {
    pub(crate) space: u32,
    pub(crate) serial: u32,
    pub(crate) start: Address,
    pub(crate) level: ChunkLevel,
    pub(crate) size: usize,
}

impl ChunkRef {
    /// The first byte.
    #[inline]
    pub fn start(&self) -> Address {
        self.start
    }

    /// One past the last byte.
    #[inline]
    pub fn end(&self) -> Address {
        self.start + self.size
    }

    /// The chunk's level.
    #[inline]
    pub fn level(&self) -> ChunkLevel {
        self.level
    }

    /// Its size in bytes (a power of two; the start is aligned to it).
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its address range.
    #[inline]
    pub fn range(&self) -> MemRange {
        MemRange::new(self.start, self.size).expect("chunk inside its space")
    }

    /// A handle for the same chunk at another level: the start stays, the
    /// size follows the level. Used to test how a space rejects handles.
    pub fn with_level(mut self, level: ChunkLevel) -> ChunkRef {
        self.size = if level <= self.level {
            self.size << (self.level.raw() - level.raw()).min(40)
        } else {
            self.size >> (level.raw() - self.level.raw()).min(40)
        };
        self.level = level;
        self
    }
}

impl fmt::Display for ChunkRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chunk {} {} ({}) of space #{}",
            self.start,
            self.level,
            crate::level::SizeLabel(self.size),
            self.space
        )
    }
}
