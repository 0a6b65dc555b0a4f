//! Free lists: one doubly linked list per level, linked through per-unit
//! `prev`/`next` arrays indexed by a chunk's first unit, so that a free chunk
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
    prev: Vec<u32>,
    next: Vec<u32>,
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
            prev: vec![0; units],
            next: vec![0; units],
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
                self.prev[u] = NIL;
                self.next[u] = self.head[l];
                if self.head[l] != NIL {
                    self.prev[self.head[l] as usize] = unit;
                } else {
                    self.tail[l] = unit;
                }
                self.head[l] = unit;
            }
            End::Back => {
                self.next[u] = NIL;
                self.prev[u] = self.tail[l];
                if self.tail[l] != NIL {
                    self.next[self.tail[l] as usize] = unit;
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
        let (p, n) = (self.prev[u], self.next[u]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            debug_assert_eq!(self.head[l], unit);
            self.head[l] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
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
            at = self.next[u as usize];
            Some(u)
        })
    }
}
