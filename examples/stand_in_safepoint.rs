//! The stand-in safepoint of the page-allocator workloads (the
//! `medium_page_race` example and `benches/page.rs`), which run the page
//! allocator without the runtime: mutators allocate in batches under the
//! read side of a lock (a batch is what a mutator allocates between two
//! polls), and the first to find the heap exhausted takes the write side and
//! "collects", unless another thread collected since its batch began.
//!
//! Batches matter for what is measured: with the lock taken around every
//! allocation, every thread wrote the lock's cache line once per object, and
//! the small-object curve of `benches/page.rs` measured the lock (16 cores:
//! 26.8 M objects/s at 1 thread, 9.5 at 2, 8.7 at 16).

use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one allocation of a batch did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// It succeeded: go on with the batch.
    Allocated,
    /// The heap is exhausted: end the batch and collect.
    HeapExhausted,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct StandInSafepoint {
    lock: RwLock<()>,
    /// Collections so far: a thread that found the heap exhausted collects
    /// only if this has not moved since its batch began.
    collections: AtomicU64,
}

impl StandInSafepoint {
    /// Runs `alloc` up to `n` times under the read side, stopping at the
    /// first [`Step::HeapExhausted`]; then, if the heap was exhausted and
    /// nobody collected since the batch began, runs `collect` under the
    /// write side (no batch runs meanwhile). Returns the collections this
    /// call made: 0 or 1.
    pub(crate) fn batch(
        &self,
        n: u64,
        mut alloc: impl FnMut() -> Step,
        collect: impl FnOnce(),
    ) -> u64 {
        let epoch = self.collections.load(Ordering::Acquire);
        let exhausted = {
            let _mutator = self.lock.read().expect("stand-in safepoint lock");
            (0..n).any(|_| alloc() == Step::HeapExhausted)
        };
        if !exhausted {
            return 0;
        }
        let _gc = self.lock.write().expect("stand-in safepoint lock");
        if self.collections.load(Ordering::Acquire) != epoch {
            return 0;
        }
        collect();
        self.collections.fetch_add(1, Ordering::Release);
        1
    }
}
