//! The phase-end handshake: each worker hands in its report, then counts the
//! latch down; the coordinator waits for zero, then takes the reports.
//!
//! The order is the whole point: a worker restores its binding and writes its
//! report *before* it counts down, and touches nothing of the phase after, so
//! that once the coordinator sees zero every worker is unbound again and the
//! borrowed phase data may go away. The loom model in
//! `tests/loom_phase_end.rs` checks it, and checks that the wrong order fails.

use crate::sync::{Condvar, Mutex, lock, wait};

/// Counts down from the number of workers in a phase.
pub(crate) struct Latch {
    remaining: Mutex<usize>,
    zero: Condvar,
}

impl Latch {
    pub(crate) fn new(count: usize) -> Self {
        Latch {
            remaining: Mutex::new(count),
            zero: Condvar::new(),
        }
    }

    /// One participant is done. The lock orders everything the caller did
    /// before (its report, its restored binding) before the waiter's return.
    ///
    /// # Panics
    /// If counted down more often than the count it was made with.
    pub(crate) fn count_down(&self) {
        let mut n = lock(&self.remaining);
        *n = n.checked_sub(1).expect("latch counted down below zero");
        if *n == 0 {
            self.zero.notify_all();
        }
    }

    /// Blocks until every participant has counted down.
    pub(crate) fn wait(&self) {
        let mut n = lock(&self.remaining);
        while *n != 0 {
            n = wait(&self.zero, n);
        }
    }
}

/// Writes `report` into the worker's slot, then counts the latch down: the
/// last thing a worker does in a phase.
pub(crate) fn hand_in<R>(slot: &Mutex<Option<R>>, report: R, latch: &Latch) {
    *lock(slot) = Some(report);
    latch.count_down();
}
