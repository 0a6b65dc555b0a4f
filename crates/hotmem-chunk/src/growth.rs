//! Arena kinds and how fast each grows: the sizes of an arena's successive
//! chunks (HotSpot's arena growth policy; the numbers carry over).

use crate::MetadataType;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of class loader an arena serves. It decides the sizes of the
/// arena's chunks: the boot loader loads thousands of classes and starts
/// with megabytes, a reflection loader loads one accessor and stays small.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ArenaKind {
    /// The boot (null) class loader.
    Boot,
    /// An ordinary application or platform class loader.
    Standard,
    /// A loader for one hidden class held by its mirror.
    ClassMirrorHolder,
    /// A reflection delegating loader (one generated accessor).
    Reflection,
}

const K: usize = 1 << 10;
const M: usize = 1 << 20;

impl ArenaKind {
    /// Every kind.
    pub const ALL: [ArenaKind; 4] = [
        ArenaKind::Boot,
        ArenaKind::Standard,
        ArenaKind::ClassMirrorHolder,
        ArenaKind::Reflection,
    ];

    /// The chunk sizes in order; the last repeats forever.
    pub const fn sequence(self, ty: MetadataType) -> &'static [usize] {
        match (self, ty) {
            (ArenaKind::Boot, MetadataType::NonClass) => &[4 * M, M],
            (ArenaKind::Boot, MetadataType::Class) => &[M, 256 * K],
            (ArenaKind::Standard, MetadataType::NonClass) => &[4 * K, 4 * K, 4 * K, 8 * K, 16 * K],
            (ArenaKind::Standard, MetadataType::Class) => &[2 * K, 2 * K, 4 * K, 8 * K, 16 * K],
            (ArenaKind::ClassMirrorHolder, _) => &[K],
            (ArenaKind::Reflection, MetadataType::NonClass) => &[2 * K, K],
            (ArenaKind::Reflection, MetadataType::Class) => &[K],
        }
    }

    /// The size of the `n`-th chunk (counting from 0) of an arena of this
    /// kind in a space of type `ty`.
    pub fn chunk_size(self, ty: MetadataType, n: usize) -> usize {
        let seq = self.sequence(ty);
        seq[n.min(seq.len() - 1)]
    }
}

impl fmt::Display for ArenaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArenaKind::Boot => "boot",
            ArenaKind::Standard => "standard",
            ArenaKind::ClassMirrorHolder => "class-mirror-holder",
            ArenaKind::Reflection => "reflection",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_grows_faster_than_reflection_and_never_more_than_doubles() {
        for ty in MetadataType::ALL {
            assert!(ArenaKind::Boot.chunk_size(ty, 0) > ArenaKind::Reflection.chunk_size(ty, 0));
            for kind in ArenaKind::ALL {
                for n in 0..8 {
                    let size = kind.chunk_size(ty, n);
                    assert!(size.is_power_of_two());
                    if n > 0 && kind != ArenaKind::Boot {
                        assert!(size <= 2 * kind.chunk_size(ty, n - 1));
                    }
                }
            }
        }
        assert_eq!(
            ArenaKind::Standard.chunk_size(MetadataType::Class, 100),
            16 << 10
        );
    }
}
