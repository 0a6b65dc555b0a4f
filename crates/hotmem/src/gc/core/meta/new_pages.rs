//! [`NewPages`]: the pages allocated since a concurrent cycle's mark start,
//! by address, and the parts of the non-moving space's pages above their
//! tops at mark start. Their objects are live (allocated black) and not
//! examined by marking; a reference into one is no error.

use super::granule_table::GranuleTable;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// How many pages allocation may go on in across a mark start without
/// being retired: the non-moving space's current small page.
pub(crate) const GROWING_PAGES: usize = 1;

/// One byte per page unit of the heap reservation: nonzero where a page
/// allocated since mark start lies.
pub(crate) struct NewPages {
    units: GranuleTable<AtomicU8>,
    /// Whether page allocations are recorded now (between mark start and
    /// mark end).
    recording: AtomicBool,
    /// `[from, to)` of each page that was not retired at mark start: the
    /// part above its top then (its objects are all newer). Empty ranges
    /// where there is none.
    growing: [(AtomicUsize, AtomicUsize); GROWING_PAGES],
}

impl NewPages {
    /// A table for the reservation `base..base+len` in units of `unit`
    /// bytes (a power of two that divides every page's start and size).
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> NewPages {
        NewPages {
            units: GranuleTable::new(base, len, unit, || AtomicU8::new(0)),
            recording: AtomicBool::new(false),
            growing: std::array::from_fn(|_| (AtomicUsize::new(0), AtomicUsize::new(0))),
        }
    }

    /// Forgets every page and starts recording (at mark start, at a pause).
    /// `growing`: the `[top, end)` of each page whose allocation goes on
    /// without a retirement (at most [`GROWING_PAGES`]): what is allocated
    /// there from now on counts as new.
    pub(crate) fn start(&self, growing: &[(usize, usize)]) {
        assert!(growing.len() <= GROWING_PAGES, "too many growing pages");
        for u in self.units.entries() {
            u.store(0, Ordering::Relaxed);
        }
        for (i, (from, to)) in self.growing.iter().enumerate() {
            let (f, t) = growing.get(i).copied().unwrap_or((0, 0));
            from.store(f, Ordering::Relaxed);
            to.store(t, Ordering::Relaxed);
        }
        self.recording.store(true, Ordering::Release);
    }

    /// Stops recording (at mark end).
    pub(crate) fn stop(&self) {
        self.recording.store(false, Ordering::Release);
    }

    /// A page `start..start+len` was allocated: records it while recording.
    #[inline]
    pub(crate) fn allocated(&self, start: usize, len: usize) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        for u in self.units.entries_of(start, len) {
            u.store(1, Ordering::Release);
        }
    }

    /// Whether `addr` lies in a page allocated since mark start, or above
    /// a growing page's top at mark start.
    #[inline]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        (self.units.entry(addr)).is_some_and(|u| u.load(Ordering::Acquire) != 0)
            || self.in_growing(addr)
    }

    #[inline]
    fn in_growing(&self, addr: usize) -> bool {
        self.growing.iter().any(|(from, to)| {
            let from = from.load(Ordering::Acquire);
            addr.wrapping_sub(from) < to.load(Ordering::Acquire).wrapping_sub(from)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_recorded_only_between_start_and_stop() {
        const UNIT: usize = 1 << 21;
        let t = NewPages::new(0x4000_0000, 8 * UNIT, UNIT);
        t.allocated(0x4000_0000, UNIT);
        assert!(!t.contains(0x4000_0000), "not recording yet");
        t.start(&[]);
        t.allocated(0x4000_0000 + 2 * UNIT, 2 * UNIT);
        assert!(t.contains(0x4000_0000 + 3 * UNIT + 8));
        assert!(!t.contains(0x4000_0000 + UNIT) && !t.contains(0));
        t.stop();
        t.allocated(0x4000_0000 + 6 * UNIT, UNIT);
        assert!(!t.contains(0x4000_0000 + 6 * UNIT));
        t.start(&[]);
        assert!(!t.contains(0x4000_0000 + 3 * UNIT), "a new cycle forgets");
    }

    #[test]
    fn a_growing_page_is_new_above_its_top_at_mark_start() {
        const UNIT: usize = 1 << 21;
        let t = NewPages::new(0x4000_0000, 8 * UNIT, UNIT);
        let (page, top) = (0x4000_0000 + UNIT, 0x4000_0000 + UNIT + 4096);
        t.start(&[(top, page + UNIT)]);
        assert!(
            !t.contains(page) && !t.contains(top - 8),
            "below the top: old"
        );
        assert!(t.contains(top) && t.contains(page + UNIT - 8));
        assert!(!t.contains(page + UNIT), "the next page is not");
        t.stop();
        assert!(t.contains(top), "kept until the next start");
        t.start(&[]);
        assert!(!t.contains(top));
    }
}
