//! The phase-end handshake: the count of a phase's tickets still alive.
//!
//! A ticket counts up when created and down when dropped
//! (`pool::handoff::PhaseTicket`); a worker drops its ticket after its run
//! has restored its binding and written its report, and touches nothing of
//! the phase after, so that once the coordinator sees zero every worker is
//! unbound again and the borrowed phase data may go away. The loom models in
//! `tests/loom_phase_end.rs` and `tests/loom_handoff.rs` check it, and check
//! that the wrong orders fail.

use crate::sync::{Condvar, Mutex};

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

    /// One more participant.
    ///
    /// # Panics
    /// If the count would overflow `usize` (it counts live tickets).
    pub(crate) fn count_up(&self) {
        let mut n = self.remaining.lock();
        *n = n.checked_add(1).expect("latch count overflow");
    }

    /// One participant is done. The lock orders everything the caller did
    /// before (its report, its restored binding) before the waiter's return.
    ///
    /// # Panics
    /// If counted down more often than the count it was made with.
    pub(crate) fn count_down(&self) {
        let mut n = self.remaining.lock();
        *n = n.checked_sub(1).expect("latch counted down below zero");
        if *n == 0 {
            self.zero.notify_all();
        }
    }

    /// Blocks until every participant has counted down.
    pub(crate) fn wait(&self) {
        let mut n = self.remaining.lock();
        while *n != 0 {
            self.zero.wait(&mut n);
        }
    }
}
