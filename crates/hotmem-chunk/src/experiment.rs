//! The class-space experiment from the JDK-8198423 review, runnable by tests,
//! the `class_space_oom` example and the facade's report: many short-lived
//! small loaders flood the class space with small chunks, then large loaders
//! load one large class each until the space is exhausted.

use crate::{
    AllocError, Arena, ArenaKind, ChunkManager, Coalescing, MetadataType, SpaceConfig, SpaceError,
    SpaceMap, SpaceStatistics, VerifyError,
};
use hotmem_os::Memory;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why the experiment could not run to the end.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExperimentError {
    /// The space could not be created.
    Space(SpaceError),
    /// A small class could not be loaded (a zero or too large class size,
    /// or a space too small for the small loaders alone).
    SmallClass(AllocError),
    /// The space failed `verify()`.
    Verify(VerifyError),
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentError::Space(e) => write!(f, "cannot create the class space: {e}"),
            ExperimentError::SmallClass(e) => write!(f, "a small class does not load: {e}"),
            ExperimentError::Verify(e) => write!(f, "the class space is inconsistent: {e}"),
        }
    }
}

impl std::error::Error for ExperimentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExperimentError::Space(e) => Some(e),
            ExperimentError::SmallClass(e) => Some(e),
            ExperimentError::Verify(e) => Some(e),
        }
    }
}

/// The parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassSpaceExperiment {
    /// The class space (the review used `-XX:CompressedClassSpaceSize=10M`).
    pub space: SpaceConfig,
    /// Small loaders created, each loading one small class, then all dropped.
    /// Zero skips the phase.
    pub small_loaders: usize,
    /// Bytes of a small class.
    pub small_class: usize,
    /// Bytes of a large class.
    pub large_class: usize,
}

impl ClassSpaceExperiment {
    /// The review's setting: a 10 MiB class space, 3000 small loaders with a
    /// 512-byte class each, large classes of 4000 bytes (a 4 KiB chunk each).
    pub const fn review(coalescing: Coalescing) -> ClassSpaceExperiment {
        ClassSpaceExperiment {
            space: SpaceConfig::with_size(10 << 20).coalescing(coalescing),
            small_loaders: 3000,
            small_class: 512,
            large_class: 4000,
        }
    }

    /// The same without the small loaders.
    pub const fn without_small_loaders(mut self) -> ClassSpaceExperiment {
        self.small_loaders = 0;
        self
    }

    /// Runs it on a fresh class space reserved through `memory`.
    ///
    /// # Errors
    /// [`ExperimentError::Space`] if the space cannot be created,
    /// [`ExperimentError::SmallClass`] if a small class cannot be loaded,
    /// [`ExperimentError::Verify`] if the space fails `verify()`.
    pub fn run(&self, memory: &Memory) -> Result<ExperimentOutcome, ExperimentError> {
        let space = ChunkManager::new(memory, MetadataType::Class, self.space)
            .map_err(ExperimentError::Space)?;
        let small: Vec<Arena> = (0..self.small_loaders)
            .map(|_| {
                let mut loader = Arena::new(&space, ArenaKind::Standard);
                loader.allocate(self.small_class)?;
                Ok(loader)
            })
            .collect::<Result<_, AllocError>>()
            .map_err(ExperimentError::SmallClass)?;
        let after_small = space.statistics();
        drop(small);
        space.verify().map_err(ExperimentError::Verify)?;
        let mut large = Vec::new();
        let oom = loop {
            let mut loader = Arena::new(&space, ArenaKind::Standard);
            match loader.allocate(self.large_class) {
                Ok(_) => large.push(loader),
                Err(e) => break e,
            }
        };
        space.verify().map_err(ExperimentError::Verify)?;
        let stats = space.statistics();
        let map = space.map_with_cell(16 << 10);
        Ok(ExperimentOutcome {
            coalescing: self.space.coalescing,
            small_loaders: self.small_loaders,
            small_capacity: after_small.in_use_capacity,
            large_classes: large.len(),
            used: stats.used,
            capacity: stats.reserved,
            oom,
            stats,
            map,
        })
    }
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentOutcome {
    /// The policy.
    pub coalescing: Coalescing,
    /// Small loaders that ran first.
    pub small_loaders: usize,
    /// Chunk capacity the small loaders held while alive.
    pub small_capacity: usize,
    /// Large classes loaded before the space was exhausted.
    pub large_classes: usize,
    /// Bytes used at exhaustion.
    pub used: usize,
    /// Bytes of the space.
    pub capacity: usize,
    /// The error that ended it.
    #[serde(skip, default = "no_error")]
    pub oom: AllocError,
    /// Statistics at exhaustion.
    pub stats: SpaceStatistics,
    /// The map at exhaustion, 16 KiB per character.
    pub map: SpaceMap,
}

fn no_error() -> AllocError {
    AllocError::ZeroSize
}

impl ExperimentOutcome {
    /// Used over capacity at exhaustion, 0.0 to 1.0.
    pub fn use_ratio(&self) -> f64 {
        self.used as f64 / self.capacity as f64
    }
}
