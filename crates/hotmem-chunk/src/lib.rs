//! # hotmem-chunk: a metaspace-style buddy chunk allocator
//!
//! Class loaders allocate metadata (classes, methods, constant pools) that
//! lives exactly as long as the loader. This crate gives each loader an
//! [`Arena`] that bump-allocates from *chunks*, and shares one
//! [`ChunkManager`] per space between all loaders. Chunks come in
//! power-of-two sizes ([`ChunkLevel`]s, 1 KiB to a 4 MiB root chunk by
//! default), each aligned to its own size, so that:
//!
//! - a request for a size with no free chunk **splits** a larger free chunk;
//! - a returned chunk **merges** with its free buddy, repeatedly, so free
//!   memory stays in chunks as large as possible, and memory freed by many
//!   small dead loaders serves large requests again (JDK-8198423, then
//!   Elastic Metaspace);
//! - an arena's chunk can **grow in place** into its free buddy;
//! - memory is **committed** on demand in commit granules (64 KiB) and
//!   **uncommitted** by [`ChunkManager::purge`].
//!
//! The baseline before the change, [`Coalescing::None`], is selectable in the
//! same build for comparison. Every reservation goes through the
//! [`hotmem_os::Memory`] the caller passes, tagged [`MemTag::CLASS`] or
//! [`MemTag::METASPACE`] by [`MetadataType`], so a tracker attached to it sees
//! all of it.
//!
//! ```
//! use hotmem_chunk::{ArenaKind, ChunkLevel, ChunkManager, Coalescing, MetadataType, SpaceConfig};
//! use hotmem_chunk::{Arena, Geometry};
//! use hotmem_os::{MemTag, Memory};
//!
//! let memory = Memory::new();
//! let space = ChunkManager::new(&memory, MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
//! let geo: Geometry = space.geometry();
//!
//! // Chunk level: a 1 KiB chunk splits a fresh 4 MiB root chunk 12 times.
//! let small = geo.level_of_size(1 << 10).unwrap();
//! let chunk = space.get_chunk(small, small, 1 << 10)?;
//! assert!(chunk.start().is_aligned(chunk.size()));
//! assert_eq!(space.statistics().counters.splits, 12);
//! // Returning it (the handle is owned, and consumed) merges it back into
//! // the root chunk. A second return does not compile.
//! space.return_chunk(chunk)?;
//! assert_eq!(space.statistics().levels[0].free_chunks, 1);
//! space.verify()?;
//!
//! // Arena level: one class loader. It owns its chunks; what it shows of
//! // them are read-only views.
//! let mut loader = Arena::new(&space, ArenaKind::Standard);
//! let klass = loader.allocate(512)?;
//! assert!(space.contains(klass));
//! assert!(loader.chunks().next().unwrap().range().contains(klass));
//! loader.verify()?;
//! drop(loader);
//! println!("{}", space.statistics()); // like jcmd VM.metaspace
//! println!("{}", space.map());        // one letter per chunk level
//! # let _ = (Coalescing::None, ChunkLevel::ROOT, MemTag::CLASS);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Ownership
//! Returning a chunk is a capability: the returned memory is handed to the
//! next owner. A [`Chunk`] is therefore a unique, owned handle (not `Clone`,
//! no public constructor) that [`ChunkManager::return_chunk`] consumes and
//! checks against the live entry under the lock; arenas never hand theirs
//! out, and introspection ([`Arena::chunks`], errors) shows [`ChunkView`]s.
//!
//! ## Concurrency
//! A [`ChunkManager`] is `Send + Sync` and cheap to clone; its operations
//! take one lock. An [`Arena`] is `Send`: one loader allocates from it at a
//! time, without the lock except when it needs a new chunk or more
//! committed memory.
//!
//! Short-lived loaders on many threads would still meet at that lock twice
//! each (first chunk, drop). With [`ArenaCache::Sharded`] a dropped arena's
//! small chunks (up to 16 KiB, committed whole) wait in a per-thread shard
//! for the next arena, so such loaders take no shared lock; the space
//! flushes the shards back (merging) before it reports exhaustion and
//! before a purge. On a 16-core VM, 4 threads created and dropped
//! 6.7 M loaders/s that way against 0.58 M/s without
//! (`cargo bench -p hotmem-benches --bench chunk -- loaders`).
//!
//! ```
//! use hotmem_chunk::{Arena, ArenaCache, ArenaKind, ChunkManager, MetadataType, SpaceConfig};
//! use hotmem_os::Memory;
//!
//! let config = SpaceConfig::with_size(8 << 20).arena_cache(ArenaCache::Sharded);
//! let space = ChunkManager::new(&Memory::new(), MetadataType::NonClass, config)?;
//! let mut a = Arena::new(&space, ArenaKind::Standard);
//! a.allocate(64)?;
//! drop(a); // its chunk waits in this thread's shard...
//! assert_eq!(space.statistics().cached_chunks, 1);
//! let mut b = Arena::new(&space, ArenaKind::Standard);
//! b.allocate(64)?; // ...and serves the next loader, without the lock
//! assert_eq!(space.statistics().cached_chunks, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doc)]
use hotmem_os::MemTag;

mod arena;
mod cache;
mod chunk;
mod config;
mod counters;
mod error;
pub mod experiment;
mod freeblocks;
mod freelist;
mod granules;
mod growth;
mod level;
mod lock;
mod manager;
mod map;
mod metaspace;
#[cfg(any(test, fuzzing))]
pub mod model;
mod occupancy;
mod space;
mod stats;
mod sync;
mod table;
#[cfg(test)]
mod tests;
mod verify;

pub use arena::{Arena, ArenaStatistics, WORD};
pub use cache::ArenaCache;
pub use chunk::{Chunk, ChunkView};
pub use config::{Coalescing, MetadataType, SpaceConfig};
pub use counters::ChunkCounters;
pub use error::{
    AllocError, ChunkError, CommitChunkError, ConfigError, DeallocError, EnlargeError,
    GetChunkError, PurgeError, ReturnChunkError, SpaceError, VerifyError,
};
pub use growth::ArenaKind;
pub use level::{ChunkLevel, Geometry};
pub use manager::{ChunkManager, PurgeReport};
pub use map::SpaceMap;
pub use metaspace::{LoaderMetaspace, Metaspace, MetaspaceConfig, MetaspaceStatistics};
pub use stats::{Bytes, LevelStatistics, SpaceStatistics};
