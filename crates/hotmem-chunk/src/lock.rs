//! `SpinLock`: the lock of a space's state.
//!
//! Why not parking_lot's mutex: its release is an atomic read-modify-write
//! (a `lock cmpxchg`, so that it can see parked waiters), and on the
//! two-core machine of our yardsticks one such instruction costs about 8 ns
//! uncontended, as much as a whole chunk return. Here acquiring is one
//! read-modify-write and releasing is a plain release store, as in the
//! `spin` crate's mutex that `buddy_system_allocator::LockedHeap` uses.
//!
//! What it gives up is parking: a waiter spins a little, then yields its
//! time slice until the lock is free. That suits the space's critical
//! sections, which are short (list and table updates; the rare commit or
//! purge makes a system call), and it never hangs: the holder always makes
//! progress. It is written against the `sync` shim, so the loom models
//! check it (loom's `UnsafeCell` tracking fails a model whose two guards
//! could overlap); its own model is `tests/loom_lock.rs`.

use crate::sync::{AtomicBool, MutPtr, Ordering, UnsafeCell, hint, thread};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

/// A test-and-test-and-set lock around a `T`, with spin-then-yield waiting.
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to the value to one guard at a time
// (the guard exists only while `locked` is held by its thread, acquired
// with Acquire and released with Release), so sharing the lock between
// threads moves the `T` between them, which `T: Send` allows.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// Access to the value while the lock is held; releases it when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    value: ManuallyDrop<MutPtr<T>>,
}

/// Spins before each yield, doubling up to this many `spin_loop` hints.
const MAX_SPINS: u32 = 16;

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Acquires the lock, waiting as long as another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard {
            lock: self,
            value: ManuallyDrop::new(self.value.get_mut()),
        }
    }

    /// Waits for the lock to look free before trying again (so that waiters
    /// do not bounce its cache line), spinning briefly, then yielding.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 1;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins <= MAX_SPINS {
                    for _ in 0..spins {
                        hint::spin_loop();
                    }
                    spins *= 2;
                } else {
                    thread::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other guard exists and
        // nothing else accesses the value; the cell outlives the guard
        // (borrowed for 'a), and the shared borrow of the guard keeps any
        // mutable borrow of it from existing at the same time.
        unsafe { MutPtr::deref(&self.value) }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; the mutable borrow of the guard makes this
        // the only reference into the value for its lifetime.
        unsafe { MutPtr::deref(&self.value) }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped once, here, and not used afterwards. It goes
        // before the release so that (under loom) the access it records
        // ends while the lock is still held.
        unsafe { ManuallyDrop::drop(&mut self.value) };
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_take_turns() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let lock = Arc::new(SpinLock::new((0usize, 0usize)));
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut g = lock.lock();
                        // A torn update would show as a == b failing.
                        assert_eq!(g.0, g.1);
                        g.0 += 1;
                        std::hint::black_box(&mut *g);
                        g.1 += 1;
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let g = lock.lock();
        assert_eq!(*g, (THREADS * ROUNDS, THREADS * ROUNDS));
    }
}
