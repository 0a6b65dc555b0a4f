//! The one place this crate takes its synchronisation primitives from.
//!
//! Normally `parking_lot`'s mutex (no poisoning, no allocation when
//! uncontended, which the allocation-free summary report relies on); under
//! `cfg(hotmem_loom)` loom's, so that a model could explore the interleavings.
//! The tracker is one lock around its tree: every operation is a critical
//! section, so there is no lock-free protocol for a loom model to check.
//!
//! `OnceLock` (the append-only custom tag names) stays std's in both builds:
//! loom has no counterpart, and a name is written once, before its tag is
//! handed out, under the registry's mutex.

#[cfg(not(hotmem_loom))]
mod imp {
    pub(crate) use parking_lot::{Mutex, MutexGuard};
}

#[cfg(hotmem_loom)]
mod imp {
    /// loom's mutex behind parking_lot's signature (`lock` never fails).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .expect("no thread panics while holding the lock")
        }
    }
}

pub(crate) use imp::{Mutex, MutexGuard};
pub(crate) use std::sync::OnceLock;
