//! [`NewPages`]: the pages allocated since a concurrent cycle's mark start,
//! by address, and the parts of the pages kept across mark start above
//! their tops then (the non-moving space's current pages, and a collector
//! that moves nothing keeps the mutators'). Their objects are live
//! (allocated black) and not examined by marking; a reference into one is
//! no error.

use super::granule_table::GranuleTable;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// A unit of no page allocated since mark start, nor kept across it.
const OLD: u8 = 0;
/// A unit of a page allocated since mark start.
const NEW: u8 = 1;
/// A unit of a page kept across mark start: new above its top then.
const GROWING: u8 = 2;

/// One record of the pages allocated since a mark start: one byte per
/// page unit of the heap reservation, [`NEW`] where a page allocated since
/// lies, [`GROWING`] where a page kept across it lies above its top then
/// (that top beside it).
struct Record {
    units: GranuleTable<AtomicU8>,
    /// For a [`GROWING`] unit, the top of its page at mark start.
    tops: GranuleTable<AtomicUsize>,
    /// Whether page allocations are recorded now (between mark start and
    /// mark end).
    recording: AtomicBool,
}

impl Record {
    fn new(base: usize, len: usize, unit: usize) -> Record {
        Record {
            units: GranuleTable::new(base, len, unit, || AtomicU8::new(OLD)),
            tops: GranuleTable::new(base, len, unit, || AtomicUsize::new(0)),
            recording: AtomicBool::new(false),
        }
    }

    fn start(&self, growing: &[(usize, usize)]) {
        for u in self.units.entries() {
            u.store(OLD, Ordering::Relaxed);
        }
        for &(top, end) in growing {
            let len = end.saturating_sub(top);
            let units = self.units.entries_of(top, len);
            for (u, t) in units.iter().zip(self.tops.entries_of(top, len)) {
                t.store(top, Ordering::Relaxed);
                u.store(GROWING, Ordering::Relaxed);
            }
        }
        self.recording.store(true, Ordering::Release);
    }

    #[inline]
    fn allocated(&self, start: usize, len: usize) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        for u in self.units.entries_of(start, len) {
            u.store(NEW, Ordering::Release);
        }
    }

    #[inline]
    fn contains(&self, addr: usize) -> bool {
        match self.units.entry(addr).map(|u| u.load(Ordering::Acquire)) {
            Some(NEW) => true,
            Some(GROWING) => {
                (self.tops.entry(addr)).is_some_and(|t| addr >= t.load(Ordering::Relaxed))
            }
            _ => false,
        }
    }
}

/// The pages allocated since the latest mark start (what the barriers
/// filter with, and the running cycle's marking), and since the running
/// full cycle's mark start: a young cycle that runs while a full cycle
/// marks (see
/// [`YoungInFull`](crate::gc::concurrent::YoungInFull)) starts its own
/// record, while the full marking still needs its own. The barriers may
/// log more than the full marking needs, never less: the latest record
/// is the smaller.
pub(crate) struct NewPages {
    latest: Record,
    full: Record,
}

impl NewPages {
    /// A table for the reservation `base..base+len` in units of `unit`
    /// bytes (a power of two that divides every page's start and size).
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> NewPages {
        NewPages {
            latest: Record::new(base, len, unit),
            full: Record::new(base, len, unit),
        }
    }

    /// Forgets every page and starts recording (at mark start, at a pause).
    /// `growing`: the `[top, end)` of each page whose allocation goes on
    /// without a retirement: what is allocated there from now on counts
    /// as new.
    pub(crate) fn start(&self, growing: &[(usize, usize)]) {
        self.latest.start(growing);
    }

    /// [`NewPages::start`] at a full cycle's mark start: also the full
    /// cycle's own record ([`NewPages::contains_since_full`]).
    pub(crate) fn start_full(&self, growing: &[(usize, usize)]) {
        self.latest.start(growing);
        self.full.start(growing);
    }

    /// Stops recording (at mark end; a young cycle inside a full one's
    /// marking leaves it on).
    pub(crate) fn stop(&self) {
        self.latest.recording.store(false, Ordering::Release);
        self.full.recording.store(false, Ordering::Release);
    }

    /// A page `start..start+len` was allocated: records it while recording.
    #[inline]
    pub(crate) fn allocated(&self, start: usize, len: usize) {
        self.latest.allocated(start, len);
        self.full.allocated(start, len);
    }

    /// Whether `addr` lies in a page allocated since the latest mark
    /// start, or above a kept page's top then.
    #[inline]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        self.latest.contains(addr)
    }

    /// Whether `addr` lies in a page allocated since the running full
    /// cycle's mark start, or above a kept page's top then.
    #[inline]
    pub(crate) fn contains_since_full(&self, addr: usize) -> bool {
        self.full.contains(addr)
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
        // Several at once, one of them over three units, its top in the
        // second.
        let (medium, mtop) = (0x4000_0000 + 4 * UNIT, 0x4000_0000 + 5 * UNIT + 64);
        t.start(&[(top, page + UNIT), (mtop, medium + 3 * UNIT)]);
        assert!(t.contains(top) && t.contains(mtop) && t.contains(medium + 3 * UNIT - 8));
        assert!(!t.contains(medium + 8) && !t.contains(mtop - 8));
        t.stop();
        assert!(t.contains(top), "kept until the next start");
        t.start(&[]);
        assert!(!t.contains(top));
    }

    #[test]
    fn a_full_cycles_record_outlives_a_young_start_inside_it() {
        const UNIT: usize = 1 << 21;
        let base = 0x4000_0000;
        let t = NewPages::new(base, 8 * UNIT, UNIT);
        let (page, top) = (base + UNIT, base + UNIT + 4096);
        t.start_full(&[(top, page + UNIT)]);
        t.allocated(base + 2 * UNIT, UNIT);
        // A young cycle starts inside the full one's marking: the page
        // allocated before is not new to it, and the kept page's top moved.
        t.start(&[(top + 64, page + UNIT)]);
        t.allocated(base + 3 * UNIT, UNIT);
        assert!(!t.contains(base + 2 * UNIT) && t.contains(base + 3 * UNIT));
        assert!(t.contains_since_full(base + 2 * UNIT) && t.contains_since_full(base + 3 * UNIT));
        assert!(!t.contains(top) && t.contains(top + 64));
        assert!(t.contains_since_full(top) && !t.contains_since_full(top - 8));
        t.stop();
        t.allocated(base + 4 * UNIT, UNIT);
        assert!(!t.contains_since_full(base + 4 * UNIT));
        // A young cycle alone does not record for a full one.
        t.start(&[]);
        t.allocated(base + 5 * UNIT, UNIT);
        assert!(t.contains(base + 5 * UNIT) && !t.contains_since_full(base + 5 * UNIT));
    }
}
