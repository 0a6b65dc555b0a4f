//! [`ConcurrentState`]: what the concurrent collector shares with the
//! mutators that wait for it. An allocation that finds no room stalls
//! until a cycle frees memory; while any does, the cycle's concurrent
//! phases take every GC worker.

use crate::gc::core::cpu_time::cpus;
use crate::gc::core::generations::CollectionKind;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// What the concurrent collector shares with the mutators that wait for
/// it: how often cycles freed memory, and the allocations stalled now.
pub(crate) struct ConcurrentState {
    /// How many times cycles freed memory (after Concurrent Select
    /// Relocation Set, and at each cycle's end), and where stalled
    /// allocations wait for the count to move.
    freed: parking_lot::Mutex<u64>,
    freed_moved: parking_lot::Condvar,
    /// Allocations stalled now: while any is, the cycle's concurrent
    /// phases take every GC worker (the stalled mutators leave their CPUs
    /// idle), as ZGC boosts its workers on a stall.
    stalled: AtomicUsize,
    /// Allocation stalls so far (each one counted when it begins).
    stalls: AtomicU64,
    /// Bytes the heap had free when the last cycle ended: whether a cycle
    /// made room for a stalled allocation, whoever took it since.
    room_at_end: AtomicUsize,
    /// The kind of cycle running now ([`RUNNING_NONE`] between cycles),
    /// for the stalls' account by kind.
    running: AtomicU8,
    /// The workers a concurrent phase takes while nothing stalls (before
    /// the pool's size bounds them).
    usual_workers: usize,
}

/// [`ConcurrentState::running`]'s value between cycles.
const RUNNING_NONE: u8 = 0;
/// A young cycle runs.
const RUNNING_YOUNG: u8 = 1;
/// A full cycle runs.
const RUNNING_FULL: u8 = 2;

impl ConcurrentState {
    /// The state of a runtime whose concurrent phases take `workers` GC
    /// workers while nothing stalls (`None`: a quarter of the CPUs, at
    /// least one, ZGC's concurrent worker heuristic).
    pub(crate) fn new(workers: Option<usize>) -> Self {
        ConcurrentState {
            freed: parking_lot::Mutex::new(0),
            freed_moved: parking_lot::Condvar::new(),
            stalled: AtomicUsize::new(0),
            stalls: AtomicU64::new(0),
            room_at_end: AtomicUsize::new(usize::MAX),
            running: AtomicU8::new(RUNNING_NONE),
            usual_workers: workers.unwrap_or_else(|| cpus().div_ceil(4)),
        }
    }
}

impl ConcurrentState {
    /// Allocation stalls so far.
    pub(crate) fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::Relaxed)
    }

    /// Whether an allocation stalls now.
    pub(crate) fn stalled_now(&self) -> bool {
        self.stalled.load(Ordering::Relaxed) > 0
    }

    /// An allocation stalls until the guard is dropped.
    pub(crate) fn stall(&self) -> Stalled<'_> {
        self.stalls.fetch_add(1, Ordering::Relaxed);
        self.stalled.fetch_add(1, Ordering::Relaxed);
        Stalled(self)
    }

    /// The workers a concurrent phase takes out of a pool of `pool`: the
    /// usual number (see [`ConcurrentState::new`]), or the whole pool
    /// while an allocation stalls.
    pub(crate) fn concurrent_workers(&self, pool: usize) -> usize {
        if self.stalled.load(Ordering::Relaxed) > 0 {
            return pool.max(1);
        }
        self.usual_workers.clamp(1, pool.max(1))
    }

    /// A cycle of `kind` starts.
    pub(crate) fn cycle_started(&self, kind: CollectionKind) {
        let v = match kind {
            CollectionKind::Young => RUNNING_YOUNG,
            CollectionKind::Full => RUNNING_FULL,
        };
        self.running.store(v, Ordering::Relaxed);
    }

    /// The kind of cycle running now, if any (a hint: it may change as soon
    /// as it is read).
    pub(crate) fn running(&self) -> Option<CollectionKind> {
        match self.running.load(Ordering::Relaxed) {
            RUNNING_YOUNG => Some(CollectionKind::Young),
            RUNNING_FULL => Some(CollectionKind::Full),
            _ => None,
        }
    }

    /// A cycle ended with `room` bytes of the heap free.
    pub(crate) fn cycle_ended(&self, room: usize) {
        self.running.store(RUNNING_NONE, Ordering::Relaxed);
        self.room_at_end.store(room, Ordering::Relaxed);
    }

    /// Bytes the heap had free when the last cycle ended.
    pub(crate) fn room_at_end(&self) -> usize {
        self.room_at_end.load(Ordering::Relaxed)
    }

    /// How many times cycles freed memory so far.
    pub(crate) fn freed_count(&self) -> u64 {
        *self.freed.lock()
    }

    /// A cycle freed memory (or ended): stalled allocations retry.
    pub(crate) fn memory_freed(&self) {
        *self.freed.lock() += 1;
        self.freed_moved.notify_all();
    }

    /// Waits until cycles freed memory more than `seen` times.
    pub(crate) fn wait_freed_past(&self, seen: u64) {
        let mut freed = self.freed.lock();
        while *freed <= seen {
            self.freed_moved.wait(&mut freed);
        }
    }
}

/// An allocation stalled (see [`ConcurrentState::stall`]).
pub(crate) struct Stalled<'a>(&'a ConcurrentState);

impl Drop for Stalled<'_> {
    fn drop(&mut self) {
        self.0.stalled.fetch_sub(1, Ordering::Relaxed);
    }
}
