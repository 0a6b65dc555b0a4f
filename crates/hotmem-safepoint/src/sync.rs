//! The one place where this crate gets atomics, locks, parking and threads.
//!
//! Normally: `std` atomics, `parking_lot` locks and the Linux futex (through
//! `rustix`). Under `cfg(hotmem_loom)`: loom's atomics, locks and threads, and
//! a [`FutexWord`] built from a loom `Mutex` + `Condvar` with the same
//! contract, so the protocol that loom checks is the code that runs.

pub(crate) use crossbeam_utils::CachePadded;
pub(crate) use std::sync::Arc;

#[cfg(not(hotmem_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

#[cfg(hotmem_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(hotmem_loom))]
pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};

#[cfg(hotmem_loom)]
pub(crate) use self::loom_locks::{Condvar, Mutex, MutexGuard};

#[cfg(not(hotmem_loom))]
pub(crate) use std::thread_local;

#[cfg(hotmem_loom)]
pub(crate) use loom::thread_local;

/// Identity of an OS thread (a loom thread under loom, where all model
/// threads share one OS thread).
#[cfg(not(hotmem_loom))]
pub(crate) type ThreadKey = std::thread::ThreadId;
/// Identity of a loom model thread.
#[cfg(hotmem_loom)]
pub(crate) type ThreadKey = loom::thread::ThreadId;

/// The calling thread's [`ThreadKey`].
#[cfg(not(hotmem_loom))]
pub(crate) fn current_thread() -> ThreadKey {
    std::thread::current().id()
}

/// The calling model thread's [`ThreadKey`].
#[cfg(hotmem_loom)]
pub(crate) fn current_thread() -> ThreadKey {
    loom::thread::current().id()
}

/// One busy-wait step (a `pause`; a yield under loom so models terminate).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(hotmem_loom))]
    std::hint::spin_loop();
    #[cfg(hotmem_loom)]
    loom::thread::yield_now();
}

/// Give the CPU to another runnable thread.
pub(crate) fn yield_now() {
    #[cfg(not(hotmem_loom))]
    std::thread::yield_now();
    #[cfg(hotmem_loom)]
    loom::thread::yield_now();
}

/// CPUs available to the process (at least 1): what decides whether a
/// waiter may yield its CPU or should leave it to the threads it waits for.
pub(crate) fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Sleep for `d` (a yield under loom, which has no time).
pub(crate) fn sleep(d: std::time::Duration) {
    #[cfg(not(hotmem_loom))]
    std::thread::sleep(d);
    #[cfg(hotmem_loom)]
    {
        let _ = d;
        loom::thread::yield_now();
    }
}

/// A 32-bit word that threads can sleep on until it changes: the Linux futex.
///
/// `wait(v)` blocks while the word holds `v` and may return spuriously;
/// callers re-check their condition in a loop. `wake_all` wakes every thread
/// sleeping on the word with one system call. A store followed by `wake_all`
/// never loses a wake-up: the kernel compares the word under its own lock.
pub(crate) struct FutexWord {
    value: AtomicU32,
    #[cfg(hotmem_loom)]
    lock: Mutex<()>,
    #[cfg(hotmem_loom)]
    cond: Condvar,
}

impl FutexWord {
    pub(crate) fn new(v: u32) -> Self {
        FutexWord {
            value: AtomicU32::new(v),
            #[cfg(hotmem_loom)]
            lock: Mutex::new(()),
            #[cfg(hotmem_loom)]
            cond: Condvar::new(),
        }
    }

    /// The word itself, for loads, stores and read-modify-writes.
    #[inline]
    pub(crate) fn word(&self) -> &AtomicU32 {
        &self.value
    }

    /// Sleep while the word holds `expected`. May return spuriously.
    #[cfg(not(hotmem_loom))]
    pub(crate) fn wait(&self, expected: u32) {
        use rustix::thread::futex;
        // EAGAIN: the word changed before we slept. EINTR: a signal. Both
        // mean "re-check", which is the caller's loop.
        let _ = futex::wait(&self.value, futex::Flags::PRIVATE, expected, None);
    }

    /// Wake every thread sleeping in [`FutexWord::wait`] on this word.
    #[cfg(not(hotmem_loom))]
    pub(crate) fn wake_all(&self) {
        use rustix::thread::futex;
        let _ = futex::wake(&self.value, futex::Flags::PRIVATE, i32::MAX as u32);
    }

    /// Wake at most one thread sleeping in [`FutexWord::wait`] on this word.
    #[cfg(not(hotmem_loom))]
    pub(crate) fn wake_one(&self) {
        use rustix::thread::futex;
        let _ = futex::wake(&self.value, futex::Flags::PRIVATE, 1);
    }

    /// Sleep while the word holds `expected`, at most `timeout`. May return
    /// spuriously or early; callers re-check their condition.
    #[cfg(not(hotmem_loom))]
    pub(crate) fn wait_for(&self, expected: u32, timeout: std::time::Duration) {
        use rustix::thread::futex;
        let timeout = futex::Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        // ETIMEDOUT, EAGAIN, EINTR: all mean "re-check".
        let _ = futex::wait(&self.value, futex::Flags::PRIVATE, expected, Some(&timeout));
    }

    /// Sleep while the word holds `expected` (loom: under the lock, so a
    /// store + `wake_all` cannot slip between the check and the sleep).
    #[cfg(hotmem_loom)]
    pub(crate) fn wait(&self, expected: u32) {
        let mut g = self.lock.lock();
        if self.value.load(Ordering::SeqCst) == expected {
            self.cond.wait(&mut g);
        }
    }

    /// Wake one waiter (loom: under the lock, like [`FutexWord::wake_all`]).
    #[cfg(hotmem_loom)]
    pub(crate) fn wake_one(&self) {
        let _g = self.lock.lock();
        self.cond.notify_one();
    }

    /// loom has no time: waits like [`FutexWord::wait`].
    #[cfg(hotmem_loom)]
    pub(crate) fn wait_for(&self, expected: u32, timeout: std::time::Duration) {
        let _ = timeout;
        self.wait(expected);
    }

    /// Wake every waiter (loom: take the lock so a waiter that checked the
    /// old value is already asleep on the condvar).
    #[cfg(hotmem_loom)]
    pub(crate) fn wake_all(&self) {
        let _g = self.lock.lock();
        self.cond.notify_all();
    }
}

impl std::fmt::Debug for FutexWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FutexWord")
            .field(&self.value.load(Ordering::Relaxed))
            .finish()
    }
}

/// loom's `Mutex`/`Condvar` behind `parking_lot`'s signatures.
#[cfg(hotmem_loom)]
mod loom_locks {
    use std::ops::{Deref, DerefMut};

    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(loom::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("loom mutex poisoned")))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
            let inner = g.0.take().expect("guard present");
            g.0 = Some(self.0.wait(inner).expect("loom mutex poisoned"));
        }
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all();
            0
        }
    }
}
