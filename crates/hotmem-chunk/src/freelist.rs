//! Free lists: one doubly linked list per level, linked through the
//! occupancy table's per-unit links (indexed by a chunk's first unit), so
//! that a free chunk found by address (a buddy) is unlinked in O(1).
//!
//! Chunks with committed memory go to the front, uncommitted ones to the
//! back, so that a request takes committed memory first.
//!
//! A bit mask says which lists are non-empty, so that "the smallest larger
//! free chunk" is one leading-zero count instead of a walk over the levels.

use crate::ChunkLevel;
use crate::occupancy::Occupancy;

const NIL: u32 = u32::MAX;

/// The most levels a geometry has ([`Geometry::new`](crate::Geometry::new)
/// refuses more).
const MAX_LEVELS: usize = 32;

pub(crate) struct FreeLists {
    head: [u32; MAX_LEVELS],
    tail: [u32; MAX_LEVELS],
    /// Bit `l` is set if and only if the list of level `l` is non-empty.
    nonempty: u32,
}

/// Which end of a list a chunk is put at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum End {
    Front,
    Back,
}

impl FreeLists {
    pub(crate) fn new(levels: usize) -> FreeLists {
        assert!(levels <= MAX_LEVELS, "too many chunk levels");
        FreeLists {
            head: [NIL; MAX_LEVELS],
            tail: [NIL; MAX_LEVELS],
            nonempty: 0,
        }
    }

    /// Whether the mask says the list of `level` is non-empty.
    pub(crate) fn marked_nonempty(&self, level: ChunkLevel) -> bool {
        self.nonempty & (1 << level.index()) != 0
    }

    #[inline]
    pub(crate) fn first(&self, level: ChunkLevel) -> Option<u32> {
        let h = self.head[level.index()];
        (h != NIL).then_some(h)
    }

    /// The first chunk of the largest-numbered (smallest) non-empty level
    /// below `level`: the smallest free chunk larger than `level`'s.
    #[inline]
    pub(crate) fn first_larger(&self, level: ChunkLevel) -> Option<(u32, ChunkLevel)> {
        let below = self.nonempty & ((1u64 << level.raw()) - 1) as u32;
        if below == 0 {
            return None;
        }
        let l = ChunkLevel::new(31 - below.leading_zeros() as u8);
        Some((self.head[l.index()], l))
    }

    /// The first chunk of the smallest-numbered (largest) non-empty level in
    /// `(level, max_level]`: the largest free chunk smaller than `level`'s
    /// that is still acceptable.
    #[inline]
    pub(crate) fn first_smaller(
        &self,
        level: ChunkLevel,
        max_level: ChunkLevel,
    ) -> Option<(u32, ChunkLevel)> {
        if level >= max_level {
            return None;
        }
        // Levels level+1 ..= max_level (max_level < 32).
        let upto = ((1u64 << (max_level.raw() + 1)) - 1) as u32;
        let above = self.nonempty & upto & !(((1u64 << (level.raw() + 1)) - 1) as u32);
        if above == 0 {
            return None;
        }
        let l = ChunkLevel::new(above.trailing_zeros() as u8);
        Some((self.head[l.index()], l))
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, occ: &mut Occupancy, level: ChunkLevel, unit: u32, end: End) {
        let l = level.index();
        match end {
            End::Front => {
                occ.set_prev(unit, NIL);
                occ.set_next(unit, self.head[l]);
                if self.head[l] != NIL {
                    occ.set_prev(self.head[l], unit);
                } else {
                    self.tail[l] = unit;
                    self.nonempty |= 1 << l;
                }
                self.head[l] = unit;
            }
            End::Back => {
                occ.set_next(unit, NIL);
                occ.set_prev(unit, self.tail[l]);
                if self.tail[l] != NIL {
                    occ.set_next(self.tail[l], unit);
                } else {
                    self.head[l] = unit;
                    self.nonempty |= 1 << l;
                }
                self.tail[l] = unit;
            }
        }
    }

    /// Unlinks `unit`, which must be on the list of `level`.
    ///
    /// Taking the first chunk does not touch the next one's entry: the
    /// first chunk's `prev` is never read (it is recognised by the list
    /// head instead), so it may go stale. Every other chunk's `prev` is its
    /// predecessor. A get from a long list thus touches one entry, not two.
    #[inline(always)]
    pub(crate) fn remove(&mut self, occ: &mut Occupancy, level: ChunkLevel, unit: u32) {
        let l = level.index();
        let n = occ.next(unit);
        if self.head[l] == unit {
            self.head[l] = n;
            if n == NIL {
                debug_assert_eq!(self.tail[l], unit);
                self.tail[l] = NIL;
                self.nonempty &= !(1 << l);
            }
        } else {
            let p = occ.prev(unit);
            occ.set_next(p, n);
            if n != NIL {
                occ.set_prev(n, p);
            } else {
                debug_assert_eq!(self.tail[l], unit);
                self.tail[l] = p;
            }
        }
    }

    /// The predecessor recorded for `unit`, on the list of `level`: `None`
    /// for the first chunk (whose recorded one is not kept up to date).
    pub(crate) fn prev_of(&self, occ: &Occupancy, level: ChunkLevel, unit: u32) -> Option<u32> {
        (self.head[level.index()] != unit).then(|| occ.prev(unit))
    }

    /// The units on the list of `level`, front to back.
    pub(crate) fn iter<'a>(
        &'a self,
        occ: &'a Occupancy,
        level: ChunkLevel,
    ) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.head[level.index()];
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let u = at;
            at = occ.next(u);
            Some(u)
        })
    }
}
