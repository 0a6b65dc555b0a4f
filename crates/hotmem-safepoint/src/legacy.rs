//! The baseline: how safepoints synchronized before JDK-8203469.
//!
//! The coordinator walks the thread list again and again until every thread
//! is safe: it spins between the first walks, then yields, then sleeps 1 ms
//! at a time, so once it sleeps the time to safepoint is rounded up to the
//! next millisecond. Stopped threads wait on one shared mutex + condition
//! variable; the end of the safepoint wakes them all, and each one then has
//! to take that mutex in turn before it runs again (HotSpot's threads went
//! through `Threads_lock`), so resumption is serialized.
//!
//! It shares the poll word, states, registry and statistics with the new
//! strategy; only the waiting and waking differ. Select it with
//! [`Strategy::Legacy`](crate::Strategy::Legacy).

use crate::ids::SafepointId;
use crate::registry::Slot;
use crate::sync::{self, Arc, Condvar, Mutex};
use std::time::Duration;

/// Walks of the thread list with a spin between them.
pub(crate) const SPIN_ROUNDS: u32 = 64;
/// `pause` instructions between two walks in the spin phase.
pub(crate) const PAUSES_PER_SPIN: u32 = 64;
/// Walks with a `sched_yield` between them, after the spin phase.
pub(crate) const YIELD_ROUNDS: u32 = 64;
/// The sleep between walks once spinning and yielding gave up.
pub(crate) const SLEEP: Duration = Duration::from_millis(1);

/// The shared mutex stopped threads wait on: it holds the id of the
/// safepoint in progress, 0 when none.
#[derive(Debug)]
pub(crate) struct LegacyGate {
    closed_for: Mutex<u64>,
    opened: Condvar,
}

impl LegacyGate {
    pub(crate) fn new() -> Self {
        LegacyGate {
            closed_for: Mutex::new(0),
            opened: Condvar::new(),
        }
    }

    /// Close the gate for `id` before any poll word is armed.
    pub(crate) fn close(&self, id: SafepointId) {
        *self.closed_for.lock() = id.get();
    }

    /// Open the gate; every waiter wakes and re-takes the mutex in turn.
    pub(crate) fn open(&self) {
        let mut closed = self.closed_for.lock();
        *closed = 0;
        self.opened.notify_all();
    }

    /// Wait until the gate is no longer closed for `id`.
    pub(crate) fn wait(&self, id: SafepointId) {
        let mut closed = self.closed_for.lock();
        while *closed == id.get() {
            self.opened.wait(&mut closed);
        }
    }
}

/// The legacy coordinator's wait: walk `threads` until all are safe,
/// spinning, then yielding, then sleeping between walks. Returns how many
/// walks it took.
pub(crate) fn wait_until_safe(threads: &[Arc<Slot>], seen_safe: &mut Vec<bool>) -> u32 {
    seen_safe.clear();
    seen_safe.resize(threads.len(), false);
    let mut remaining = threads.len();
    let mut round = 0u32;
    loop {
        for (slot, seen) in threads.iter().zip(seen_safe.iter_mut()) {
            // Once safe under an armed poll a thread stays safe (every way
            // out re-checks the poll), so each thread is counted once.
            if !*seen && slot.state.snapshot().state.is_safe() {
                *seen = true;
                remaining -= 1;
            }
        }
        round += 1;
        if remaining == 0 {
            return round;
        }
        if round <= SPIN_ROUNDS {
            for _ in 0..PAUSES_PER_SPIN {
                sync::spin_hint();
            }
        } else if round <= SPIN_ROUNDS + YIELD_ROUNDS {
            sync::yield_now();
        } else {
            sync::sleep(SLEEP);
        }
    }
}
