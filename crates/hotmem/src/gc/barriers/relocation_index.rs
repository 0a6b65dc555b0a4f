//! [`RelocationIndex`]: the load barrier's table of which granules of the
//! heap belong to the installed relocation set, one `u32` per granule for
//! the whole life of the runtime, so that the load barrier's test is a
//! subtraction, a compare, a shift and one load from a table whose address
//! never changes (the barrier keeps it; it does not follow a pointer to
//! the set).

use crate::gc::core::meta::{GranuleTable, GranuleView};
use crate::sync::{AtomicU32, Ordering};

/// Per granule of the heap reservation: the index + 1, in the installed
/// set's heap map, of the page of the set that covers it; 0 elsewhere.
/// Written only at safepoints (the set is installed at Pause Relocate
/// Start and taken out at the next Pause Mark End).
pub(crate) struct RelocationIndex {
    units: GranuleTable<AtomicU32>,
}

/// The table's unit: a granule, the heap's smallest page size and
/// alignment.
pub(crate) const SHIFT: u32 = hotmem_page::GRANULE_SIZE.trailing_zeros();

impl RelocationIndex {
    /// A table for the reservation `base..base+len`, empty.
    pub(crate) fn new(base: usize, len: usize) -> RelocationIndex {
        RelocationIndex {
            units: GranuleTable::new(base, len, 1 << SHIFT, || AtomicU32::new(0)),
        }
    }

    /// The barrier's view: the reservation's start and length and the
    /// table, which live as long as the runtime.
    pub(crate) fn view(&self) -> RelocationView {
        RelocationView {
            units: self.units.view(),
        }
    }

    /// Records page `index` (of the set's map) at `start..start+size`, or
    /// forgets it (`None`), at a safepoint.
    pub(crate) fn set(&self, start: usize, size: usize, index: Option<usize>) {
        let value = index.map_or(0, |i| i as u32 + 1);
        for u in self.units.entries_of(start, size) {
            u.store(value, Ordering::Relaxed);
        }
    }
}

/// The load barrier's copy of a [`RelocationIndex`]'s address and bounds.
#[derive(Copy, Clone)]
pub(crate) struct RelocationView {
    units: GranuleView<AtomicU32, SHIFT>,
}

impl RelocationView {
    /// The view of a runtime whose collector moves nothing while the
    /// mutators run: no address lies in a relocation set.
    pub(crate) fn none() -> RelocationView {
        RelocationView {
            units: GranuleView::empty(),
        }
    }

    /// The page (index + 1 in the installed set's map) `addr` may lie in:
    /// 0 when it lies in no page of the set. A nonzero answer is checked
    /// against the page's bounds by the caller.
    ///
    /// # Safety
    /// The [`RelocationIndex`] this view came from is alive (nothing for
    /// [`RelocationView::none`]).
    #[inline]
    pub(crate) unsafe fn lookup(&self, addr: usize) -> u32 {
        // SAFETY: the table is alive (the caller's promise); its units are
        // only accessed atomically.
        match unsafe { self.units.entry(addr) } {
            Some(u) => u.load(Ordering::Relaxed),
            None => 0,
        }
    }
}
