//! The wait barrier: threads stopped at a safepoint sleep on one futex word
//! that holds the id of the safepoint they stop for, and the end of the
//! safepoint releases them with a relayed wake-up.
//!
//! `wait(id)` sleeps only while the barrier is armed with exactly `id`, so a
//! thread that arrives late for a safepoint that already ended (or that was
//! woken by an earlier one) never sleeps on the wrong one.
//!
//! # Spinning first
//! A stopped thread spins and yields briefly before it sleeps (the schedule
//! of `parking_lot`'s `SpinWait`, the one its locks use), so a short
//! safepoint ends before most threads are asleep, and they resume without
//! a wake-up.
//!
//! # The relayed wake-up
//! Waking every sleeper from the coordinator puts them all on the run queue
//! at once; with more threads than cores they preempt the coordinator inside
//! its wake-up call, and `end()` returns only after a round of their time
//! slices (20-28 ms with 16 threads on 2 cores). So the coordinator wakes
//! nobody if a stopped thread is still awake (spinning), and otherwise one
//! sleeper ([`WaitBarrier::wake_first`]); the first thread out of the
//! barrier wakes all the others ([`WaitBarrier::wait`] takes the relay).
//! HotSpot's generic wait barrier has woken threads help with the wake-up
//! for the same reason.
//!
//! Why no sleeper is left behind: the relay flag is set *after* the tag is
//! cleared, so whoever takes it wakes everyone after the clear; a thread
//! asleep at that moment is woken by that wake-all, and one that has not
//! slept yet finds the tag changed and does not sleep. Someone takes the
//! relay: the coordinator clears the tag, then reads `awake`; a spinning
//! thread counts itself out of `awake` before its last look at the tag
//! (the futex compare), so either the coordinator sees it awake and that
//! thread, now bound to see the cleared tag, leaves and relays; or the
//! coordinator sees nobody awake and wakes one sleeper, which relays (if
//! there is no sleeper, nobody needs waking).

use crate::backoff;
use crate::ids::SafepointId;
use crate::sync::{AtomicU32, CachePadded, FutexWord, Ordering};

/// The barrier every stopped thread of the wait-barrier strategy sleeps on.
#[derive(Debug)]
pub(crate) struct WaitBarrier {
    tag: CachePadded<FutexWord>,
    /// Set after a disarm until one thread has woken every sleeper.
    relay: CachePadded<AtomicU32>,
    /// Stopped threads that are spinning, not asleep.
    awake: CachePadded<AtomicU32>,
}

/// Whether the coordinator has to wake a sleeper after a disarm.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum Wake {
    /// A stopped thread is still awake: it relays the wake-up.
    Relayed,
    /// Every stopped thread may be asleep: wake one.
    One,
}

impl WaitBarrier {
    pub(crate) fn new() -> Self {
        WaitBarrier {
            tag: CachePadded::new(FutexWord::new(0)),
            relay: CachePadded::new(AtomicU32::new(0)),
            awake: CachePadded::new(AtomicU32::new(0)),
        }
    }

    /// Arm for `id`. Done before any poll word is armed, so every thread
    /// that sees an armed poll finds an armed barrier.
    pub(crate) fn arm(&self, id: SafepointId) {
        let old = self.tag.word().swap(id.barrier_tag(), Ordering::SeqCst);
        debug_assert_eq!(old, 0, "barrier armed twice");
    }

    /// Disarm: no thread sleeps for this safepoint any more, and the
    /// sleepers may be woken. Says whether [`WaitBarrier::wake_first`] has
    /// to follow.
    pub(crate) fn disarm(&self) -> Wake {
        self.tag.word().store(0, Ordering::SeqCst);
        // After the clear: whoever takes the relay wakes the sleepers after
        // it, so none of them can go back to sleep on this safepoint.
        self.relay.store(1, Ordering::SeqCst);
        // Clear, then read `awake`: against the waiter's count-out, then
        // futex compare of the tag.
        if self.awake.load(Ordering::SeqCst) > 0 {
            Wake::Relayed
        } else {
            Wake::One
        }
    }

    /// Wake one sleeper, which relays the wake-up to all the others. The
    /// coordinator's last act in `end()`, and only when nobody stopped is
    /// awake to relay: one thread made runnable is less likely to preempt
    /// the caller than all of them.
    pub(crate) fn wake_first(&self) {
        self.tag.wake_one();
    }

    /// Spin, then sleep, until the barrier is no longer armed for `id`;
    /// then, if the relay is still pending, wake every other sleeper.
    pub(crate) fn wait(&self, id: SafepointId) {
        let tag = id.barrier_tag();
        self.awake.fetch_add(1, Ordering::SeqCst);
        // `parking_lot`'s `SpinWait` schedule, the one its locks use before
        // they park: three rounds of pauses, then seven yields. A yield
        // keeps the thread runnable, so on a loaded machine it resumes when
        // it next gets the CPU instead of waiting for a wake-up and then
        // for the CPU.
        let word = self.tag.word();
        let disarmed = backoff::spin_then_yield(3, 7, || word.load(Ordering::Acquire) != tag);
        // Counted out before the last look at the tag (the futex compare
        // below): see the module docs.
        self.awake.fetch_sub(1, Ordering::SeqCst);
        if !disarmed {
            while self.tag.word().load(Ordering::SeqCst) == tag {
                self.tag.wait(tag);
            }
        }
        self.relay_wake();
    }

    /// Take the relay, if pending, and wake every sleeper.
    fn relay_wake(&self) {
        if self.relay.swap(0, Ordering::AcqRel) != 0 {
            self.tag.wake_all();
        }
    }
}
