//! Young or full: which kind a generational collector's next collection
//! is, with [`Generations::YoungAndOld`](crate::Generations) (the
//! stop-the-world collector's collections and the concurrent collector's
//! cycles alike).
//!
//! Most collections are young: they mark from the roots and from the
//! slots the store barrier remembered, trace only through young pages
//! (those allocated since the last collection), and free or evacuate only
//! young pages. Old objects are taken as live without being visited, which
//! is what makes a young collection cheap when most of the heap is
//! long-lived. A full collection marks everything; it runs when asked for,
//! when the old generation reaches the heap's target (see
//! [`sizing`](crate::gc::core::sizing); a concurrent collector counts what
//! a full cycle allocates while it runs), and after a young collection
//! that did not make room (a request that holds until a full collection
//! ends, since a concurrent collector may have started the next cycle by
//! the time an allocation finds no room).
//!
//! A concurrent collector also starts a full cycle before the old
//! generation reaches the target ([`GenerationalPolicy::weigh`]): one
//! young cycle before the room left would be too small for a full cycle
//! to run without stalling the mutators, and sooner when the old
//! generation's garbage makes young cycles dear. Young cycles free
//! only young pages, so each leaves the mutators the room that the old
//! generation's garbage has not taken, and they come faster as it grows.
//! A full cycle gives that garbage back. It runs once what it costs (the
//! last full cycle's length) is less than the young cycles' time it saves
//! over the next heap's worth of allocation. Generational ZGC weighs its
//! major collections against the young ones the same way; the estimate of
//! the garbage is also its (the old generation less what the last full
//! cycle left).
//!
//! The invariant both kinds end with: no young page is left of those the
//! collection found at its start. A young page with live objects is either
//! evacuated (its objects copied to old pages) or promoted where it is. So
//! after a stop-the-world collection the remembered set is empty, and
//! between collections an old object can refer to a young one only through
//! a store made since, which the store barrier records (see
//! [`RememberedSet`](crate::gc::barriers::RememberedSet)). A concurrent
//! cycle promotes the pages it found at once, in Pause Mark Start, for the
//! store barrier: what the mutators store into them during the cycle is
//! remembered for the next one; the pages they allocate meanwhile stay
//! young.

use crate::gc::core::generations::CollectionKind;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The choice between young and full collections, carried from one
/// collection to the next.
#[derive(Default)]
pub(crate) struct GenerationalPolicy {
    /// The next automatic collection is full.
    full_next: AtomicBool,
    /// A collection failed after taking the remembered slots: young pages
    /// may be left that old objects refer to unseen. Every collection is
    /// full until one succeeds.
    slots_lost: AtomicBool,
    /// What the last cycles cost and left, for [`GenerationalPolicy::weigh`].
    costs: Mutex<Costs>,
}

/// What [`GenerationalPolicy::weigh`] keeps from one cycle to the next.
#[derive(Clone, Copy, Debug, Default)]
struct Costs {
    /// Bytes of old pages the last full cycle left: its live objects.
    old_live: Option<usize>,
    /// The last young cycle's length.
    young_ns: Option<u64>,
    /// The last full cycle's length.
    full_ns: Option<u64>,
    /// Bytes of old pages the last cycle left.
    last_old: Option<usize>,
}

/// What a concurrent cycle left, for [`GenerationalPolicy::weigh`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CycleLeft {
    /// Bytes of old pages in use (those the mutators took while the
    /// cycle ran are young).
    pub(crate) old: usize,
    /// Bytes the mutators may allocate before the heap reaches the
    /// target.
    pub(crate) room: usize,
    /// The heap's target: the horizon of the comparison.
    pub(crate) target: usize,
    /// The cycle's length.
    pub(crate) length_ns: u64,
    /// Bytes the mutators take while a full cycle runs (the last full
    /// cycle's figure, or this cycle's before the first).
    pub(crate) full_takes: usize,
}

impl GenerationalPolicy {
    /// The kind of the next collection: `wanted` if given (the policy's
    /// choice if not), but full whenever remembered slots were lost.
    pub(crate) fn next_kind(&self, wanted: Option<CollectionKind>) -> CollectionKind {
        if self.slots_lost.load(Ordering::Relaxed) {
            return CollectionKind::Full;
        }
        wanted.unwrap_or(if self.full_next.load(Ordering::Relaxed) {
            CollectionKind::Full
        } else {
            CollectionKind::Young
        })
    }

    /// Asks for the next automatic collection to be full: a young one did
    /// not make room.
    pub(crate) fn ask_full(&self) {
        self.full_next.store(true, Ordering::Relaxed);
    }

