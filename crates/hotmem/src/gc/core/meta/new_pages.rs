//! [`NewPages`]: the pages allocated since a concurrent cycle's mark start,
//! by address. Their objects are live (allocated black) and not examined
//! by marking; a reference into one is no error.

use super::granule_table::GranuleTable;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// One byte per page unit of the heap reservation: nonzero where a page
/// allocated since mark start lies.
pub(crate) struct NewPages {
    units: GranuleTable<AtomicU8>,
    /// Whether page allocations are recorded now (between mark start and
    /// mark end).
    recording: AtomicBool,
}

impl NewPages {
    /// A table for the reservation `base..base+len` in units of `unit`
    /// bytes (a power of two that divides every page's start and size).
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> NewPages {
        NewPages {
            units: GranuleTable::new(base, len, unit, || AtomicU8::new(0)),
            recording: AtomicBool::new(false),
        }
    }

    /// Forgets every page and starts recording (at mark start).
    pub(crate) fn start(&self) {
        for u in self.units.entries() {
            u.store(0, Ordering::Relaxed);
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

    /// Whether `addr` lies in a page allocated since mark start.
    #[inline]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        (self.units.entry(addr)).is_some_and(|u| u.load(Ordering::Acquire) != 0)
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
        t.start();
        t.allocated(0x4000_0000 + 2 * UNIT, 2 * UNIT);
        assert!(t.contains(0x4000_0000 + 3 * UNIT + 8));
        assert!(!t.contains(0x4000_0000 + UNIT) && !t.contains(0));
        t.stop();
        t.allocated(0x4000_0000 + 6 * UNIT, UNIT);
        assert!(!t.contains(0x4000_0000 + 6 * UNIT));
        t.start();
        assert!(!t.contains(0x4000_0000 + 3 * UNIT), "a new cycle forgets");
    }
}
