//! The crate's one door to synchronization primitives: parking_lot and std
//! normally, loom's under `cfg(hotmem_loom)` so that the loom models (in
//! `src/tests/loom_*.rs`) explore every interleaving of the code that really
//! runs.
//!
//! Three kinds of primitive stay std / parking_lot under loom too, because
//! no interleaving of theirs is worth modelling: `CounterU32` (the per-chunk
//! used-bytes statistics, written without the space lock and read under it;
//! nothing is ordered by them, and they live in memory committed through
//! hotmem-os, where a plain `u32` layout is required), `CounterUsize` /
//! `CounterU64` (a side table's published length, always written under the
//! space lock; space identities) and `LeafMutex` (taken only while the space
//! lock is held, so it never blocks).

#[cfg(not(hotmem_loom))]
mod imp {
    pub(crate) use parking_lot::{Mutex, MutexGuard};
    pub(crate) use std::sync::Arc;
}

#[cfg(hotmem_loom)]
mod imp {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::MutexGuard;

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
pub(crate) use parking_lot::Mutex as LeafMutex;
pub(crate) use std::sync::atomic::{
    AtomicU32 as CounterU32, AtomicU64 as CounterU64, AtomicUsize as CounterUsize, Ordering,
};