    /// A collection failed: its remembered slots are gone, so only a full
    /// collection may run until one succeeds.
    pub(crate) fn failed(&self) {
        self.slots_lost.store(true, Ordering::Relaxed);
    }

    /// After a successful collection of `kind` that left `old` bytes in
    /// old pages (every page in use after a stop-the-world collection;
    /// all but those the mutators took meanwhile after a concurrent
    /// cycle): the next collection is full if a young one left at least
    /// `full_at` bytes old (the sizing policy's target).
    ///
    /// A young collection never clears the request for a full one: an
    /// allocation that a concurrent cycle made no room for asks while the
    /// next cycle may already run, and the ask holds until a full one
    /// ends.
    pub(crate) fn collected(&self, kind: CollectionKind, old: usize, full_at: usize) {
        match kind {
            CollectionKind::Full => {
                self.full_next.store(false, Ordering::Relaxed);
                self.slots_lost.store(false, Ordering::Relaxed);
            }
            CollectionKind::Young if old >= full_at => {
                self.full_next.store(true, Ordering::Relaxed);
            }
            CollectionKind::Young => {}
        }
    }

    /// After a successful concurrent cycle of `kind` (and its
    /// [`GenerationalPolicy::collected`]): asks for a full cycle next
    /// - when the young cycle after this one would leave less room than a
    ///   full cycle takes while it runs, and half again (the pacing's
    ///   margin), the old generation having grown by what this one added:
    ///   a full cycle that starts with less room stalls the mutators;
    /// - or when one pays, by [`full_pays`], from the old generation's
    ///   garbage (`left.old` less what the last full cycle left) and the
    ///   last cycles' lengths. That needs a full cycle and a young one to
    ///   have run (no estimate of either before).
    pub(crate) fn weigh(&self, kind: CollectionKind, left: CycleLeft) {
        let mut costs = self.costs.lock();
        let last_old = costs.last_old.replace(left.old);
        match kind {
            CollectionKind::Full => {
                costs.old_live = Some(left.old);
                costs.full_ns = Some(left.length_ns);
            }
            CollectionKind::Young => {
                costs.young_ns = Some(left.length_ns);
                // The next young cycle will leave the old generation
                // larger by about what this one added. If a full cycle
                // could not run in the room left then (with the pacing's
                // half again), it runs now.
                let growth = last_old.map_or(0, |last| left.old.saturating_sub(last));
                let full_needs = left.full_takes.saturating_mul(3) / 2;
                if left.old.saturating_add(growth).saturating_add(full_needs) >= left.target {
                    self.full_next.store(true, Ordering::Relaxed);
                    return;
                }
                let Costs {
                    old_live: Some(live),
                    young_ns: Some(young_ns),
                    full_ns: Some(full_ns),
                    ..
                } = *costs
                else {
                    return;
                };
                let garbage = left.old.saturating_sub(live);
                if full_pays(young_ns, full_ns, garbage, left.room, left.target) {
                    self.full_next.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Whether a full cycle of `full_ns` now costs less than the young cycles
/// it saves over the next `horizon` bytes of allocation, when the old
/// generation holds `garbage` bytes that only a full cycle frees and the
/// mutators have `room` bytes left.
///
/// Each young cycle (of `young_ns`) lets the mutators allocate about the
/// room it leaves: `room` without a full cycle, `room + garbage` after
/// one. Over `horizon` bytes the young cycles take `horizon / room` times
/// `young_ns` without, `horizon / (room + garbage)` times with: the full
/// cycle pays when the difference is more than its own length.
fn full_pays(young_ns: u64, full_ns: u64, garbage: usize, room: usize, horizon: usize) -> bool {
    if garbage == 0 {
        return false;
    }
    // Bytes as f64: the figures are estimates, and a heap's size fits
    // the mantissa to the byte.
    let (room, garbage) = (room.max(1) as f64, garbage as f64);
    let saved = horizon as f64 * young_ns as f64 * garbage / (room * (room + garbage));
    saved > full_ns as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use CollectionKind::{Full, Young};

    #[test]
    fn a_full_collection_asked_for_during_a_young_one_still_runs_next() {
        let p = GenerationalPolicy::default();
        assert_eq!(p.next_kind(None), Young);
        // Asked for while a young collection runs, which then ends with
        // the old generation below the mark.
        p.ask_full();
        p.collected(Young, 10, 100);
        assert_eq!(p.next_kind(None), Full);
        // An explicit young one does not take the ask away either.
        assert_eq!(p.next_kind(Some(Young)), Young);
        p.collected(Young, 10, 100);
        assert_eq!(p.next_kind(None), Full);
        p.collected(Full, 10, 100);
        assert_eq!(p.next_kind(None), Young);
        // The old generation's growth asks for one too.
        p.collected(Young, 100, 100);
        assert_eq!(p.next_kind(None), Full);
    }

    const MIB: usize = 1 << 20;
    const MS: u64 = 1_000_000;

    fn left(old_mib: usize, room_mib: usize, length_ms: u64) -> CycleLeft {
        CycleLeft {
            old: old_mib * MIB,
            room: room_mib * MIB,
            target: 256 * MIB,
            length_ns: length_ms * MS,
            full_takes: 0,
        }
    }

    #[test]
    fn a_full_cycle_pays_when_the_old_garbage_leaves_young_cycles_little_room() {
        // The demo's figures: 2.5 ms young cycles, 5 ms full ones, a
        // 256 MiB target, 76 MiB left by the last full cycle.
        // 24 MiB of garbage and 140 MiB of room: the young cycles lose
        // little (256 * 2.5 * 24 / (140 * 164) = 0.7 ms).
        assert!(!full_pays(
            5 * MS / 2,
            5 * MS,
            24 * MIB,
            140 * MIB,
            256 * MIB
        ));
        // 104 MiB of garbage and 56 MiB of room: 7.4 ms.
        assert!(full_pays(
            5 * MS / 2,
            5 * MS,
            104 * MIB,
            56 * MIB,
            256 * MIB
        ));
        // No garbage: never, however little room.
        assert!(!full_pays(5 * MS / 2, 5 * MS, 0, 0, 256 * MIB));
        // A full cycle ten times dearer waits for more garbage.
        assert!(!full_pays(
            5 * MS / 2,
            50 * MS,
            104 * MIB,
            56 * MIB,
            256 * MIB
        ));
    }

    #[test]
    fn weighing_needs_a_full_and_a_young_cycle_and_counts_garbage_from_the_full_ones_live() {
        let p = GenerationalPolicy::default();
        // Young cycles alone: no estimate of the garbage.
        p.weigh(Young, left(200, 20, 2));
        p.weigh(Young, left(205, 10, 2));
        assert_eq!(p.next_kind(None), Young);
        // A full cycle of 5 ms leaves 76 MiB old.
        p.weigh(Full, left(76, 160, 5));
        assert_eq!(p.next_kind(None), Young);
        // Young cycles of 2 ms: 60 MiB of garbage with 100 MiB of room
        // does not pay (256 * 2 * 60 / (100 * 160) = 1.9 ms)...
        p.weigh(Young, left(130, 100, 2));
        p.weigh(Young, left(136, 100, 2));
        assert_eq!(p.next_kind(None), Young);
        // ... 114 MiB with 40 MiB does (256 * 2 * 114 / (40 * 154) =
        // 9.5 ms), while the growth (190 + 54) is still under the target.
        p.weigh(Young, left(190, 40, 2));
        assert_eq!(p.next_kind(None), Full);
        // The full cycle that runs clears the ask, and its live old
        // generation is the new baseline.
        p.collected(Full, 90, 256);
        p.weigh(Full, left(150, 80, 5));
        assert_eq!(p.next_kind(None), Young);
        // 20 MiB of garbage since, with 40 MiB of room: 4.3 ms.
        p.weigh(Young, left(170, 40, 2));
        assert_eq!(p.next_kind(None), Young);
    }

    #[test]
    fn a_full_cycle_starts_while_the_room_still_holds_what_it_takes() {
        let p = GenerationalPolicy::default();
        // Full cycles take 30 MiB while they run: they need 45 MiB of
        // room with the pacing's half again.
        let young = |old_mib| CycleLeft {
            full_takes: 30 * MIB,
            ..left(old_mib, 256 - old_mib, 2)
        };
        // The old generation grows 10 MiB a young cycle: after the next
        // one, 130 + 10 + 45 is still under the 256 MiB target.
        p.weigh(Young, young(120));
        p.weigh(Young, young(130));
        assert_eq!(p.next_kind(None), Young);
        // 42 MiB a young cycle: after the next one, 172 + 42 + 45 would
        // leave the full cycle 3 MiB short. No full cycle has run, so
        // this is not the cost rule.
        p.weigh(Young, young(172));
        assert_eq!(p.next_kind(None), Full);
    }

    #[test]
    fn after_a_failure_every_collection_is_full_until_one_succeeds() {
        let p = GenerationalPolicy::default();
        p.failed();
        assert_eq!(p.next_kind(Some(Young)), Full);
        p.collected(Full, 10, 100);
        assert_eq!(p.next_kind(Some(Young)), Young);
    }
}
