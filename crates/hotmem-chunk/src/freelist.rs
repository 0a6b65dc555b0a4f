//! Free lists: one doubly linked list per level, linked through per-unit
//! a per-unit `[prev, next]` array indexed by a chunk's first unit, so that a free chunk
//! found by address (a buddy) is unlinked in O(1).
//!
//! Chunks with committed memory go to the front, uncommitted ones to the
//! back, so that a request takes committed memory first.

use crate::ChunkLevel;

const NIL: u32 = u32::MAX;

pub(crate) struct FreeLists {
    head: Vec<u32>,
    tail: Vec<u32>,
    count: Vec<u32>,
    /// `[prev, next]` per unit, together so an unlink touches one line.
    links: Vec<[u32; 2]>,
}

/// Which end of a list a chunk is put at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum End {
    Front,
    Back,
}

impl FreeLists {
    pub(crate) fn new(levels: usize, units: usize) -> FreeLists {
        FreeLists {
            head: vec![NIL; levels],
            tail: vec![NIL; levels],
            count: vec![0; levels],
            // Links of units that are not on a list are never read, so the
            // zero-filled (lazily allocated) arrays need no initial value.
            links: vec![[0; 2]; units],
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

    pub(crate) fn push(&mut self, level: ChunkLevel, unit: u32, end: End) {
        let l = level.index();
        let u = unit as usize;
        match end {
            End::Front => {
                self.links[u][0] = NIL;
                self.links[u][1] = self.head[l];
                if self.head[l] != NIL {
                    self.links[self.head[l] as usize][0] = unit;
                } else {
                    self.tail[l] = unit;
                }
                self.head[l] = unit;
            }
            End::Back => {
                self.links[u][1] = NIL;
                self.links[u][0] = self.tail[l];
                if self.tail[l] != NIL {
                    self.links[self.tail[l] as usize][1] = unit;
                } else {
                    self.head[l] = unit;
                }
                self.tail[l] = unit;
            }
        }
        self.count[l] += 1;
    }

    /// Unlinks `unit`, which must be on the list of `level`.
    pub(crate) fn remove(&mut self, level: ChunkLevel, unit: u32) {
        let l = level.index();
        let u = unit as usize;
        let (p, n) = (self.links[u][0], self.links[u][1]);
        if p != NIL {
            self.links[p as usize][1] = n;
        } else {
            debug_assert_eq!(self.head[l], unit);
            self.head[l] = n;
        }
        if n != NIL {
            self.links[n as usize][0] = p;
        } else {
            debug_assert_eq!(self.tail[l], unit);
            self.tail[l] = p;
        }
        self.count[l] -= 1;
    }

    /// The units on the list of `level`, front to back.
    pub(crate) fn iter(&self, level: ChunkLevel) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.head[level.index()];
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let u = at;
            at = self.links[u as usize][1];
            Some(u)
        })
    }
}
