//! What a space is for and how it is shaped: [`MetadataType`],
//! [`Coalescing`] and [`SpaceConfig`].

use crate::cache::ArenaCache;
use crate::level::Geometry;
use hotmem_os::{MemTag, page_size};
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// Which of the two metaspaces a chunk manager serves. The review of
/// 8198423 asked for this instead of `bool is_class`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum MetadataType {
    /// The compressed class space: `Klass` structures, addressed by 32-bit
    /// offsets, so it is one fixed reservation.
    Class,
    /// Everything else a class loader allocates (methods, constant pools...).
    NonClass,
}

impl MetadataType {
    /// Both types, class first.
    pub const ALL: [MetadataType; 2] = [MetadataType::Class, MetadataType::NonClass];

    /// The tag its reservation is made with: [`MemTag::CLASS`] or
    /// [`MemTag::METASPACE`].
    pub const fn mem_tag(self) -> MemTag {
        match self {
            MetadataType::Class => MemTag::CLASS,
            MetadataType::NonClass => MemTag::METASPACE,
        }
    }

    /// The name `jcmd VM.metaspace` uses.
    pub const fn name(self) -> &'static str {
        match self {
            MetadataType::Class => "Class space",
            MetadataType::NonClass => "Non-class space",
        }
    }
}

impl fmt::Display for MetadataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether free chunks are merged with their buddies and larger ones split.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Coalescing {
    /// The buddy allocator: a returned chunk merges with its free buddy up to
    /// root level, a larger free chunk is split on demand, a chunk grows into
    /// its free buddy in place. Free lists are always as coalesced as possible.
    #[default]
    Buddy,
    /// The baseline before JDK-8198423: a returned chunk stays on the free
    /// list of its own size forever; a request is served from that list or
    /// carved from untouched space (alignment chunks in front of it go to
    /// the free lists), never by splitting or merging.
    None,
}

impl Coalescing {
    /// Whether chunks merge, split and enlarge.
    #[inline]
    pub const fn merges(self) -> bool {
        matches!(self, Coalescing::Buddy)
    }
}

impl fmt::Display for Coalescing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Coalescing::Buddy => "buddy (merge + split)",
            Coalescing::None => "none (baseline)",
        })
    }
}

/// The shape of one space (class or non-class): how much address space it
/// reserves and how it is cut into chunks and commit granules.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SpaceConfig {
    /// Bytes of address space reserved; a multiple of the commit granule. It
    /// need not be a multiple of the root chunk size: the tail is tiled with
    /// the largest chunks that fit.
    pub size: usize,
    /// Bytes of a root chunk (level 0), a power of two. Default 4 MiB.
    pub root_chunk_size: usize,
    /// Bytes of the smallest chunk, a power of two. Default 1 KiB.
    pub min_chunk_size: usize,
    /// Bytes committed or uncommitted at a time, a power of two, a multiple of
    /// the page size, between the smallest and the root chunk size. Default
    /// 64 KiB.
    pub commit_granule: usize,
    /// Merge/split policy.
    pub coalescing: Coalescing,
    /// Whether dropped arenas' small chunks wait in per-thread shards for the
    /// next arena. Default [`ArenaCache::Off`].
    #[serde(default)]
    pub arena_cache: ArenaCache,
}

impl SpaceConfig {
    /// Default root chunk size: 4 MiB.
    pub const DEFAULT_ROOT_CHUNK: usize = 4 << 20;
    /// Default smallest chunk: 1 KiB.
    pub const DEFAULT_MIN_CHUNK: usize = 1 << 10;
    /// Default commit granule: 64 KiB.
    pub const DEFAULT_COMMIT_GRANULE: usize = 64 << 10;

    /// A space of `size` bytes with the default geometry and coalescing.
    pub const fn with_size(size: usize) -> SpaceConfig {
        SpaceConfig {
            size,
            root_chunk_size: Self::DEFAULT_ROOT_CHUNK,
            min_chunk_size: Self::DEFAULT_MIN_CHUNK,
            commit_granule: Self::DEFAULT_COMMIT_GRANULE,
            coalescing: Coalescing::Buddy,
            arena_cache: ArenaCache::Off,
        }
    }

    /// The default class space: 128 MiB.
    pub const fn class_space() -> SpaceConfig {
        Self::with_size(128 << 20)
    }

