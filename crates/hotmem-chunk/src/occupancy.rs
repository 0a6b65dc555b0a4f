//! The occupancy table: one entry per smallest-chunk unit of the space.
//!
//! Only the entry of a chunk's first unit is a header (state, level,
//! hand-out serial); the entries of the other units say "not a chunk start".
//! Splitting writes one header, merging clears one, so "is the buddy at unit
//! `b` a free chunk of level `l`" is two array loads: O(1), no list walk.
//! Stored as separate arrays of plain integers, so that a large space's table
//! is zero-filled lazily by the allocator (`calloc`) rather than touched.

use crate::ChunkLevel;

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

pub(crate) struct Occupancy {
    head: Vec<u8>,
    serial: Vec<u32>,
}

impl Occupancy {
    pub(crate) fn new(units: usize) -> Occupancy {
        Occupancy {
            head: vec![INNER; units],
            serial: vec![0; units],
        }
    }

    #[inline]
    pub(crate) fn units(&self) -> u32 {
        self.head.len() as u32
    }

    #[inline]
    pub(crate) fn state(&self, unit: u32) -> UnitState {
        match self.head[unit as usize] & STATE {
            FREE => UnitState::Free,
            IN_USE => UnitState::InUse,
            _ => UnitState::Inner,
        }
    }

    /// The level of the chunk starting at `unit` (meaningful for headers only).
    #[inline]
    pub(crate) fn level(&self, unit: u32) -> ChunkLevel {
        ChunkLevel::new(self.head[unit as usize] & LEVEL)
    }

    #[inline]
    pub(crate) fn serial(&self, unit: u32) -> u32 {
        self.serial[unit as usize]
    }

    /// Whether a free chunk of exactly `level` starts at `unit`: the buddy test.
    #[inline]
    pub(crate) fn is_free_chunk(&self, unit: u32, level: ChunkLevel) -> bool {
        self.head[unit as usize] == FREE | level.raw()
    }

    #[inline]
    pub(crate) fn set_free(&mut self, unit: u32, level: ChunkLevel) {
        self.head[unit as usize] = FREE | level.raw();
    }

    #[inline]
    pub(crate) fn set_in_use(&mut self, unit: u32, level: ChunkLevel, serial: u32) {
        self.head[unit as usize] = IN_USE | level.raw();
        self.serial[unit as usize] = serial;
    }

    /// Changes the level of the header at `unit`, keeping its state.
    #[inline]
    pub(crate) fn set_level(&mut self, unit: u32, level: ChunkLevel) {
        let h = &mut self.head[unit as usize];
        debug_assert_ne!(*h, INNER);
        *h = (*h & STATE) | level.raw();
    }

    /// `unit` is no longer a chunk start (it was merged into its lower buddy).
    #[inline]
    pub(crate) fn clear(&mut self, unit: u32) {
        self.head[unit as usize] = INNER;
    }
}
