//! The crate's one door to synchronization primitives: std (and
//! parking_lot for the leaf mutex) normally, loom's under `cfg(hotmem_loom)`
//! so that the loom models (in `src/tests/loom_*.rs`) explore every
//! interleaving of the code that really runs, the space's own lock
//! (`lock.rs`, built from `AtomicBool`, `UnsafeCell`, `hint` and `thread`)
//! included.
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
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::AtomicBool;
    pub(crate) use std::{hint, thread};

    /// std's `UnsafeCell` behind loom's pointer-returning API, so that code
    /// written against the shim reads the same in both builds.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    /// A pointer to the value of an [`UnsafeCell`] (loom's records the
    /// access for as long as it lives; this one is a plain pointer).
    #[derive(Debug)]
    pub(crate) struct MutPtr<T>(*mut T);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        #[inline]
        pub(crate) fn get_mut(&self) -> MutPtr<T> {
            MutPtr(self.0.get())
        }
    }

    impl<T> MutPtr<T> {
        /// The value.
        ///
        /// # Safety
        /// As for dereferencing the raw pointer: the cell is alive, and no
        /// other reference into its value is used while this one lives.
        #[inline]
        #[allow(clippy::mut_from_ref)]
        pub(crate) unsafe fn deref(&self) -> &mut T {
            // SAFETY: the pointer comes from a live cell (the caller's
            // first point) and the caller's second point makes the
            // reference unique.
            unsafe { &mut *self.0 }
        }
    }
}

#[cfg(hotmem_loom)]
mod imp {
    pub(crate) use loom::cell::{MutPtr, UnsafeCell};
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::AtomicBool;
    pub(crate) use loom::{hint, thread};
}

pub(crate) use imp::*;
pub(crate) use parking_lot::Mutex as LeafMutex;
pub(crate) use std::sync::atomic::{
    AtomicU32 as CounterU32, AtomicU64 as CounterU64, AtomicUsize as CounterUsize, Ordering,
};
