//! The crate's one door to concurrency primitives.
//!
//! Normally std's; under `--cfg hotmem_loom` loom's, so that the models in
//! `src/tests/loom_*.rs` explore every interleaving of the code that uses them.
//! The work queues (`crossbeam::queue::ArrayQueue`) and the job channels
//! (`crossbeam-channel`) are not modelled by loom; the race the models check is
//! the phase-end handshake ([`crate::latch::Latch`] plus the report slots),
//! which only uses the types re-exported here.

#[cfg(not(hotmem_loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(hotmem_loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(crate) use crossbeam::queue::ArrayQueue;
pub(crate) use crossbeam_channel::{Receiver, Sender, unbounded};

/// Locks `m`, ignoring poisoning: every critical section of this crate leaves
/// the protected data consistent before anything in it can panic.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
