//! Commit granules: the space is committed and uncommitted in granules
//! (64 KiB by default) and this map remembers which are committed.
//!
//! Committing through hotmem-os discards a range's contents, so a granule is
//! committed only when the map says it is not: a granule shared by several
//! small chunks is committed once, by the first of them that needs it, and
//! never again while any of them lives. Only a purge uncommits, and only
//! granules that lie entirely inside a free chunk.

use crate::table::{LazyTable, OwnedTable};
use hotmem_os::{CommitError, Memory, Reservation, ReserveError};
use std::ops::Range;

pub(crate) struct CommitMap {
    /// log2(granule / smallest chunk).
    units_shift: u32,
    /// Per granule: 1 if committed. Accessible as far as the space is carved.
    committed: OwnedTable<u8>,
    committed_count: usize,
}

/// What a commit or uncommit call did.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub(crate) struct Changed {
    /// OS calls made.
    pub(crate) calls: u64,
    /// Granules changed.
    pub(crate) granules: usize,
}

impl CommitMap {
    pub(crate) fn new(
        memory: &Memory,
        granules: usize,
        units_shift: u32,
    ) -> Result<CommitMap, ReserveError> {
        Ok(CommitMap {
            units_shift,
            committed: OwnedTable::new(memory, granules)?,
            committed_count: 0,
        })
    }

    /// Makes the entries of the granules holding units `[0, units)`
    /// accessible.
    pub(crate) fn grow(&mut self, units: u32) -> Result<(), CommitError> {
        let granules = (units as usize).div_ceil(1 << self.units_shift);
        self.committed.grow(granules)
    }

    /// The table's own memory.
    pub(crate) fn table(&self) -> &LazyTable<u8> {
        self.committed.table()
    }

    #[inline]
    fn get(&self, granule: usize) -> bool {
        self.committed.entries()[granule] != 0
    }

    /// Smallest-chunk units per granule, as a shift.
    #[inline]
    pub(crate) fn units_shift(&self) -> u32 {
        self.units_shift
    }

    #[inline]
    pub(crate) fn committed_granules(&self) -> usize {
        self.committed_count
    }

    #[inline]
    pub(crate) fn is_committed(&self, granule: usize) -> bool {
        self.get(granule)
    }

    /// The granules that hold any byte of units `[first, first + count)`.
    #[inline]
    pub(crate) fn granules_of(&self, first: u32, count: u32) -> Range<usize> {
        let g0 = (first >> self.units_shift) as usize;
        let g1 = ((first + count - 1) >> self.units_shift) as usize + 1;
        g0..g1
    }

    /// Committed units among `[first, first + count)`: a chunk smaller than a
    /// granule counts whole when its granule is committed.
    pub(crate) fn committed_units(&self, first: u32, count: u32) -> u32 {
        let per = 1u32 << self.units_shift;
        if count <= per {
            return if self.get((first >> self.units_shift) as usize) {
                count
            } else {
                0
            };
        }
        let n = self
            .granules_of(first, count)
            .filter(|&g| self.get(g))
            .count();
        n as u32 * per
    }

    /// Whether the first granule of the units is committed.
    #[inline]
    pub(crate) fn starts_committed(&self, first: u32) -> bool {
        self.get((first >> self.units_shift) as usize)
    }

    /// Commits every uncommitted granule in `granules`, one OS call per run.
    /// On failure the runs committed before stay committed and recorded.
    pub(crate) fn commit(
        &mut self,
        reservation: &Reservation,
        granule_bytes: usize,
        granules: Range<usize>,
    ) -> Result<Changed, CommitError> {
        self.change(reservation, granule_bytes, granules, true)
    }

    /// Uncommits every committed granule in `granules`.
    pub(crate) fn uncommit(
        &mut self,
        reservation: &Reservation,
        granule_bytes: usize,
        granules: Range<usize>,
    ) -> Result<Changed, CommitError> {
        self.change(reservation, granule_bytes, granules, false)
    }

    fn change(
        &mut self,
        reservation: &Reservation,
        granule_bytes: usize,
        granules: Range<usize>,
        commit: bool,
    ) -> Result<Changed, CommitError> {
        let mut changed = Changed::default();
        let mut g = granules.start;
        while g < granules.end {
            if self.get(g) == commit {
                g += 1;
                continue;
            }
            let run_start = g;
            while g < granules.end && self.get(g) != commit {
                g += 1;
            }
            let range =
                reservation.subrange(run_start * granule_bytes, (g - run_start) * granule_bytes)?;
            if commit {
                reservation.commit(range)?;
                self.committed_count += g - run_start;
            } else {
                reservation.uncommit(range)?;
                self.committed_count -= g - run_start;
            }
            self.committed.entries_mut()[run_start..g].fill(u8::from(commit));
            changed.calls += 1;
            changed.granules += g - run_start;
        }
        Ok(changed)
    }
}
