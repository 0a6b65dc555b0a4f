//! `Metaspace`: a class space and a non-class space together, and the pair
//! of arenas a class loader allocates from.

use crate::error::{AllocError, DeallocError, PurgeError, SpaceError, VerifyError};
use crate::{
    Arena, ArenaKind, ArenaStatistics, ChunkManager, MetadataType, PurgeReport, SpaceConfig,
    SpaceStatistics,
};
use hotmem_os::{Address, Memory};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The configuration of both spaces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaspaceConfig {
    /// The class space (reserved with [`hotmem_os::MemTag::CLASS`]).
    pub class: SpaceConfig,
    /// The non-class space (reserved with [`hotmem_os::MemTag::METASPACE`]).
    pub non_class: SpaceConfig,
}

impl Default for MetaspaceConfig {
    fn default() -> Self {
        MetaspaceConfig {
            class: SpaceConfig::class_space(),
            non_class: SpaceConfig::non_class_space(),
        }
    }
}

/// The two spaces of a runtime: class and non-class, each its own
/// [`ChunkManager`]. Cloning shares them.
#[derive(Clone, Debug)]
pub struct Metaspace {
    class: ChunkManager,
    non_class: ChunkManager,
}

impl Metaspace {
    /// Reserves both spaces through `memory`.
    ///
    /// # Errors
    /// [`SpaceError`] if either configuration is invalid or a reservation
    /// fails (nothing stays reserved then).
    pub fn new(memory: &Memory, config: MetaspaceConfig) -> Result<Metaspace, SpaceError> {
        Ok(Metaspace {
            class: ChunkManager::new(memory, MetadataType::Class, config.class)?,
            non_class: ChunkManager::new(memory, MetadataType::NonClass, config.non_class)?,
        })
    }

    /// The space of `ty`.
    pub fn space(&self, ty: MetadataType) -> &ChunkManager {
        match ty {
            MetadataType::Class => &self.class,
            MetadataType::NonClass => &self.non_class,
        }
    }

    /// The arenas of a new class loader of `kind`.
    pub fn loader(&self, kind: ArenaKind) -> LoaderMetaspace {
        LoaderMetaspace {
            class: Arena::new(&self.class, kind),
            non_class: Arena::new(&self.non_class, kind),
        }
    }

    /// Statistics of both spaces.
    pub fn statistics(&self) -> MetaspaceStatistics {
        MetaspaceStatistics {
            class: self.class.statistics(),
            non_class: self.non_class.statistics(),
        }
    }

    /// Purges both spaces.
    ///
    /// # Errors
    /// The first [`PurgeError`].
    pub fn purge(&self) -> Result<PurgeReport, PurgeError> {
        let a = self.class.purge()?;
        let b = self.non_class.purge()?;
        Ok(PurgeReport {
            chunks: a.chunks + b.chunks,
            bytes: a.bytes + b.bytes,
        })
    }

    /// Verifies both spaces.
    ///
    /// # Errors
    /// The first broken invariant.
    pub fn verify(&self) -> Result<(), VerifyError> {
        self.class.verify()?;
        self.non_class.verify()
    }
}

/// Statistics of both spaces; `Display` prints them like `jcmd VM.metaspace`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaspaceStatistics {
    /// The class space.
    pub class: SpaceStatistics,
    /// The non-class space.
    pub non_class: SpaceStatistics,
}

impl fmt::Display for MetaspaceStatistics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::stats::Bytes;
        let (c, n) = (&self.class, &self.non_class);
        writeln!(f, "Total Usage:")?;
        for s in [n, c] {
            writeln!(
                f,
                "  {:>15}: {:>10} capacity, {:>10} committed, {:>10} used",
                s.metadata_type.name(),
                Bytes(s.in_use_capacity),
                Bytes(s.committed),
                Bytes(s.used)
            )?;
        }
        writeln!(
            f,
            "  {:>15}: {:>10} capacity, {:>10} committed, {:>10} used",
            "Both",
            Bytes(c.in_use_capacity + n.in_use_capacity),
            Bytes(c.committed + n.committed),
            Bytes(c.used + n.used)
        )?;
        writeln!(f)?;
        writeln!(f, "{n}")?;
        writeln!(f)?;
        write!(f, "{c}")
    }
}

/// A class loader's metadata allocators: one arena per space. Dropping it
/// (the loader died) returns all its chunks.
#[derive(Debug)]
pub struct LoaderMetaspace {
    class: Arena,
    non_class: Arena,
}

impl LoaderMetaspace {
    /// The arena of `ty`.
    pub fn arena(&mut self, ty: MetadataType) -> &mut Arena {
        match ty {
            MetadataType::Class => &mut self.class,
            MetadataType::NonClass => &mut self.non_class,
        }
    }

    /// Allocates `bytes` of metadata of `ty`.
    ///
    /// # Errors
    /// As [`Arena::allocate`].
    #[inline]
    pub fn allocate(&mut self, ty: MetadataType, bytes: usize) -> Result<Address, AllocError> {
        self.arena(ty).allocate(bytes)
    }

    /// Gives back a block of `ty`.
    ///
    /// # Errors
    /// As [`Arena::deallocate`].
    pub fn deallocate(
        &mut self,
        ty: MetadataType,
        addr: Address,
        bytes: usize,
    ) -> Result<(), DeallocError> {
        self.arena(ty).deallocate(addr, bytes)
    }

    /// Statistics of both arenas, class first.
    pub fn statistics(&self) -> [ArenaStatistics; 2] {
        [self.class.statistics(), self.non_class.statistics()]
    }

    /// Checks both arenas against their spaces ([`Arena::verify`]).
    ///
    /// # Errors
    /// The first broken invariant.
    pub fn verify(&self) -> Result<(), VerifyError> {
        self.class.verify()?;
        self.non_class.verify()
    }
}
