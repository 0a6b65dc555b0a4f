//! The occupancy table: one entry per smallest-chunk unit of the space.
//!
//! Only the entry of a chunk's first unit is a header (state, level,
//! hand-out serial, packed in one `u32` so that checking a handle is one
//! load); the entries of the other units say "not a chunk start".
//! Splitting writes one header, merging clears one, so "is the buddy at unit
//! `b` a free chunk of level `l`" is one array load: O(1), no list walk.
//! Each entry also holds the unit's free-list links, so that testing a buddy
//! and unlinking it touch the same cache line. Entries are arrays of plain
//! integers in a [`LazyTable`], zero meaning "not a chunk start", so the
//! table is committed only as far as the space is carved.

use crate::ChunkLevel;
use crate::table::{LazyTable, OwnedTable};
use hotmem_os::{CommitError, Memory, ReserveError};

/// What a unit is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum UnitState {
    /// Not the first unit of a chunk (inside one, or not carved yet).
    Inner,
    /// The first unit of a free chunk.
    Free,
    /// The first unit of a chunk that is handed out.
    InUse,
}

// One byte per unit: 0 for "not a chunk start", else the state in the top
// two bits and the level (< 32) in the low five, so the buddy test is one
// load.
const INNER: u8 = 0;
const FREE: u8 = 0x40;
const IN_USE: u8 = 0x80;
const STATE: u8 = 0xC0;
const LEVEL: u8 = 0x1F;

/// Bits of the hand-out serial kept in a header.
pub(crate) const SERIAL_BITS: u32 = 24;

const CELL: usize = 0;
const PREV: usize = 1;
const NEXT: usize = 2;

pub(crate) struct Occupancy {
    /// Per unit: `serial << 8 | head byte`, free-list prev, free-list next.
    cells: OwnedTable<[u32; 3]>,
}

impl Occupancy {
    pub(crate) fn new(memory: &Memory, units: usize) -> Result<Occupancy, ReserveError> {
        Ok(Occupancy {
            cells: OwnedTable::new(memory, units)?,
        })
    }

    /// Makes the entries of units `[0, units)` accessible.
    pub(crate) fn grow(&mut self, units: u32) -> Result<(), CommitError> {
        self.cells.grow(units as usize)
    }

    /// Units whose entries are accessible (the rest were never touched).
    #[inline]
    pub(crate) fn accessible_units(&self) -> u32 {
        self.cells.accessible() as u32
    }

    /// The table's own memory.
    pub(crate) fn table(&self) -> &LazyTable<[u32; 3]> {
        self.cells.table()
    }

    #[inline]
    fn cell(&self, unit: u32) -> &[u32; 3] {
        &self.cells.entries()[unit as usize]
    }

    #[inline]
    fn cell_mut(&mut self, unit: u32) -> &mut [u32; 3] {
        &mut self.cells.entries_mut()[unit as usize]
    }

    #[inline]
    fn head(&self, unit: u32) -> u8 {
        self.cell(unit)[CELL] as u8
    }

    /// The free-list predecessor of the chunk at `unit`.
    #[inline]
    pub(crate) fn prev(&self, unit: u32) -> u32 {
        self.cell(unit)[PREV]
    }

    /// The free-list successor of the chunk at `unit`.
    #[inline]
    pub(crate) fn next(&self, unit: u32) -> u32 {
        self.cell(unit)[NEXT]
    }

    #[inline]
    pub(crate) fn set_prev(&mut self, unit: u32, prev: u32) {
        self.cell_mut(unit)[PREV] = prev;
    }

    #[inline]
    pub(crate) fn set_next(&mut self, unit: u32, next: u32) {
        self.cell_mut(unit)[NEXT] = next;
    }

    #[inline]
    pub(crate) fn units(&self) -> u32 {
        self.cells.table().len() as u32
    }

    #[inline]
    pub(crate) fn state(&self, unit: u32) -> UnitState {
        match self.head(unit) & STATE {
            FREE => UnitState::Free,
            IN_USE => UnitState::InUse,
            _ => UnitState::Inner,
        }
    }

    /// The level of the chunk starting at `unit` (meaningful for headers only).
    #[inline]
    pub(crate) fn level(&self, unit: u32) -> ChunkLevel {
        ChunkLevel::new(self.head(unit) & LEVEL)
    }

    #[inline]
    pub(crate) fn serial(&self, unit: u32) -> u32 {
        self.cell(unit)[CELL] >> 8
    }

    /// Whether a free chunk of exactly `level` starts at `unit`: the buddy test.
    #[inline]
    pub(crate) fn is_free_chunk(&self, unit: u32, level: ChunkLevel) -> bool {
        self.head(unit) == FREE | level.raw()
    }

    /// Whether the chunk at `unit` is in use at `level`, handed out with
    /// `serial`: a handle's identity check, one load.
    #[inline]
    pub(crate) fn is_in_use_as(&self, unit: u32, level: ChunkLevel, serial: u32) -> bool {
        let c = self.cell(unit)[CELL];
        c as u8 == IN_USE | level.raw() && c >> 8 == serial
    }

    #[inline]
    pub(crate) fn set_free(&mut self, unit: u32, level: ChunkLevel) {
        self.cell_mut(unit)[CELL] = u32::from(FREE | level.raw());
    }

    #[inline]
    pub(crate) fn set_in_use(&mut self, unit: u32, level: ChunkLevel, serial: u32) {
        debug_assert!(serial < 1 << SERIAL_BITS);
        self.cell_mut(unit)[CELL] = serial << 8 | u32::from(IN_USE | level.raw());
    }

    /// Changes the level of the header at `unit`, keeping its state.
    #[inline]
    pub(crate) fn set_level(&mut self, unit: u32, level: ChunkLevel) {
        let c = &mut self.cell_mut(unit)[CELL];
        debug_assert_ne!(*c as u8, INNER);
        *c = (*c & !u32::from(LEVEL)) | u32::from(level.raw());
    }

    /// `unit` is no longer a chunk start (it was merged into its lower buddy).
    #[inline]
    pub(crate) fn clear(&mut self, unit: u32) {
        self.cell_mut(unit)[CELL] = u32::from(INNER);
    }
}
