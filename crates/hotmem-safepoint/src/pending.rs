//! The count of threads a safepoint still waits for, and the coordinator's
//! sleep on it.
//!
//! One futex word: the low 31 bits count the threads not yet safe plus the
//! coordinator's own token (so the count cannot reach zero while the
//! coordinator is still looking at the threads), and the top bit says that
//! the coordinator is asleep on the word, or about to be.
//!
//! The thread that takes the count to zero makes the wake-up system call
//! only if that bit is set. Most safepoints are reached while the
//! coordinator still spins or yields, and then the last thread in goes
//! straight to the wait barrier: on two cores that call cost the last
//! thread about a microsecond, the one the coordinator yielded its CPU to.
//!
//! Why no wake-up is lost: the bit and the count live in one word, so every
//! change to it is one read-modify-write in a single total order. The
//! coordinator sets the bit with a compare-exchange against the count it
//! saw, and sleeps only while the word still holds that count with the
//! bit. A decrement before the compare-exchange makes it fail (the
//! coordinator looks again); a decrement after it sees the bit, and the
//! last one wakes; a decrement between the compare-exchange and the sleep
//! changes the word, so the kernel does not put the coordinator to sleep.

use crate::backoff;
use crate::sync::{FutexWord, Ordering};

/// Set while the coordinator sleeps (or is about to) on the count.
const SLEEPING: u32 = 1 << 31;
/// The count of threads not yet safe, plus the coordinator's token.
const COUNT: u32 = SLEEPING - 1;

/// Threads a safepoint still waits for (see the module docs).
pub(crate) struct Pending {
    word: FutexWord,
}

impl Pending {
    /// The most threads one safepoint can count (the top bit is the flag).
    pub(crate) const MAX_THREADS: u32 = COUNT - 1;

    pub(crate) fn new() -> Self {
        Pending {
            word: FutexWord::new(0),
        }
    }

    /// A new safepoint waits for `threads` threads and the coordinator's
    /// token (`threads` is capped at [`Pending::MAX_THREADS`]; a registry
    /// never comes near it).
    pub(crate) fn open(&self, threads: u32) {
        let threads = threads.min(Self::MAX_THREADS);
        self.word.word().store(threads + 1, Ordering::SeqCst);
    }

    /// One thread (or the coordinator's token) is counted: true if it was
    /// the last. The last one wakes the coordinator if it sleeps.
    pub(crate) fn arrive(&self) -> bool {
        let old = self.word.word().fetch_sub(1, Ordering::AcqRel);
        debug_assert_ne!(old & COUNT, 0, "counted below zero");
        let last = old & COUNT == 1;
        if last && old & SLEEPING != 0 {
            self.word.wake_all();
        }
        last
    }

    /// Whether every thread is counted.
    #[inline]
    pub(crate) fn is_zero(&self) -> bool {
        self.word.word().load(Ordering::Acquire) & COUNT == 0
    }

    /// The coordinator, after giving up its token: wait until the count is
    /// zero. First `spins` rounds of pauses and `yields` yields, so a
    /// safepoint reached within microseconds costs no wake-up on either
    /// side; then it sleeps, flagged, on the word.
    pub(crate) fn wait_until_zero(&self, spins: u32, yields: u32) {
        if backoff::spin_then_yield(spins, yields, || self.is_zero()) {
            return;
        }
        let word = self.word.word();
        loop {
            let seen = word.load(Ordering::Acquire);
            if seen & COUNT == 0 {
                return;
            }
            if seen & SLEEPING == 0
                && word
                    .compare_exchange(seen, seen | SLEEPING, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                continue;
            }
            self.word.wait(seen | SLEEPING);
        }
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_last_arrival_is_the_one_that_reaches_zero() {
        let p = Pending::new();
        p.open(2);
        assert!(!p.arrive());
        assert!(!p.is_zero());
        assert!(!p.arrive());
        assert!(p.arrive());
        assert!(p.is_zero());
        // Returns at once when nothing is pending.
        p.wait_until_zero(0, 0);
    }

    #[test]
    fn a_sleeping_coordinator_is_woken_by_the_last_arrival() {
        for threads in [1u32, 4] {
            let p = Arc::new(Pending::new());
            p.open(threads);
            assert!(!p.arrive()); // the coordinator's token
            let arrivals: Vec<_> = (0..threads)
                .map(|_| {
                    let p = Arc::clone(&p);
                    std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        p.arrive()
                    })
                })
                .collect();
            // No spinning: the coordinator goes straight to sleep, flagged.
            p.wait_until_zero(0, 0);
            assert!(p.is_zero());
            let lasts = arrivals
                .into_iter()
                .map(|a| a.join().unwrap())
                .filter(|&last| last)
                .count();
            assert_eq!(lasts, 1);
        }
    }

    #[test]
    fn the_thread_count_is_capped_below_the_flag() {
        let p = Pending::new();
        p.open(u32::MAX);
        assert_eq!(
            p.word.word().load(Ordering::SeqCst),
            Pending::MAX_THREADS + 1
        );
        assert_eq!(p.word.word().load(Ordering::SeqCst) & SLEEPING, 0);
    }
}

/// Under loom: two threads count themselves in while the coordinator gives
/// up its token and waits (loom's `spin_then_yield` returns at once, so the
/// coordinator always takes the flagged sleep). In every interleaving the
/// coordinator returns (loom reports a lost wake-up as a deadlock), finds
/// the count at zero, and exactly one arrival was the last.
#[cfg(all(test, hotmem_loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn loom_pending_wakes_a_sleeping_coordinator() {
        loom::model(|| {
            let p = Arc::new(Pending::new());
            p.open(2);
            let arrivals: Vec<_> = (0..2)
                .map(|_| {
                    let p = Arc::clone(&p);
                    loom::thread::spawn(move || p.arrive())
                })
                .collect();
            let coordinator_last = p.arrive();
            if !coordinator_last {
                p.wait_until_zero(0, 0);
            }
            assert!(p.is_zero());
            let lasts = arrivals
                .into_iter()
                .map(|a| a.join().unwrap())
                .chain([coordinator_last])
                .filter(|&last| last)
                .count();
            assert_eq!(lasts, 1);
        });
    }
}
