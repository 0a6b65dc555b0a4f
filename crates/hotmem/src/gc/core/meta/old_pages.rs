//! [`OldPages`]: which pages are old, by address, for the store barrier,
//! and how many young cycles each young page has survived in place.

use super::GranuleTable;
use crate::sync::{AtomicU8, Ordering};
use hotmem_page::PageRef;

/// One byte per page unit of the heap reservation: [`OLD`] where an old
/// page lies; for a young page 0, or 1 + the young cycles it survived
/// where it is (a concurrent young cycle ages a page it keeps before it
/// promotes it, see [`OldPages::survived`]).
pub(crate) struct OldPages {
    old: GranuleTable<AtomicU8>,
}

/// The byte of an old page's units.
const OLD: u8 = 1;

impl OldPages {
    /// A table for the reservation `base..base+len`, in units of `unit`
    /// bytes (a power of two that every page's start and size are multiples
    /// of), with no old page.
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> OldPages {
        OldPages {
            old: GranuleTable::new(base, len, unit, || AtomicU8::new(0)),
        }
    }

    /// log2 of the unit: two addresses that agree above these bits lie in
    /// the same page.
    #[inline]
    pub(crate) fn unit_shift(&self) -> u32 {
        self.old.shift()
    }

    /// Whether `addr` lies in an old page.
    #[inline]
    pub(crate) fn is_old(&self, addr: usize) -> bool {
        (self.old.entry(addr)).is_some_and(|u| u.load(Ordering::Relaxed) == OLD)
    }

    /// Whether `addr` lies in the heap, outside every old page.
    #[inline]
    pub(crate) fn is_young(&self, addr: usize) -> bool {
        (self.old.entry(addr)).is_some_and(|u| u.load(Ordering::Relaxed) != OLD)
    }

    /// Marks the units that `start..start+len` touches as old.
    pub(crate) fn mark(&self, start: usize, len: usize) {
        for unit in self.old.entries_of(start, len) {
            unit.store(OLD, Ordering::Relaxed);
        }
    }

    /// How many young cycles the young page at `start` survived where it
    /// is (0 for an old page or an address outside the heap).
    pub(crate) fn survived(&self, start: usize) -> u8 {
        match self.old.entry(start).map(|u| u.load(Ordering::Relaxed)) {
            Some(b) if b != OLD => b.saturating_sub(1),
            _ => 0,
        }
    }

    /// Records that the young page `start..start+len` survived `cycles`
    /// young cycles where it is (at least 1); it stays young.
    pub(crate) fn set_survived(&self, start: usize, len: usize, cycles: u8) {
        let b = cycles.saturating_add(1).max(2);
        for unit in self.old.entries_of(start, len) {
            unit.store(b, Ordering::Relaxed);
        }
    }

    /// Marks the units that `start..start+len` touches as young again (a
    /// page about to be freed).
    pub(crate) fn clear(&self, start: usize, len: usize) {
        for unit in self.old.entries_of(start, len) {
            unit.store(0, Ordering::Relaxed);
        }
    }

    /// Makes exactly `pages` old.
    pub(crate) fn rebuild(&self, pages: &[PageRef]) {
        for unit in self.old.entries() {
            unit.store(0, Ordering::Relaxed);
        }
        for p in pages {
            self.mark(p.range().start().get(), p.size());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x4000_0000;
    const UNIT: usize = 1 << 21;

    #[test]
    fn the_old_table_marks_the_units_a_range_touches_and_nothing_outside_the_heap() {
        let t = OldPages::new(BASE, 8 * UNIT, UNIT);
        assert_eq!(t.unit_shift(), 21);
        assert!((0..8).all(|u| t.is_young(BASE + u * UNIT) && !t.is_old(BASE + u * UNIT)));
        // Outside the reservation: neither old nor young.
        for addr in [0, BASE - 8, BASE + 8 * UNIT, usize::MAX] {
            assert!(!t.is_old(addr) && !t.is_young(addr), "{addr:#x}");
        }
        // A range from the last word of unit 2 into unit 3.
        t.mark(BASE + 3 * UNIT - 8, 16);
        let old: Vec<usize> = (0..8).filter(|u| t.is_old(BASE + u * UNIT)).collect();
        assert_eq!(old, [2, 3]);
        assert!(t.is_old(BASE + 2 * UNIT) && t.is_old(BASE + 4 * UNIT - 1));
        assert!(t.is_young(BASE + 4 * UNIT));
        // Empty ranges, ranges outside, and a range past the end (clamped).
        t.mark(BASE + 5 * UNIT, 0);
        t.mark(BASE - UNIT, UNIT);
        t.mark(BASE + 9 * UNIT, UNIT);
        t.mark(BASE + 7 * UNIT, 4 * UNIT);
        let old: Vec<usize> = (0..8).filter(|u| t.is_old(BASE + u * UNIT)).collect();
        assert_eq!(old, [2, 3, 7]);
    }
}
