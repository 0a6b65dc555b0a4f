//! Free lists: one doubly linked list per level, linked through the
//! occupancy table's per-unit links (indexed by a chunk's first unit), so
//! that a free chunk found by address (a buddy) is unlinked in O(1).
//!
//! Chunks with committed memory go to the front, uncommitted ones to the
//! back, so that a request takes committed memory first.

use crate::ChunkLevel;
use crate::occupancy::Occupancy;

const NIL: u32 = u32::MAX;

pub(crate) struct FreeLists {
    head: Vec<u32>,
    tail: Vec<u32>,
    count: Vec<u32>,
}

/// Which end of a list a chunk is put at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum End {
    Front,
    Back,
}

impl FreeLists {
    pub(crate) fn new(levels: usize) -> FreeLists {
        FreeLists {
            head: vec![NIL; levels],
            tail: vec![NIL; levels],
            count: vec![0; levels],
        }
    }

    #[inline]
    pub(crate) fn count(&self, level: ChunkLevel) -> u32 {
        self.count[level.index()]
    }

    #[inline]
    pub(crate) fn first(&self, level: ChunkLevel) -> Option<u32> {
        let h = self.head[level.index()];
        (h != NIL).then_some(h)
    }

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
                }
                self.tail[l] = unit;
            }
        }
        self.count[l] += 1;
    }

    /// Unlinks `unit`, which must be on the list of `level`.
    pub(crate) fn remove(&mut self, occ: &mut Occupancy, level: ChunkLevel, unit: u32) {
        let l = level.index();
        let (p, n) = (occ.prev(unit), occ.next(unit));
        if p != NIL {
            occ.set_next(p, n);
        } else {
            debug_assert_eq!(self.head[l], unit);
            self.head[l] = n;
        }
        if n != NIL {
            occ.set_prev(n, p);
        } else {
            debug_assert_eq!(self.tail[l], unit);
            self.tail[l] = p;
        }
        self.count[l] -= 1;
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
