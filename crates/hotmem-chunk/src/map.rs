//! ASCII maps of a space: fragmentation at a glance, as in the 8198423
//! review.

use crate::level::SizeLabel;
use crate::occupancy::UnitState;
use crate::space::SpaceState;
use crate::{ChunkLevel, MetadataType};
use hotmem_os::MemRange;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Characters per row.
const ROW: usize = 64;

/// A picture of a space, one character per `cell_bytes`: the letter of the
/// chunk level covering the cell (`A` = root chunk, `B` = half of it, ...),
/// upper case in use, lower case free, `.` untouched. A cell holding several
/// smaller chunks shows the smallest level among them, upper case if most of
/// its bytes are in use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceMap {
    /// Which space.
    pub metadata_type: MetadataType,
    /// The space's first address.
    pub base: usize,
    /// Bytes per character.
    pub cell_bytes: usize,
    /// Level letters: `(letter, chunk size)`, root first.
    pub legend: Vec<(char, usize)>,
    /// The picture, [`ROW`](SpaceMap::ROW) characters per row.
    pub rows: Vec<String>,
}

impl SpaceMap {
    /// Characters per row.
    pub const ROW: usize = ROW;

    /// The most characters a map has (a smaller cell is rounded up).
    pub const MAX_CELLS: usize = 1 << 22;

    /// The letter of `level` (upper case: in use).
    pub fn letter(level: ChunkLevel, in_use: bool) -> char {
        let c = (b'A' + level.raw()) as char;
        if in_use { c } else { c.to_ascii_lowercase() }
    }

    pub(crate) fn draw(
        ty: MetadataType,
        range: MemRange,
        st: &SpaceState,
        cell: usize,
    ) -> SpaceMap {
        let geo = st.geo;
        let cells = range.len().div_ceil(cell);
        let mut finest = vec![None::<ChunkLevel>; cells];
        let mut in_use = vec![0usize; cells];
        let mut free = vec![0usize; cells];
        for (unit, level, state) in st.chunks() {
            if state == UnitState::Inner {
                continue;
            }
            let start = (unit as usize) << geo.min_shift();
            let size = geo.size_of(level);
            let mut at = start;
            while at < start + size {
                let c = at / cell;
                let end = ((c + 1) * cell).min(start + size);
                let bytes = end - at;
                finest[c] = Some(finest[c].map_or(level, |f| f.max(level)));
                if state == UnitState::InUse {
                    in_use[c] += bytes;
                } else {
                    free[c] += bytes;
                }
                at = end;
            }
        }
        let chars: Vec<char> = (0..cells)
            .map(|c| match finest[c] {
                None => '.',
                Some(level) => Self::letter(level, in_use[c] >= free[c]),
            })
            .collect();
        SpaceMap {
            metadata_type: ty,
            base: range.start().get(),
            cell_bytes: cell,
            legend: geo
                .all_levels()
                .map(|l| (Self::letter(l, true), geo.size_of(l)))
                .collect(),
            rows: chars.chunks(ROW).map(|r| r.iter().collect()).collect(),
        }
    }

    /// How many characters show `pred`.
    pub fn count(&self, pred: impl Fn(char) -> bool) -> usize {
        self.rows
            .iter()
            .flat_map(|r| r.chars())
            .filter(|&c| pred(c))
            .count()
    }
}

impl fmt::Display for SpaceMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} map at {:#x}, one character = {}:",
            self.metadata_type,
            self.base,
            SizeLabel(self.cell_bytes)
        )?;
        write!(f, "  levels:")?;
        for (c, size) in &self.legend {
            write!(f, " {c}={}", SizeLabel(*size))?;
        }
        writeln!(f, "; UPPER in use, lower free, . untouched")?;
        for (i, row) in self.rows.iter().enumerate() {
            writeln!(f, "  +{:#010x} {row}", i * ROW * self.cell_bytes)?;
        }
        Ok(())
    }
}
