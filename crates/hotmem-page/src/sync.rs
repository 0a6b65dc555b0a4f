//! The crate's one door to synchronization primitives.
//!
//! Everything that can race (the shared-page slots, page bump pointers, the
//! installation lock, statistics counters) is written against these names.
//! Normally they are `std` atomics and `parking_lot` locks; under
//! `--cfg hotmem_loom` they are loom's, so that the loom models check the
//! real code rather than a copy of it.

#[cfg(not(hotmem_loom))]
mod imp {
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

    /// A mutex with an infallible `lock`, `parking_lot` underneath.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }
}

#[cfg(hotmem_loom)]
mod imp {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

    /// A mutex with an infallible `lock`, loom's underneath.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            // A panic while holding the lock already fails the model.
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}

pub(crate) use imp::*;

/// The CPU the calling thread runs on, for per-CPU small pages. Under loom
/// every thread is "CPU 0", which keeps the models small.
#[inline]
pub(crate) fn current_cpu() -> usize {
    #[cfg(not(hotmem_loom))]
    {
        rustix::thread::sched_getcpu()
    }
    #[cfg(hotmem_loom)]
    {
        0
    }
}

/// A process-wide unique id for each heap, so that a page of one heap is
/// recognised as foreign by another. Not part of any racing protocol (a
/// plain counter), hence std's atomic even under loom.
pub(crate) fn next_heap_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
