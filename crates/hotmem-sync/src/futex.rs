//! [`FutexWord`]: a 32-bit word that threads sleep on until it changes.

use crate::{AtomicU32, Ordering};
#[cfg(hotmem_loom)]
use crate::{Condvar, Mutex};
use std::fmt;
use std::time::Duration;

/// A 32-bit word that threads can sleep on until it changes: the Linux
/// futex.
///
/// `wait(v)` blocks while the word holds `v` and may return spuriously;
/// callers re-check their condition in a loop. `wake_all` wakes every thread
/// sleeping on the word with one system call. A store followed by a wake
/// never loses a wake-up: the kernel compares the word under its own lock.
///
/// Under `cfg(hotmem_loom)` it is built from a loom `Mutex` and `Condvar`
/// with the same contract (the comparison and the sleep happen under the
/// lock, which every wake takes), so the protocols that loom checks are the
/// code that runs.
pub struct FutexWord {
    value: AtomicU32,
    #[cfg(hotmem_loom)]
    lock: Mutex<()>,
    #[cfg(hotmem_loom)]
    cond: Condvar,
}

impl FutexWord {
    /// A word holding `value`, nobody asleep on it.
    pub fn new(value: u32) -> Self {
        FutexWord {
            value: AtomicU32::new(value),
            #[cfg(hotmem_loom)]
            lock: Mutex::new(()),
            #[cfg(hotmem_loom)]
            cond: Condvar::new(),
        }
    }

    /// The word itself, for loads, stores and read-modify-writes.
    #[inline]
    pub fn word(&self) -> &AtomicU32 {
        &self.value
    }
}

#[cfg(not(hotmem_loom))]
impl FutexWord {
    /// Sleeps while the word holds `expected`. May return spuriously.
    pub fn wait(&self, expected: u32) {
        use rustix::thread::futex;
        // EAGAIN: the word changed before we slept. EINTR: a signal. Both
        // mean "re-check", which is the caller's loop.
        let _ = futex::wait(&self.value, futex::Flags::PRIVATE, expected, None);
    }

    /// Sleeps while the word holds `expected`, at most `timeout`. May
    /// return spuriously or early; callers re-check their condition.
    pub fn wait_for(&self, expected: u32, timeout: Duration) {
        use rustix::thread::futex;
        let timeout = futex::Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        // ETIMEDOUT, EAGAIN, EINTR: all mean "re-check".
        let _ = futex::wait(&self.value, futex::Flags::PRIVATE, expected, Some(&timeout));
    }

    /// Wakes at most one thread sleeping in [`FutexWord::wait`] on this word.
    pub fn wake_one(&self) {
        use rustix::thread::futex;
        let _ = futex::wake(&self.value, futex::Flags::PRIVATE, 1);
    }

    /// Wakes every thread sleeping in [`FutexWord::wait`] on this word.
    pub fn wake_all(&self) {
        use rustix::thread::futex;
        let _ = futex::wake(&self.value, futex::Flags::PRIVATE, i32::MAX as u32);
    }
}

#[cfg(hotmem_loom)]
impl FutexWord {
    /// Sleeps while the word holds `expected`, checked under the lock so
    /// that a store and a wake cannot slip between the check and the sleep.
    pub fn wait(&self, expected: u32) {
        let mut g = self.lock.lock();
        if self.value.load(Ordering::SeqCst) == expected {
            self.cond.wait(&mut g);
        }
    }

    /// loom has no time: waits like [`FutexWord::wait`].
    pub fn wait_for(&self, expected: u32, timeout: Duration) {
        let _ = timeout;
        self.wait(expected);
    }

    /// Wakes one waiter (under the lock, like [`FutexWord::wake_all`]).
    pub fn wake_one(&self) {
        let _g = self.lock.lock();
        self.cond.notify_one();
    }

    /// Wakes every waiter, taking the lock so that a waiter that saw the
    /// old value is already asleep on the condvar.
    pub fn wake_all(&self) {
        let _g = self.lock.lock();
        self.cond.notify_all();
    }
}

impl fmt::Debug for FutexWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FutexWord")
            .field(&self.value.load(Ordering::Relaxed))
            .finish()
    }
}
