//! Typed errors, one small enum per operation. A rejected operation leaves
//! the space exactly as it was.

use crate::{Chunk, ChunkLevel, ChunkView, MetadataType};
use hotmem_os::{Address, CommitError, ReserveError};
use std::fmt;

macro_rules! error_source {
    ($ty:ty { $($variant:ident),* }) => {
        impl std::error::Error for $ty {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    $(Self::$variant(e) => Some(e),)*
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    };
}

/// A [`SpaceConfig`](crate::SpaceConfig) that cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A size that must be a power of two is not.
    NotPowerOfTwo {
        /// Which size.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// The smallest chunk is under 64 bytes or above the root chunk, the root
    /// chunk is above 1 GiB, or there are more than 2^20 smallest chunks in a
    /// root chunk.
    ChunkSizes {
        /// Root chunk size.
        root: usize,
        /// Smallest chunk size.
        min: usize,
    },
    /// The commit granule is below a page or the smallest chunk, or above the
    /// root chunk.
    Granule {
        /// The granule.
        granule: usize,
        /// The page size.
        page: usize,
    },
    /// The space is empty or not a multiple of the commit granule.
    SpaceSize {
        /// The size.
        size: usize,
        /// The granule.
        granule: usize,
    },
    /// The space has more smallest chunks than chunk ids can number.
    TooLarge {
        /// The size.
        size: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NotPowerOfTwo { what, value } => {
                write!(f, "{what} {value} is not a power of two")
            }
            ConfigError::ChunkSizes { root, min } => write!(
                f,
                "chunk sizes root {root} / smallest {min}: need 64 <= smallest <= root <= 1 GiB \
                 and at most 2^20 smallest chunks per root chunk"
            ),
            ConfigError::Granule { granule, page } => write!(
                f,
                "commit granule {granule} must be at least a page ({page}) and the smallest \
                 chunk, and at most a root chunk"
            ),
            ConfigError::SpaceSize { size, granule } => write!(
                f,
                "space size {size} must be a non-zero multiple of the commit granule {granule}"
            ),
            ConfigError::TooLarge { size } => write!(f, "space of {size} bytes is too large"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why a space could not be created.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpaceError {
    /// The configuration is invalid.
    Config(ConfigError),
    /// The reservation failed.
    Reserve(ReserveError),
}

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpaceError::Config(e) => write!(f, "invalid space configuration: {e}"),
            SpaceError::Reserve(e) => write!(f, "cannot reserve the space: {e}"),
        }
    }
}

error_source!(SpaceError { Config, Reserve });

/// A chunk handle that this space does not accept.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkError {
    /// The chunk belongs to another space.
    Foreign {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The level does not exist in this space.
    BadLevel {
        /// The level.
        level: ChunkLevel,
    },
    /// No chunk of that level starts at that address.
    NoSuchChunk {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The chunk is free: it was returned already (or never handed out).
    NotInUse {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The chunk was returned and handed out again since this handle was made.
    Stale {
        /// The chunk.
        chunk: ChunkView,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkError::Foreign { chunk } => write!(f, "{chunk} belongs to another space"),
            ChunkError::BadLevel { level } => write!(f, "level {level} does not exist here"),
            ChunkError::NoSuchChunk { chunk } => write!(f, "no such chunk: {chunk}"),
            ChunkError::NotInUse { chunk } => write!(f, "{chunk} is not in use (double return?)"),
            ChunkError::Stale { chunk } => {
                write!(f, "{chunk} is a stale handle: handed out again since")
            }
        }
    }
}

impl std::error::Error for ChunkError {}

/// Why [`ChunkManager::return_chunk`](crate::ChunkManager::return_chunk)
/// refused a chunk; it hands the chunk back, and the space is unchanged.
#[derive(Debug)]
pub struct ReturnChunkError {
    pub(crate) chunk: Chunk,
    pub(crate) reason: ChunkError,
}

impl ReturnChunkError {
    /// Why the space refused it.
    pub fn reason(&self) -> &ChunkError {
        &self.reason
    }

    /// The chunk, still owned by the caller.
    pub fn into_chunk(self) -> Chunk {
        self.chunk
    }
}

impl fmt::Display for ReturnChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot return the chunk: {}", self.reason)
    }
}

impl std::error::Error for ReturnChunkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.reason)
    }
}

/// Why [`ChunkManager::get_chunk`](crate::ChunkManager::get_chunk) failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetChunkError {
    /// A level does not exist in this space.
    BadLevel {
        /// The level.
        level: ChunkLevel,
    },
    /// The preferred level is smaller (a higher number) than the smallest
    /// acceptable one, or the commit wish exceeds the preferred chunk.
    BadRequest {
        /// Preferred level.
        preferred: ChunkLevel,
        /// Smallest acceptable level.
        max_level: ChunkLevel,
        /// Bytes to commit at once.
        min_committed: usize,
    },
    /// No free chunk and no untouched space of an acceptable size is left.
    Exhausted {
        /// Which space.
        space: MetadataType,
        /// The smallest acceptable level.
        max_level: ChunkLevel,
    },
    /// Committing the chunk's first bytes failed.
    Commit(CommitError),
}

