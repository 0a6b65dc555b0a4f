//! When a concurrent cycle starts: once the mutators' budget has no more
//! left than they will allocate while the next cycle runs, with room to
//! spare (ZGC starts its cycles from the allocation rate and the last
//! cycle's length the same way).
//!
//! With two generations the next cycle may be young or full, and the two
//! differ in length by the size of the old generation: a full cycle marks
//! everything, a young one only what is young. So the margin is taken
//! from what the mutators allocated during the last cycle **of the kind
//! that runs next** (generational ZGC paces its young and old collectors
//! apart). A margin taken from the last cycle of either kind, as before,
//! started a full cycle after a young one with a young cycle's margin: the
//! mutators ran out of budget while it marked, and stalled.

use super::generations::CollectionKind;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// No cycle of that kind has ended yet.
const NONE_YET: u64 = u64::MAX;

/// The trigger margin and what it is made from.
pub(crate) struct Pacing {
    /// A cycle starts once the mutators' budget has less than this many
    /// bytes left.
    margin: AtomicUsize,
    /// What the mutators took during the last young cycle and during the
    /// last full one ([`NONE_YET`] before the first).
    during: [AtomicU64; 2],
}

/// What one cycle's end tells the pacing.
#[derive(Copy, Clone, Debug)]
pub(crate) struct CycleEnd {
    /// The kind of the cycle that ended.
    pub(crate) ran: CollectionKind,
    /// Bytes of pages the mutators took while it ran.
    pub(crate) allocated: u64,
    /// The kind of the next cycle, as the generational policy chooses it
    /// now (always full with one generation).
    pub(crate) next: CollectionKind,
    /// The least margin: the next cycle never starts later than this many
    /// bytes before the budget runs out.
    pub(crate) floor: usize,
}

impl Pacing {
    /// Pacing that starts the first cycle with `initial` bytes of budget
    /// left.
    pub(crate) fn new(initial: usize) -> Pacing {
        Pacing {
            margin: AtomicUsize::new(initial),
            during: [AtomicU64::new(NONE_YET), AtomicU64::new(NONE_YET)],
        }
    }

    /// Whether a cycle should start now, with `remaining` bytes of budget
    /// left.
    #[inline]
    pub(crate) fn should_start(&self, remaining: usize) -> bool {
        remaining <= self.margin.load(Ordering::Relaxed)
    }

    /// After a cycle ended: the next one starts early enough for the
    /// mutators to allocate what they took during the last cycle of the
    /// next one's kind, and half again (this cycle's figure when none of
    /// that kind has run yet), and never later than `floor`.
    pub(crate) fn cycle_ended(&self, end: CycleEnd) {
        self.during[slot(end.ran)].store(end.allocated, Ordering::Relaxed);
        let last = match self.during[slot(end.next)].load(Ordering::Relaxed) {
            NONE_YET => end.allocated,
            bytes => bytes,
        };
        let wanted = usize::try_from(last)
            .unwrap_or(usize::MAX)
            .saturating_mul(3)
            / 2;
        self.margin.store(wanted.max(end.floor), Ordering::Relaxed);
    }

    /// What was taken during the last cycle of `kind`, if one ran.
    pub(crate) fn taken_during(&self, kind: CollectionKind) -> Option<u64> {
        match self.during[slot(kind)].load(Ordering::Relaxed) {
            NONE_YET => None,
            bytes => Some(bytes),
        }
    }

    /// The margin now.
    #[cfg(test)]
    pub(crate) fn margin(&self) -> usize {
        self.margin.load(Ordering::Relaxed)
    }
}

fn slot(kind: CollectionKind) -> usize {
    match kind {
        CollectionKind::Young => 0,
        CollectionKind::Full => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn end(ran: CollectionKind, allocated_mib: u64, next: CollectionKind) -> CycleEnd {
        CycleEnd {
            ran,
            allocated: allocated_mib << 20,
            next,
            floor: 4 * MIB,
        }
    }

    #[test]
    fn a_full_cycle_after_young_ones_starts_with_the_last_full_cycles_margin() {
        use CollectionKind::{Full, Young};
        let p = Pacing::new(64 * MIB);
        assert!(p.should_start(64 * MIB));
        assert!(!p.should_start(64 * MIB + 1));
        // No full cycle yet: the young one's figure stands in.
        p.cycle_ended(end(Young, 8, Full));
        assert_eq!(p.margin(), 12 * MIB);
        // A full cycle during which the mutators took 40 MiB, then young
        // cycles of 8 MiB each.
        p.cycle_ended(end(Full, 40, Young));
        assert_eq!(p.margin(), 12 * MIB);
        p.cycle_ended(end(Young, 8, Young));
        assert_eq!(p.margin(), 12 * MIB);
        // The next one is full: it needs the full cycle's 40 MiB and half
        // again, not the young one's.
        p.cycle_ended(end(Young, 8, Full));
        assert_eq!(p.margin(), 60 * MIB);
        assert!(p.should_start(60 * MIB));
        assert!(!p.should_start(60 * MIB + 1));
    }

    #[test]
    fn the_margin_never_falls_below_the_floor() {
        use CollectionKind::Young;
        let p = Pacing::new(64 * MIB);
        p.cycle_ended(end(Young, 0, Young));
        assert_eq!(p.margin(), 4 * MIB);
        p.cycle_ended(end(Young, u64::MAX >> 1, Young));
        assert!(p.margin() >= 4 * MIB);
    }
}
