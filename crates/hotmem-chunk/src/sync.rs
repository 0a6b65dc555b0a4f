//! The crate's one door to synchronization primitives: parking_lot and std
//! normally, loom's under `cfg(hotmem_loom)` so that the loom models explore
//! every interleaving of the code that really runs.

#[cfg(not(hotmem_loom))]
mod imp {
    pub(crate) use parking_lot::{Mutex, MutexGuard};
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::{AtomicU32, Ordering};
}

#[cfg(hotmem_loom)]
mod imp {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::MutexGuard;
    pub(crate) use loom::sync::atomic::{AtomicU32, Ordering};

    /// loom's mutex with parking_lot's (poison-free) `lock` signature.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("a loom model thread panicked")
        }
    }
}

pub(crate) use imp::*;

/// A process-wide unique id for each chunk manager, so that a chunk handle
/// from one space is recognised as foreign by another. The counter is not
/// part of any race worth modelling (it only has to be unique), so it stays a
/// std atomic under loom too.
pub(crate) fn next_space_id() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
