//! [`GranuleTable`]: the one type of every side table indexed by address
//! (mmtk-core's side metadata specs): one entry per granule of a power of
//! two bytes of an address range, found by a subtraction, a compare and a
//! shift. Each table's layout (range, granule, entry type) is decided
//! where the table is made:
//!
//! | table | entry | granule | where |
//! |---|---|---|---|
//! | the heap map's pages | `u32` (page index + 1) | the largest that divides every page | [`HeapMap`](super::HeapMap) |
//! | pages allocated since mark start | `AtomicU8` | a heap granule | [`NewPages`](super::NewPages) |
//! | a relocation set's pages | `u32` (page index + 1) | the heap map's | `gc/core/relocation_set.rs` |
//! | old pages (the store barrier's) | `AtomicU8` | the smallest page | `gc/core/meta/old_pages.rs` |
//! | the installed relocation set (the load barrier's) | `AtomicU32` | a heap granule | `gc/barriers/relocation_index.rs` |

/// One `E` per granule of `1 << shift` bytes of `base..base+len`.
pub(crate) struct GranuleTable<E> {
    base: usize,
    len: usize,
    shift: u32,
    entries: Box<[E]>,
}

impl<E> GranuleTable<E> {
    /// A table for `base..base+len` in granules of `granule` bytes (a
    /// power of two), each entry `empty()`.
    pub(crate) fn new(
        base: usize,
        len: usize,
        granule: usize,
        empty: impl Fn() -> E,
    ) -> GranuleTable<E> {
        debug_assert!(granule.is_power_of_two(), "granule {granule}");
        GranuleTable {
            base,
            len,
            shift: granule.trailing_zeros(),
            entries: (0..len.div_ceil(granule)).map(|_| empty()).collect(),
        }
    }

    /// The range the table covers and its granule: `(base, len, shift)`.
    pub(crate) fn geometry(&self) -> (usize, usize, u32) {
        (self.base, self.len, self.shift)
    }

    /// log2 of the granule: two addresses that agree above these bits
    /// share an entry.
    #[inline]
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// The entry of the granule `addr` lies in; `None` outside the range
    /// (any value may be asked about).
    #[inline]
    pub(crate) fn entry(&self, addr: usize) -> Option<&E> {
        let off = addr.wrapping_sub(self.base);
        if off >= self.len {
            return None;
        }
        Some(&self.entries[off >> self.shift])
    }

    /// The granules `start..start+len` touches, clamped to the range: none
    /// for an empty range or one that starts outside.
    fn granules_of(&self, start: usize, len: usize) -> std::ops::Range<usize> {
        let off = start.wrapping_sub(self.base);
        if off >= self.len || len == 0 {
            return 0..0;
        }
        let last = off.saturating_add(len - 1).min(self.len - 1);
        (off >> self.shift)..(last >> self.shift) + 1
    }

    /// The entries of the granules `start..start+len` touches (see
    /// [`GranuleTable::granules_of`]).
    #[inline]
    pub(crate) fn entries_of(&self, start: usize, len: usize) -> &[E] {
        &self.entries[self.granules_of(start, len)]
    }

    /// [`GranuleTable::entries_of`], to write.
    pub(crate) fn entries_of_mut(&mut self, start: usize, len: usize) -> &mut [E] {
        let granules = self.granules_of(start, len);
        &mut self.entries[granules]
    }

    /// Every entry.
    pub(crate) fn entries(&self) -> &[E] {
        &self.entries
    }

    /// A copy of the table's address and bounds for a hot path that keeps
    /// it (the load barrier), its granule known when compiled: `SHIFT` is
    /// the table's.
    ///
    /// # Panics
    /// If `SHIFT` is not the table's shift.
    pub(crate) fn view<const SHIFT: u32>(&self) -> GranuleView<E, SHIFT> {
        assert_eq!(SHIFT, self.shift, "the view's granule is the table's");
        GranuleView {
            base: self.base,
            len: self.len,
            entries: self.entries.as_ptr(),
        }
    }
}

/// A [`GranuleTable`]'s address and bounds, copied where a hot path keeps
/// them (valid while the table lives).
pub(crate) struct GranuleView<E, const SHIFT: u32> {
    base: usize,
    len: usize,
    entries: *const E,
}

impl<E, const SHIFT: u32> Clone for GranuleView<E, SHIFT> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, const SHIFT: u32> Copy for GranuleView<E, SHIFT> {}

impl<E, const SHIFT: u32> GranuleView<E, SHIFT> {
    /// A view of no table: [`GranuleView::entry`] finds no entry for any
    /// address (its range is empty), so it never reads one.
    pub(crate) fn empty() -> Self {
        GranuleView {
            base: 0,
            len: 0,
            entries: std::ptr::NonNull::dangling().as_ptr(),
        }
    }

    /// The entry of the granule `addr` lies in; `None` outside the range.
    ///
    /// # Safety
    /// The table this view came from is alive (nothing for
    /// [`GranuleView::empty`]).
    #[inline]
    pub(crate) unsafe fn entry(&self, addr: usize) -> Option<&E> {
        let off = addr.wrapping_sub(self.base);
        if off >= self.len {
            return None;
        }
        // SAFETY: `off < len`, so the entry is inside the table, which is
        // alive (the caller's promise).
        Some(unsafe { &*self.entries.add(off >> SHIFT) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x4000_0000;
    const UNIT: usize = 1 << 21;

    #[test]
    fn entries_are_found_by_address_and_ranges_are_clamped() {
        let mut t = GranuleTable::new(BASE, 8 * UNIT, UNIT, || 0u32);
        assert_eq!(t.entries().len(), 8);
        assert_eq!(t.shift(), 21);
        for addr in [0, BASE - 8, BASE + 8 * UNIT, usize::MAX] {
            assert!(t.entry(addr).is_none(), "{addr:#x}");
        }
        // A range from the last word of unit 2 into unit 3.
        for e in t.entries_of_mut(BASE + 3 * UNIT - 8, 16) {
            *e = 1;
        }
        // Empty ranges, ranges outside, and a range past the end.
        assert!(t.entries_of(BASE + 5 * UNIT, 0).is_empty());
        assert!(t.entries_of(BASE - UNIT, UNIT).is_empty());
        assert!(t.entries_of(BASE + 9 * UNIT, UNIT).is_empty());
        for e in t.entries_of_mut(BASE + 7 * UNIT, 4 * UNIT) {
            *e = 7;
        }
        let set: Vec<usize> = (0..8).filter(|u| t.entries()[*u] != 0).collect();
        assert_eq!(set, [2, 3, 7]);
        assert_eq!(t.entry(BASE + 4 * UNIT - 1), Some(&1));
        let view = t.view::<21>();
        // SAFETY: `t` is alive.
        assert_eq!(unsafe { view.entry(BASE + 7 * UNIT + 8) }, Some(&7));
        // SAFETY: as above.
        assert_eq!(unsafe { view.entry(BASE + 8 * UNIT) }, None);
    }
}