    /// The default non-class space: 128 MiB.
    pub const fn non_class_space() -> SpaceConfig {
        Self::with_size(128 << 20)
    }

    /// The default for `ty`.
    pub const fn default_for(ty: MetadataType) -> SpaceConfig {
        match ty {
            MetadataType::Class => Self::class_space(),
            MetadataType::NonClass => Self::non_class_space(),
        }
    }

    /// The same configuration with another coalescing policy.
    pub const fn coalescing(mut self, coalescing: Coalescing) -> SpaceConfig {
        self.coalescing = coalescing;
        self
    }

    /// The same configuration with another root and smallest chunk size.
    pub const fn chunk_sizes(mut self, root: usize, min: usize) -> SpaceConfig {
        self.root_chunk_size = root;
        self.min_chunk_size = min;
        self
    }

    /// The same configuration with another arena chunk cache policy.
    pub const fn arena_cache(mut self, cache: ArenaCache) -> SpaceConfig {
        self.arena_cache = cache;
        self
    }

    /// The same configuration with another commit granule.
    pub const fn commit_granule(mut self, granule: usize) -> SpaceConfig {
        self.commit_granule = granule;
        self
    }

    /// Checks the configuration and returns its chunk geometry.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first rule broken.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        let pow2 = |what: &'static str, value: usize| {
            if value.is_power_of_two() {
                Ok(())
            } else {
                Err(ConfigError::NotPowerOfTwo { what, value })
            }
        };
        pow2("root chunk size", self.root_chunk_size)?;
        pow2("smallest chunk size", self.min_chunk_size)?;
        pow2("commit granule", self.commit_granule)?;
        if self.min_chunk_size < 64 || self.min_chunk_size > self.root_chunk_size {
            return Err(ConfigError::ChunkSizes {
                root: self.root_chunk_size,
                min: self.min_chunk_size,
            });
        }
        if self.root_chunk_size > 1 << 30 || self.root_chunk_size / self.min_chunk_size > 1 << 20 {
            return Err(ConfigError::ChunkSizes {
                root: self.root_chunk_size,
                min: self.min_chunk_size,
            });
        }
        if self.commit_granule < page_size()
            || self.commit_granule < self.min_chunk_size
            || self.commit_granule > self.root_chunk_size
        {
            return Err(ConfigError::Granule {
                granule: self.commit_granule,
                page: page_size(),
            });
        }
        if self.size == 0 || self.size % self.commit_granule != 0 {
            return Err(ConfigError::SpaceSize {
                size: self.size,
                granule: self.commit_granule,
            });
        }
        if self.size / self.min_chunk_size >= u32::MAX as usize / 2 {
            return Err(ConfigError::TooLarge { size: self.size });
        }
        Ok(Geometry::new(self.root_chunk_size, self.min_chunk_size))
    }
}

impl Default for SpaceConfig {
    fn default() -> Self {
        Self::class_space()
    }
}

/// A [`SpaceConfig`](crate::SpaceConfig) that cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A size that must be a power of two is not.
    #[error("{what} {value} is not a power of two")]
    NotPowerOfTwo {
        /// Which size.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// The smallest chunk is under 64 bytes or above the root chunk, the root
    /// chunk is above 1 GiB, or there are more than 2^20 smallest chunks in a
    /// root chunk.
    #[error(
        "chunk sizes root {root} / smallest {min}: need 64 <= smallest <= root <= 1 GiB \
         and at most 2^20 smallest chunks per root chunk"
    )]
    ChunkSizes {
        /// Root chunk size.
        root: usize,
        /// Smallest chunk size.
        min: usize,
    },
    /// The commit granule is below a page or the smallest chunk, or above the
    /// root chunk.
    #[error(
        "commit granule {granule} must be at least a page ({page}) and the smallest \
         chunk, and at most a root chunk"
    )]
    Granule {
        /// The granule.
        granule: usize,
        /// The page size.
        page: usize,
    },
    /// The space is empty or not a multiple of the commit granule.
    #[error("space size {size} must be a non-zero multiple of the commit granule {granule}")]
    SpaceSize {
        /// The size.
        size: usize,
        /// The granule.
        granule: usize,
    },
    /// The space has more smallest chunks than chunk ids can number.
    #[error("space of {size} bytes is too large")]
    TooLarge {
        /// The size.
        size: usize,
    },
}
