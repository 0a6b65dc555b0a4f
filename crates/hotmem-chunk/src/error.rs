//! Typed errors, one small enum per operation. A rejected operation leaves
//! the space exactly as it was.

use crate::{Chunk, ChunkLevel, ChunkView, MetadataType};
use hotmem_os::{Address, CommitError, ReserveError};
use thiserror::Error;

// Defined next to SpaceConfig, whose validation returns it.
pub use crate::config::ConfigError;

/// Why a space could not be created.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SpaceError {
    /// The configuration is invalid.
    #[error("invalid space configuration: {0}")]
    Config(#[source] ConfigError),
    /// The reservation failed.
    #[error("cannot reserve the space: {0}")]
    Reserve(#[source] ReserveError),
}

/// A chunk handle that this space does not accept.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// The chunk belongs to another space.
    #[error("{chunk} belongs to another space")]
    Foreign {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The level does not exist in this space.
    #[error("level {level} does not exist here")]
    BadLevel {
        /// The level.
        level: ChunkLevel,
    },
    /// No chunk of that level starts at that address.
    #[error("no such chunk: {chunk}")]
    NoSuchChunk {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The chunk is free: it was returned already (or never handed out).
    #[error("{chunk} is not in use (double return?)")]
    NotInUse {
        /// The chunk.
        chunk: ChunkView,
    },
    /// The chunk was returned and handed out again since this handle was made.
    #[error("{chunk} is a stale handle: handed out again since")]
    Stale {
        /// The chunk.
        chunk: ChunkView,
    },
}

/// Why [`ChunkManager::return_chunk`](crate::ChunkManager::return_chunk)
/// refused a chunk; it hands the chunk back, and the space is unchanged.
#[derive(Debug, Error)]
#[error("cannot return the chunk: {reason}")]
pub struct ReturnChunkError {
    pub(crate) chunk: Chunk,
    #[source]
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

/// Why [`ChunkManager::get_chunk`](crate::ChunkManager::get_chunk) failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GetChunkError {
    /// A level does not exist in this space.
    #[error("level {level} does not exist here")]
    BadLevel {
        /// The level.
        level: ChunkLevel,
    },
    /// The preferred level is smaller (a higher number) than the smallest
    /// acceptable one, or the commit wish exceeds the preferred chunk.
    #[error(
        "bad chunk request: preferred {preferred}, smallest acceptable {max_level}, \
         commit {min_committed} bytes"
    )]
    BadRequest {
        /// Preferred level.
        preferred: ChunkLevel,
        /// Smallest acceptable level.
        max_level: ChunkLevel,
        /// Bytes to commit at once.
        min_committed: usize,
    },
    /// No free chunk and no untouched space of an acceptable size is left.
    #[error("{space} exhausted: no chunk of level {max_level} or larger")]
    Exhausted {
        /// Which space.
        space: MetadataType,
        /// The smallest acceptable level.
        max_level: ChunkLevel,
    },
    /// Committing the chunk's first bytes failed.
    #[error("committing the chunk failed: {0}")]
    Commit(#[source] CommitError),
}

/// Why a chunk could not be enlarged in place.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EnlargeError {
    /// The handle is not accepted.
    #[error("{0}")]
    Chunk(#[source] ChunkError),
    /// The space runs the [`Coalescing::None`](crate::Coalescing::None) baseline.
    #[error("this space does not coalesce")]
    Disabled,
    /// A root chunk has no buddy.
    #[error("a root chunk cannot grow")]
    Root,
    /// The chunk is the upper half of its would-be parent: it cannot grow
    /// without moving.
    #[error("the chunk is the upper buddy")]
    NotLeader,
    /// The buddy is in use, split, or outside the space.
    #[error("the buddy is not free and whole")]
    BuddyNotFree,
}

/// Why part of a chunk could not be committed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CommitChunkError {
    /// The handle is not accepted.
    #[error("{0}")]
    Chunk(#[source] ChunkError),
    /// More bytes than the chunk has.
    #[error("cannot commit {bytes} bytes of a {size} byte chunk")]
    BeyondChunk {
        /// Bytes asked for.
        bytes: usize,
        /// The chunk size.
        size: usize,
    },
    /// The OS refused.
    #[error("commit failed: {0}")]
    Os(#[source] CommitError),
}

/// An uncommit failed during a purge; what was uncommitted before stays so.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[error("purge: uncommit failed: {0}")]
pub struct PurgeError(#[source] pub CommitError);

/// Why an [`Arena`](crate::Arena) allocation failed. The arena is unchanged.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AllocError {
    /// Zero bytes were asked for.
    #[error("zero-size metadata allocation")]
    ZeroSize,
    /// Larger than a root chunk.
    #[error("{size} bytes exceed the largest chunk ({max} bytes)")]
    TooLarge {
        /// Bytes asked for.
        size: usize,
        /// The root chunk size.
        max: usize,
    },
    /// The space has no chunk for it: metaspace out of memory.
    #[error("out of metaspace: {0}")]
    Chunk(#[source] GetChunkError),
    /// Committing memory for it failed.
    #[error("out of memory: {0}")]
    Commit(#[source] CommitChunkError),
}

/// Why a block could not be given back to its arena. The arena is unchanged.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DeallocError {
    /// Zero bytes.
    #[error("zero-size deallocation")]
    ZeroSize,
    /// Address or size is not a multiple of the word size.
    #[error("block {addr} of {size} bytes is not word aligned")]
    Misaligned {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
    /// The block is not inside memory this arena handed out.
    #[error("block {addr} of {size} bytes was not allocated by this arena")]
    NotOwned {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
    /// The block overlaps a block already deallocated (double free).
    #[error("block {addr} of {size} bytes is already free")]
    AlreadyFree {
        /// The address.
        addr: Address,
        /// The size.
        size: usize,
    },
}

/// A broken invariant found by `verify()`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invariant broken: {invariant}: {detail}")]
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
