//! The baseline: how safepoints synchronized before JDK-8203469 (JDK 11's
//! `SafepointSynchronize::begin`), with HotSpot's own constants.
//!
//! The coordinator walks the threads that are still running again and
//! again until every one is safe. After each walk it backs off by the
//! number of walks so far (HotSpot's `steps`): below
//! `SafepointSpinBeforeYield` (2000, on a multiprocessor) one `SpinPause`
//! (a single `pause` instruction on x86-64); below
//! `DeferThrSuspendLoopCount` (4000) a `sched_yield`; after that
//! `naked_short_sleep(1)`, a 1 ms sleep, so once it sleeps the time to
//! safepoint is rounded up to the next millisecond.
//!
//! Stopped threads sleep on one futex word that holds the id of the
//! safepoint; the end wakes them all with one `FUTEX_WAKE`. The resumption
//! is deliberately not serialized through a shared mutex (HotSpot's threads
//! re-took `Threads_lock` one after another): that made the baseline's
//! leaving phase run into the next safepoint (98 of 99 cut short at 16
//! threads on 2 cores), so its ratios measured the mutex rather than the
//! synchronization. Reaching is the part this baseline stands for.
//!
//! It shares the poll word, states, registry and statistics with the new
//! strategy; only the waiting and waking differ. Select it with
//! [`Strategy::Legacy`](crate::Strategy::Legacy).

use crate::ids::SafepointId;
use crate::registry::Slot;
use crate::sync::{Arc, FutexWord, Ordering, hint, thread};
use std::time::Duration;

/// HotSpot's `SafepointSpinBeforeYield`: walks followed by one spin pause.
pub(crate) const SPIN_BEFORE_YIELD: u32 = 2000;
/// HotSpot's `DeferThrSuspendLoopCount`: walks before the back-off sleeps.
pub(crate) const YIELD_BEFORE_SLEEP: u32 = 4000;
/// HotSpot's `naked_short_sleep(1)`.
pub(crate) const SLEEP: Duration = Duration::from_millis(1);

/// The futex word stopped threads sleep on: the barrier tag of the
/// safepoint in progress, 0 when none.
#[derive(Debug)]
pub(crate) struct LegacyGate {
    closed_for: FutexWord,
}

impl LegacyGate {
    pub(crate) fn new() -> Self {
        LegacyGate {
            closed_for: FutexWord::new(0),
        }
    }

    /// Close the gate for `id` before any poll word is armed.
    pub(crate) fn close(&self, id: SafepointId) {
        self.closed_for
            .word()
            .store(id.barrier_tag(), Ordering::SeqCst);
    }

    /// Open the gate: no thread sleeps for the safepoint any more. Then
    /// [`LegacyGate::wake`].
    pub(crate) fn open(&self) {
        self.closed_for.word().store(0, Ordering::SeqCst);
    }

    /// Wake every waiter with one system call.
    pub(crate) fn wake(&self) {
        self.closed_for.wake_all();
    }

    /// Wait until the gate is no longer closed for `id`.
    pub(crate) fn wait(&self, id: SafepointId) {
        let tag = id.barrier_tag();
        while self.closed_for.word().load(Ordering::Acquire) == tag {
            self.closed_for.wait(tag);
        }
    }
}

/// The legacy coordinator's wait: walk the still-running `threads` until
/// all are safe, backing off after each walk as HotSpot did. Returns how
/// many walks it took.
pub(crate) fn wait_until_safe(threads: &mut Vec<Arc<Slot>>, cpus: usize) -> u32 {
    let mut steps = 0u32;
    loop {
        // Once safe under an armed poll a thread stays safe (every way out
        // re-checks the poll): drop it from the walk.
        threads.retain(|slot| !slot.state.snapshot().state.is_safe());
        if threads.is_empty() {
            return steps + 1;
        }
        steps += 1;
        if cpus > 1 && steps < SPIN_BEFORE_YIELD {
            hint::spin_loop();
        } else if steps < YIELD_BEFORE_SLEEP {
            thread::yield_now();
        } else {
            thread::sleep(SLEEP);
        }
    }
}
