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
//! when what survives reaches the heap's target (see
//! [`sizing`](crate::gc::core::sizing)), and after a young collection that
//! did not make room.
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

    /// After a successful collection of `kind` that left `used` bytes in
    /// use: the next collection is full if a young one left at least
    /// `full_at` bytes in use (the sizing policy's target).
    pub(crate) fn collected(&self, kind: CollectionKind, used: usize, full_at: usize) {
        let full = kind == CollectionKind::Young && used >= full_at;
        self.full_next.store(full, Ordering::Relaxed);
        if kind == CollectionKind::Full {
            self.slots_lost.store(false, Ordering::Relaxed);
        }
    }
}
