//! The crate's one door to concurrency primitives.
//!
//! Normally parking_lot's locks (and std's `Arc`); under `--cfg hotmem_loom`
//! loom's, so that the models in `src/tests/loom_*.rs` explore every
//! interleaving of the code that uses them. parking_lot rather than std's
//! locks because it is compiled with the rest of the crate: under
//! ThreadSanitizer its atomics are instrumented, so TSan sees the phase-end
//! handshake order the workers' writes before the coordinator's reads
//! (std's prebuilt locks are invisible to it).
//! The work queues (`crossbeam::queue::ArrayQueue`) and the job channels
//! (`crossbeam-channel`) are not modelled by loom; the race the models check is
//! the phase-end handshake ([`crate::latch::Latch`] plus the report slots),
//! which only uses the types re-exported here.

#[cfg(not(hotmem_loom))]
pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
#[cfg(not(hotmem_loom))]
pub(crate) use std::sync::Arc;

#[cfg(hotmem_loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(crate) use crossbeam::queue::ArrayQueue;
pub(crate) use crossbeam_channel::{Receiver, Sender, unbounded};

/// Locks `m`. Under loom, poisoning is ignored: every critical section of
/// this crate leaves the protected data consistent before anything in it can
/// panic (parking_lot has no poisoning).
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(hotmem_loom))]
    return m.lock();
    #[cfg(hotmem_loom)]
    return m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
}

/// Blocks on `cv`, releasing `guard` meanwhile, and returns it re-locked.
#[inline]
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    #[cfg(not(hotmem_loom))]
    {
        let mut guard = guard;
        cv.wait(&mut guard);
        guard
    }
    #[cfg(hotmem_loom)]
    cv.wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The value of a mutex nobody else can reach any more.
#[inline]
pub(crate) fn into_inner<T>(m: Mutex<T>) -> T {
    #[cfg(not(hotmem_loom))]
    return m.into_inner();
    #[cfg(hotmem_loom)]
    return m
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
}
