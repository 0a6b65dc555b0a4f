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

    #[test]
    fn after_a_failure_every_collection_is_full_until_one_succeeds() {
        let p = GenerationalPolicy::default();
        p.failed();
        assert_eq!(p.next_kind(Some(Young)), Full);
        p.collected(Full, 10, 100);
        assert_eq!(p.next_kind(Some(Young)), Young);
    }
}
