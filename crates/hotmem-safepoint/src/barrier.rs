//! The wait barrier: threads stopped at a safepoint sleep on one futex word
//! that holds the id of the safepoint they stop for, and one wake-all
//! releases them together.
//!
//! `wait(id)` sleeps only while the barrier is armed with exactly `id`, so a
//! thread that arrives late for a safepoint that already ended (or that was
//! woken by an earlier one) never sleeps on the wrong one.

use crate::ids::SafepointId;
use crate::sync::{CachePadded, FutexWord, Ordering};

/// The barrier every stopped thread of the wait-barrier strategy sleeps on.
#[derive(Debug)]
pub(crate) struct WaitBarrier {
    tag: CachePadded<FutexWord>,
}

impl WaitBarrier {
    pub(crate) fn new() -> Self {
        WaitBarrier {
            tag: CachePadded::new(FutexWord::new(0)),
        }
    }

    /// Arm for `id`. Done before any poll word is armed, so every thread
    /// that sees an armed poll finds an armed barrier.
    pub(crate) fn arm(&self, id: SafepointId) {
        let old = self.tag.word().swap(id.barrier_tag(), Ordering::SeqCst);
        debug_assert_eq!(old, 0, "barrier armed twice");
    }

    /// Disarm and wake every sleeper with one `FUTEX_WAKE`.
    pub(crate) fn disarm_and_wake(&self) {
        self.tag.word().store(0, Ordering::SeqCst);
        self.tag.wake_all();
    }

    /// Sleep until the barrier is no longer armed for `id`.
    pub(crate) fn wait(&self, id: SafepointId) {
        let tag = id.barrier_tag();
        while self.tag.word().load(Ordering::Acquire) == tag {
            self.tag.wait(tag);
        }
    }
}
