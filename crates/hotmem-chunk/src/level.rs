//! Chunk levels: the power-of-two sizes a chunk can have, and the geometry
//! that turns levels into bytes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The size class of a chunk. Level 0 is a root chunk (the largest size);
/// every level above it halves the size, down to the smallest chunk of the
/// space's [`Geometry`]. With the default 4 MiB root and 1 KiB minimum that
/// gives levels 0 (4 MiB) to 12 (1 KiB).
///
/// A chunk of level `l` starts at an address aligned to its own size, so its
/// buddy (the other half of the level `l - 1` chunk it was split from) is
/// found by flipping one bit of its offset.
#[derive(
    Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ChunkLevel(u8);

impl ChunkLevel {
    /// The level of a root chunk.
    pub const ROOT: ChunkLevel = ChunkLevel(0);

    /// A level from its number. Whether the level exists in a given space is
    /// checked by the space ([`Geometry::check`]).
    #[inline]
    pub const fn new(raw: u8) -> ChunkLevel {
        ChunkLevel(raw)
    }

    /// The level's number (0 = root).
    #[inline]
    pub const fn raw(self) -> u8 {
        self.0
    }

    /// The next larger level (half the number), `None` at the root.
    #[inline]
    pub const fn larger(self) -> Option<ChunkLevel> {
        match self.0.checked_sub(1) {
            Some(l) => Some(ChunkLevel(l)),
            None => None,
        }
    }

    /// The next smaller level (half the size). The space decides whether it
    /// exists. Saturates at level 255 (which exists in no space).
    #[inline]
    pub const fn smaller(self) -> ChunkLevel {
        ChunkLevel(self.0.saturating_add(1))
    }

    #[inline]
    pub(crate) const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ChunkLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lv{:02}", self.0)
    }
}

/// Sizes of a space: root chunk and smallest chunk, both powers of two.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Geometry {
    root_shift: u8,
    min_shift: u8,
}

impl Geometry {
    /// The geometry with the given root and minimum chunk sizes.
    ///
    /// # Panics
    /// If either size is not a power of two, `min_chunk > root_chunk`, or
    /// there would be more than 32 levels. (A [`SpaceConfig`](crate::SpaceConfig)
    /// validates these and reports a typed error instead.)
    pub fn new(root_chunk: usize, min_chunk: usize) -> Geometry {
        assert!(root_chunk.is_power_of_two() && min_chunk.is_power_of_two());
        assert!(min_chunk <= root_chunk);
        let root_shift = root_chunk.trailing_zeros() as u8;
        let min_shift = min_chunk.trailing_zeros() as u8;
        assert!(root_shift - min_shift < 32, "too many chunk levels");
        Geometry {
            root_shift,
            min_shift,
        }
    }

    /// Bytes of a root chunk.
    #[inline]
    pub const fn root_chunk_size(self) -> usize {
        1 << self.root_shift
    }

    /// Bytes of the smallest chunk.
    #[inline]
    pub const fn min_chunk_size(self) -> usize {
        1 << self.min_shift
    }

    /// The level of the smallest chunk (the highest level number).
    #[inline]
    pub const fn smallest(self) -> ChunkLevel {
        ChunkLevel(self.root_shift - self.min_shift)
    }

    /// How many levels there are.
    #[inline]
    pub const fn levels(self) -> usize {
        (self.root_shift - self.min_shift) as usize + 1
    }

    /// Every level, from the root down to the smallest.
    pub fn all_levels(self) -> impl DoubleEndedIterator<Item = ChunkLevel> + Clone {
        (0..=self.smallest().0).map(ChunkLevel)
    }

    /// Whether the level exists in this geometry.
    #[inline]
    pub const fn contains(self, level: ChunkLevel) -> bool {
        level.0 <= self.smallest().0
    }

    /// `Some(level)` if it exists here.
    #[inline]
    pub const fn check(self, level: ChunkLevel) -> Option<ChunkLevel> {
        if self.contains(level) {
            Some(level)
        } else {
            None
        }
    }

    /// Bytes of a chunk of `level`.
    #[inline]
    pub const fn size_of(self, level: ChunkLevel) -> usize {
        1 << (self.root_shift - level.0)
    }

    /// Smallest-chunk units in a chunk of `level`.
    #[inline]
    pub(crate) const fn units_of(self, level: ChunkLevel) -> u32 {
        1 << (self.root_shift - self.min_shift - level.0)
    }