impl fmt::Display for GetChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GetChunkError::BadLevel { level } => write!(f, "level {level} does not exist here"),
            GetChunkError::BadRequest {
                preferred,
                max_level,
                min_committed,
            } => write!(
                f,
                "bad chunk request: preferred {preferred}, smallest acceptable {max_level}, \
                 commit {min_committed} bytes"
            ),
            GetChunkError::Exhausted { space, max_level } => {
                write!(
                    f,
                    "{space} exhausted: no chunk of level {max_level} or larger"
                )
            }
            GetChunkError::Commit(e) => write!(f, "committing the chunk failed: {e}"),
        }
    }
}

error_source!(GetChunkError { Commit });

/// Why a chunk could not be enlarged in place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnlargeError {
    /// The handle is not accepted.
    Chunk(ChunkError),
    /// The space runs the [`Coalescing::None`](crate::Coalescing::None) baseline.
    Disabled,
    /// A root chunk has no buddy.
    Root,
    /// The chunk is the upper half of its would-be parent: it cannot grow
    /// without moving.
    NotLeader,
    /// The buddy is in use, split, or outside the space.
    BuddyNotFree,
}

impl fmt::Display for EnlargeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnlargeError::Chunk(e) => e.fmt(f),
            EnlargeError::Disabled => f.write_str("this space does not coalesce"),
            EnlargeError::Root => f.write_str("a root chunk cannot grow"),
            EnlargeError::NotLeader => f.write_str("the chunk is the upper buddy"),
            EnlargeError::BuddyNotFree => f.write_str("the buddy is not free and whole"),
        }
    }
}

error_source!(EnlargeError { Chunk });

/// Why part of a chunk could not be committed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitChunkError {
    /// The handle is not accepted.
    Chunk(ChunkError),
    /// More bytes than the chunk has.
    BeyondChunk {
        /// Bytes asked for.
        bytes: usize,
        /// The chunk size.
        size: usize,
    },
    /// The OS refused.
    Os(CommitError),
}

impl fmt::Display for CommitChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitChunkError::Chunk(e) => e.fmt(f),
            CommitChunkError::BeyondChunk { bytes, size } => {
                write!(f, "cannot commit {bytes} bytes of a {size} byte chunk")
            }
            CommitChunkError::Os(e) => write!(f, "commit failed: {e}"),
        }
    }
}

error_source!(CommitChunkError { Chunk, Os });

/// An uncommit failed during a purge; what was uncommitted before stays so.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PurgeError(pub CommitError);

impl fmt::Display for PurgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "purge: uncommit failed: {}", self.0)
    }
}

impl std::error::Error for PurgeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Why an [`Arena`](crate::Arena) allocation failed. The arena is unchanged.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// Zero bytes were asked for.
    ZeroSize,
    /// Larger than a root chunk.
    TooLarge {
        /// Bytes asked for.
        size: usize,
        /// The root chunk size.
        max: usize,
    },
    /// The space has no chunk for it: metaspace out of memory.
    Chunk(GetChunkError),
    /// Committing memory for it failed.
    Commit(CommitChunkError),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::ZeroSize => f.write_str("zero-size metadata allocation"),
            AllocError::TooLarge { size, max } => {
                write!(f, "{size} bytes exceed the largest chunk ({max} bytes)")
            }
            AllocError::Chunk(e) => write!(f, "out of metaspace: {e}"),
            AllocError::Commit(e) => write!(f, "out of memory: {e}"),
        }
    }
}

error_source!(AllocError { Chunk, Commit });

/// Why a block could not be given back to its arena. The arena is unchanged.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeallocError {
    /// Zero bytes.
    ZeroSize,
    /// Address or size is not a multiple of the word size.
    Misaligned {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
    /// The block is not inside memory this arena handed out.
    NotOwned {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
    /// The block overlaps a block already deallocated (double free).
    AlreadyFree {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
}

impl fmt::Display for DeallocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeallocError::ZeroSize => f.write_str("zero-size deallocation"),
            DeallocError::Misaligned { addr, size } => {
                write!(f, "block {addr} of {size} bytes is not word aligned")
            }
            DeallocError::NotOwned { addr, size } => {
                write!(
                    f,
                    "block {addr} of {size} bytes was not allocated by this arena"
                )
            }
            DeallocError::AlreadyFree { addr, size } => {
                write!(f, "block {addr} of {size} bytes is already free")
            }
        }
    }
}

impl std::error::Error for DeallocError {}

/// A broken invariant found by `verify()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// Which invariant.
    pub invariant: &'static str,
    /// Where and how.
    pub detail: String,
}

impl VerifyError {
    pub(crate) fn new(invariant: &'static str, detail: impl Into<String>) -> VerifyError {
        VerifyError {
            invariant,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant broken: {}: {}", self.invariant, self.detail)
    }
}

impl std::error::Error for VerifyError {}
