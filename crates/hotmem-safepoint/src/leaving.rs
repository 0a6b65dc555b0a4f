//! Tracking the threads that leave a safepoint.
//!
//! "Leaving" lasts from the wake-up until every thread that stopped in the
//! safepoint runs again. The coordinator does not wait for that (with more
//! busy threads than cores, the last one may not get a CPU for many
//! milliseconds, and the coordinator has better things to do); the last
//! thread to run again reports it instead.
//!
//! One tagged counter does it: the high 32 bits hold the safepoint's barrier
//! tag, the low 32 bits the number of threads that stopped in it and have
//! not run again. A thread joins and leaves only while the tag is its
//! safepoint's, so a thread that runs again only after the next safepoint
//! began (and re-tagged the counter) cannot disturb the next one's count.
//! The decrement that reaches zero also clears the tag (closes the count),
//! so exactly one party finishes each safepoint's record.

use crate::backoff;
use crate::ids::SafepointId;
use crate::sync::{AtomicU64, CachePadded, FutexWord, Ordering};

const COUNT: u64 = 0xffff_ffff;

fn tagged(id: SafepointId, count: u64) -> u64 {
    (u64::from(id.barrier_tag()) << 32) | count
}

fn tag_of(word: u64) -> u32 {
    (word >> 32) as u32
}

/// What a stopped thread's departure meant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Departure {
    /// Others are still stopped, or the count was closed already.
    NotLast,
    /// This thread was the last one of its safepoint to run again.
    Last,
}

/// The count of threads still to leave the current (or last) safepoint.
#[derive(Debug)]
pub(crate) struct LeaveTracker {
    word: CachePadded<AtomicU64>,
    /// The tag of the newest safepoint whose record is complete.
    done: CachePadded<FutexWord>,
    /// CPUs available to the process: a waiter yields only while the
    /// threads it waits for can each have one besides it.
    cpus: usize,
}

impl LeaveTracker {
    pub(crate) fn new(cpus: usize) -> Self {
        LeaveTracker {
            word: CachePadded::new(AtomicU64::new(0)),
            done: CachePadded::new(FutexWord::new(0)),
            cpus,
        }
    }

    /// Start counting for `id` (before any poll word is armed).
    pub(crate) fn open(&self, id: SafepointId) {
        self.word.store(tagged(id, 0), Ordering::SeqCst);
    }

    fn update(&self, id: SafepointId, f: impl Fn(u64) -> Option<u64>) -> Option<u64> {
        let tag = id.barrier_tag();
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                if tag_of(w) == tag { f(w & COUNT) } else { None }
            })
            .ok()
    }

    /// A thread stops in `id`. False if the count is closed (the safepoint
    /// has ended and everyone left): the thread will not sleep then.
    pub(crate) fn join(&self, id: SafepointId) -> bool {
        self.update(id, |n| Some(tagged(id, n + 1))).is_some()
    }

    /// A thread that joined runs again.
    pub(crate) fn leave(&self, id: SafepointId) -> Departure {
        match self.update(id, |n| Some(if n <= 1 { 0 } else { tagged(id, n - 1) })) {
            Some(old) if old & COUNT <= 1 => Departure::Last,
            _ => Departure::NotLast,
        }
    }

    /// After the wake-up: if no thread is left to run again, close the
    /// count and return true (the caller finishes the record); otherwise the
    /// last thread to run again does.
    pub(crate) fn close_if_empty(&self, id: SafepointId) -> bool {
        self.update(id, |n| (n == 0).then_some(0)).is_some()
    }

    /// Threads that stopped in `id` and have not run again (0 once closed).
    pub(crate) fn stopped(&self, id: SafepointId) -> u32 {
        let w = self.word.load(Ordering::Acquire);
        if tag_of(w) == id.barrier_tag() {
            (w & COUNT) as u32
        } else {
            0
        }
    }

    /// The record of `id` is complete. The word only moves forward: the
    /// last thread of an older safepoint may get here after a newer one's
    /// record completed (a later safepoint cut the older one short while
    /// that thread was descheduled), and must not hide the newer one.
    pub(crate) fn mark_done(&self, id: SafepointId) {
        let tag = id.barrier_tag();
        let _ = self
            .done
            .word()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |done| {
                (!at_or_after(done, tag)).then_some(tag)
            });
        self.done.wake_all();
    }

    /// Whether the record of `id`, or of a later safepoint, is complete
    /// (records complete in order: a safepoint that begins cuts its
    /// predecessor's short).
    #[cfg(all(test, not(hotmem_loom)))]
    pub(crate) fn is_done(&self, id: SafepointId) -> bool {
        at_or_after(self.done.word().load(Ordering::Acquire), id.barrier_tag())
    }

    /// Sleep until the record of `id` is complete. Returns too when a later
    /// safepoint's is, so a waiter that looks only after a newer safepoint
    /// went by does not wait for a record that will never be `id`'s again.
    ///
    /// Spins for a few microseconds first (the leaving phase of a short
    /// safepoint is that long), and yields too while every thread still to
    /// leave can have a CPU besides this one, as a `parking_lot` lock does
    /// before it parks: a sleeping waiter costs the last thread out a
    /// wake-up and itself the time to run again. On an oversubscribed
    /// machine a yield would keep a CPU from a woken thread instead (16
    /// threads on 16 CPUs: `begin_end` went from 0.85 to 4 ms with
    /// unconditional yields).
    pub(crate) fn wait_done(&self, id: SafepointId) {
        let tag = id.barrier_tag();
        let yields = if (self.stopped(id) as usize) + 1 < self.cpus {
            7
        } else {
            0
        };
        let word = self.done.word();
        if backoff::spin_then_yield(3, yields, || at_or_after(word.load(Ordering::Acquire), tag)) {
            return;
        }
        loop {
            let done = self.done.word().load(Ordering::Acquire);
            if at_or_after(done, tag) {
                return;
            }
            self.done.wait(done);
        }
    }
}

/// Whether barrier tag `done` is `tag` or a later one. Tags are the low 32
/// bits of odd, increasing counters, so they wrap; two tags compared here
/// are never 2^31 apart (that many safepoints between a record completing
/// and a waiter looking). 0 is before every tag.
fn at_or_after(done: u32, tag: u32) -> bool {
    done != 0 && (done.wrapping_sub(tag) as i32) >= 0
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use crate::sync::thread;
    use std::num::NonZero;

    fn id(counter: u64) -> SafepointId {
        SafepointId::from_counter(counter).unwrap()
    }

    #[test]
    fn a_record_counts_as_done_once_it_or_a_later_one_is() {
        let t = LeaveTracker::new(thread::available_parallelism().map_or(1, NonZero::get));
        assert!(!t.is_done(id(1)));
        t.mark_done(id(3));
        // The soak's hang: a reporter saw #1 leaving, then #1 and #3 both
        // completed before it looked. It must not wait for #1 again.
        assert!(t.is_done(id(1)) && t.is_done(id(3)) && !t.is_done(id(5)));
        t.wait_done(id(1));
        // An older record completing late does not hide the newer one.
        t.mark_done(id(1));
        assert!(t.is_done(id(3)));
        t.wait_done(id(3));
    }

    #[test]
    fn tags_compare_across_the_32_bit_wrap() {
        let before = (1u64 << 32) - 1;
        let after = (1u64 << 32) + 1;
        assert!(at_or_after(
            id(after).barrier_tag(),
            id(before).barrier_tag()
        ));
        assert!(!at_or_after(
            id(before).barrier_tag(),
            id(after).barrier_tag()
        ));
        assert!(!at_or_after(0, id(1).barrier_tag()));
    }
}
