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
//! generation reaches the target ([`GenerationalPolicy::look_ahead`]): one
//! young cycle before the room left would be too small for a full cycle
//! to run without stalling the mutators. Young cycles free only young
//! pages, so as the old generation fills with garbage each leaves the
//! mutators less room: waiting for the old generation to reach the target
//! ran young cycles back to back, then a full cycle that began with too
//! little room for what the mutators allocate while it marks.
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The choice between young and full collections, carried from one
/// collection to the next.
pub(crate) struct GenerationalPolicy {
    /// The next automatic collection is full.
    full_next: AtomicBool,
    /// A collection failed after taking the remembered slots: young pages
    /// may be left that old objects refer to unseen. Every collection is
    /// full until one succeeds.
    slots_lost: AtomicBool,
    /// Bytes of old pages the last concurrent cycle left
    /// ([`NONE_YET`] before the first), for [`GenerationalPolicy::look_ahead`].
    last_old: AtomicUsize,
    /// A concurrent full cycle has run: what one takes is measured.
    full_ran: AtomicBool,
}

/// No concurrent cycle has ended yet.
const NONE_YET: usize = usize::MAX;

impl Default for GenerationalPolicy {
    fn default() -> Self {
        GenerationalPolicy {
            full_next: AtomicBool::new(false),
            slots_lost: AtomicBool::new(false),
            last_old: AtomicUsize::new(NONE_YET),
            full_ran: AtomicBool::new(false),
        }
    }
}

/// What a concurrent cycle left, for [`GenerationalPolicy::look_ahead`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CycleLeft {
    /// Bytes of old pages in use (those the mutators took while the
    /// cycle ran are young).
    pub(crate) old: usize,
    /// The heap's target (the sizing policy's).
    pub(crate) target: usize,
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
    /// [`GenerationalPolicy::collected`]): asks for a full cycle next when
    /// the room left after the next young cycle, the old generation
    /// having grown by what this one added, would be less than a full
    /// cycle takes while it runs, and half again (the pacing's margin). A
    /// full cycle that starts with less room stalls the mutators. Before
    /// the first full cycle, only while the room left now holds it.
    pub(crate) fn look_ahead(&self, kind: CollectionKind, left: CycleLeft) {
        let last = self.last_old.swap(left.old, Ordering::Relaxed);
        if kind == CollectionKind::Full {
            self.full_ran.store(true, Ordering::Relaxed);
            return;
        }
        if last == NONE_YET {
            return;
        }
        let growth = left.old.saturating_sub(last);
        let full_needs = left.full_takes.saturating_mul(3) / 2;
        let with_full = left.old.saturating_add(full_needs);
        // Before the first full cycle, what one takes is a young cycle's
        // figure, a guess: the rule then asks only while a full cycle
        // still fits. Without that, a long-lived structure built in one
        // young cycle (a one-off growth, with that long cycle's
        // allocation for the guess) asked for a full cycle that began
        // with too little room and stalled the mutators. After one, a
        // full cycle that no longer fits still runs now: it stalls, but a
        // young cycle first would free little and leave it less room.
        let measured = self.full_ran.load(Ordering::Relaxed);
        if (measured || with_full < left.target) && with_full.saturating_add(growth) >= left.target
        {
            self.full_next.store(true, Ordering::Relaxed);
        }
    }
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

    /// A cycle that left `old_mib` MiB old, under a 256 MiB target, with
    /// full cycles that take 30 MiB while they run: they need 45 MiB of
    /// room with the pacing's half again.
    fn left(old_mib: usize) -> CycleLeft {
        CycleLeft {
            old: old_mib * MIB,
            target: 256 * MIB,
            full_takes: 30 * MIB,
        }
    }

    #[test]
    fn a_full_cycle_starts_while_the_room_still_holds_what_it_takes() {
        let p = GenerationalPolicy::default();
        // The first cycle: no growth to go by.
        p.look_ahead(Young, left(200));
        assert_eq!(p.next_kind(None), Young);
        // A full cycle's old generation is the next one's baseline.
        p.look_ahead(Full, left(100));
        // The old generation grows 10 MiB a young cycle: after the next
        // one, 130 + 10 + 45 is still under the target.
        p.look_ahead(Young, left(120));
        p.look_ahead(Young, left(130));
        assert_eq!(p.next_kind(None), Young);
        // 42 MiB a young cycle: after the next one, 172 + 42 + 45 would
        // leave the full cycle 3 MiB short of what it takes.
        p.look_ahead(Young, left(172));
        assert_eq!(p.next_kind(None), Full);
        // The full cycle clears the ask.
        p.collected(Full, 90 * MIB, 256 * MIB);
        p.look_ahead(Full, left(90));
        assert_eq!(p.next_kind(None), Young);
        // Once a full cycle has run, one that no longer fits still runs
        // at once: 220 + 45 is over the target already.
        p.look_ahead(Young, left(220));
        assert_eq!(p.next_kind(None), Full);
    }

    #[test]
    fn before_the_first_full_cycle_one_is_asked_for_only_while_it_fits() {
        let p = GenerationalPolicy::default();
        // 130 MiB in one young cycle (a long-lived structure built): 220
        // + 45 leaves a full cycle too little room already, on a guess of
        // what it takes. `collected` decides that case.
        p.look_ahead(Young, left(90));
        p.look_ahead(Young, left(220));
        assert_eq!(p.next_kind(None), Young);
        // While it fits, the growth asks: 180 + 45 + 40.
        p.look_ahead(Young, left(140));
        p.look_ahead(Young, left(180));
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