    /// The level of the smallest chunk that holds `bytes`, `None` if even a
    /// root chunk is too small. Zero bytes fit the smallest chunk.
    #[inline]
    pub fn level_for(self, bytes: usize) -> Option<ChunkLevel> {
        if bytes > self.root_chunk_size() {
            return None;
        }
        let size = bytes.max(self.min_chunk_size()).next_power_of_two();
        Some(ChunkLevel(self.root_shift - size.trailing_zeros() as u8))
    }

    /// The level whose chunks are exactly `bytes`, if any.
    #[inline]
    pub fn level_of_size(self, bytes: usize) -> Option<ChunkLevel> {
        if !bytes.is_power_of_two() {
            return None;
        }
        let shift = bytes.trailing_zeros() as u8;
        (self.min_shift..=self.root_shift)
            .contains(&shift)
            .then(|| ChunkLevel(self.root_shift - shift))
    }

    pub(crate) const fn min_shift(self) -> u32 {
        self.min_shift as u32
    }

    /// The level of the largest chunk, at most a root chunk, that starts at
    /// unit offset `unit` (aligned to it) and fits in `units_left` units.
    pub(crate) fn largest_fitting(self, unit: u32, units_left: u32) -> Option<ChunkLevel> {
        if units_left == 0 {
            return None;
        }
        let root_units = self.units_of(ChunkLevel::ROOT);
        let align = if unit == 0 {
            root_units
        } else {
            (1u32 << unit.trailing_zeros()).min(root_units)
        };
        let fit = 1u32 << (31 - units_left.leading_zeros());
        let units = align.min(fit);
        Some(ChunkLevel(self.smallest().0 - units.trailing_zeros() as u8))
    }
}

/// A chunk size written the way `jcmd VM.metaspace` labels levels: `4m`,
/// `512k`, `1k`.
pub(crate) struct SizeLabel(pub(crate) usize);

impl fmt::Display for SizeLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let text = if s >= 1 << 30 && s % (1 << 30) == 0 {
            format!("{}g", s >> 30)
        } else if s >= 1 << 20 && s % (1 << 20) == 0 {
            format!("{}m", s >> 20)
        } else if s >= 1 << 10 && s % (1 << 10) == 0 {
            format!("{}k", s >> 10)
        } else {
            format!("{s}b")
        };
        f.pad(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_geometry_has_thirteen_levels() {
        let g = Geometry::new(4 << 20, 1 << 10);
        assert_eq!(g.levels(), 13);
        assert_eq!(g.smallest(), ChunkLevel::new(12));
        assert_eq!(g.size_of(ChunkLevel::ROOT), 4 << 20);
        assert_eq!(g.size_of(ChunkLevel::new(12)), 1024);
        assert_eq!(g.level_for(0), Some(ChunkLevel::new(12)));
        assert_eq!(g.level_for(1025), Some(ChunkLevel::new(11)));
        assert_eq!(g.level_for(4 << 20), Some(ChunkLevel::ROOT));
        assert_eq!(g.level_for((4 << 20) + 1), None);
        assert_eq!(g.level_of_size(4096), Some(ChunkLevel::new(10)));
        assert_eq!(g.level_of_size(512), None);
        assert_eq!(g.level_of_size(3000), None);
        assert!(!g.contains(ChunkLevel::new(13)));
        assert_eq!(ChunkLevel::ROOT.larger(), None);
        assert_eq!(ChunkLevel::new(3).larger(), Some(ChunkLevel::new(2)));
    }

    #[test]
    fn largest_fitting_respects_alignment_and_room() {
        let g = Geometry::new(4 << 20, 1 << 10);
        // At offset 0 with plenty of room: a root chunk.
        assert_eq!(g.largest_fitting(0, 1 << 20), Some(ChunkLevel::ROOT));
        // 2 MiB left: a 2 MiB chunk.
        assert_eq!(g.largest_fitting(4096, 2048), Some(ChunkLevel::new(1)));
        // Offset 1 KiB: only a 1 KiB chunk is aligned there.
        assert_eq!(g.largest_fitting(1, 4096), Some(ChunkLevel::new(12)));
        assert_eq!(g.largest_fitting(8, 3), Some(ChunkLevel::new(11)));
        assert_eq!(g.largest_fitting(8, 0), None);
    }

    #[test]
    fn size_labels() {
        assert_eq!(SizeLabel(4 << 20).to_string(), "4m");
        assert_eq!(SizeLabel(512 << 10).to_string(), "512k");
        assert_eq!(SizeLabel(1 << 10).to_string(), "1k");
    }
}
