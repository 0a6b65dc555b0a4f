//! `Chunk`: the owned handle to a chunk that a space handed out, and
//! `ChunkView`, the read-only view that introspection hands out.

use crate::ChunkLevel;
use hotmem_os::{Address, MemRange};
use std::fmt;

/// The accessors that [`Chunk`] and [`ChunkView`] both have, written once
/// over the `start`, `level` and `size` fields that both have.
macro_rules! placement_accessors {
    () => {
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
    };
}

/// A chunk handed out by [`ChunkManager::get_chunk`](crate::ChunkManager::get_chunk),
/// owned by whoever holds this value: the capability to give the chunk back.
///
/// It is unique: not `Clone`, not `Copy`, and it has no public constructor,
/// so the only handle to a chunk is the one the space issued, and
/// [`return_chunk`](crate::ChunkManager::return_chunk) consumes it. The
/// space still checks every handle against the live entry (space identity,
/// then the chunk's header and hand-out serial under its lock). Dropping a
/// `Chunk` without returning it leaks the chunk (it stays in use), which is
/// safe. Arenas keep their chunks to themselves; what they show is
/// [`ChunkView`]s.
///
/// ```
/// use hotmem_chunk::{ChunkLevel, ChunkManager, MetadataType, SpaceConfig};
/// use hotmem_os::Memory;
///
/// let space = ChunkManager::new(&Memory::new(), MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
/// let chunk = space.get_chunk(ChunkLevel::new(10), ChunkLevel::new(10), 0)?;
/// space.return_chunk(chunk)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A second return does not compile: the first one consumed the handle.
///
/// ```compile_fail,E0382
/// # use hotmem_chunk::{ChunkLevel, ChunkManager, MetadataType, SpaceConfig};
/// # use hotmem_os::Memory;
/// # let space = ChunkManager::new(&Memory::new(), MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
/// let chunk = space.get_chunk(ChunkLevel::new(10), ChunkLevel::new(10), 0)?;
/// space.return_chunk(chunk)?;
/// space.return_chunk(chunk)?; // error: use of moved value
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Nor does cloning it (it is not `Clone`):
///
/// ```compile_fail,E0599
/// # use hotmem_chunk::{Chunk, ChunkLevel, ChunkManager, MetadataType, SpaceConfig};
/// # use hotmem_os::Memory;
/// # let space = ChunkManager::new(&Memory::new(), MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
/// let chunk = space.get_chunk(ChunkLevel::new(10), ChunkLevel::new(10), 0)?;
/// let twin: Chunk = chunk.clone(); // error: no method named `clone`
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Nor forging one (its fields are private and it has no public
/// constructor):
///
/// ```compile_fail,E0451
/// # use hotmem_chunk::{Chunk, ChunkLevel};
/// # use hotmem_os::Address;
/// let forged = Chunk { space: 1, serial: 1, unit: 0, start: Address::new(0), level: ChunkLevel::ROOT, size: 4 << 20 };
/// ```
#[must_use = "a chunk dropped without `return_chunk` stays in use for good"]
#[derive(PartialEq, Eq, Debug)]
pub struct Chunk {
    // Invariant, kept by every constructor and by `enlarge_chunk`:
    // `start` is the space's start plus `unit` smallest-chunk units and
    // `size` is the size of `level`. The space's identity check relies on
    // it (it compares `space`, `unit`, `level` and `serial`).
    /// The issuing space's identity (unique per process, never reused).
    pub(crate) space: u64,
    /// The hand-out serial, also kept in the chunk's header.
    pub(crate) serial: u32,
    /// The first smallest-chunk unit.
    pub(crate) unit: u32,
    pub(crate) start: Address,
    pub(crate) level: ChunkLevel,
    pub(crate) size: usize,
}

impl Chunk {
    placement_accessors!();

    /// A read-only view of it (which cannot be returned).
    #[inline]
    pub fn view(&self) -> ChunkView {
        ChunkView {
            start: self.start,
            level: self.level,
            size: self.size,
        }
    }

    /// A second handle to the same chunk, for tests and the fuzz model that
    /// check how a space refuses handles it did not issue or no longer
    /// honours. Never part of the public API.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn forge(&self) -> Chunk {
        Chunk {
            space: self.space,
            serial: self.serial,
            unit: self.unit,
            start: self.start,
            level: self.level,
            size: self.size,
        }
    }

    /// [`forge`](Self::forge) at another level: the start stays, the size
    /// follows the level.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn forge_with_level(&self, level: ChunkLevel) -> Chunk {
        let mut c = self.forge();
        let shift = u32::from(self.level.raw().abs_diff(level.raw())).min(40);
        c.size = if level <= self.level {
            self.size.checked_shl(shift).unwrap_or(0)
        } else {
            self.size >> shift
        };
        c.level = level;
        c
    }
}

impl fmt::Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

/// What introspection shows of a chunk: where it is and how large. A plain
/// value that cannot be given back to a space
/// ([`return_chunk`](crate::ChunkManager::return_chunk) takes a [`Chunk`]).
///
/// ```compile_fail,E0308
/// use hotmem_chunk::{Arena, ArenaKind, ChunkManager, MetadataType, SpaceConfig};
/// use hotmem_os::Memory;
///
/// let space = ChunkManager::new(&Memory::new(), MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
/// let mut loader = Arena::new(&space, ArenaKind::Standard);
/// loader.allocate(64)?;
/// let view = loader.chunks().next().unwrap();
/// space.return_chunk(view)?; // error: expected `Chunk`, found `ChunkView`
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ChunkView {
    start: Address,
    level: ChunkLevel,
    size: usize,
}

impl ChunkView {
    placement_accessors!();
}

impl fmt::Display for ChunkView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chunk {} {} ({})",
            self.start,
            self.level,
            crate::level::SizeLabel(self.size),
        )
    }
}
