//! Setup the integration tests share: the runtime most of them start from,
//! the old-holder scenario of the update-scope and generations tests, and a
//! binding whose slots cannot heal atomically.
//!
//! Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

mod holder;
mod plain_binding;

#[allow(unused_imports)] // not every test binary uses the holder scenario
pub(crate) use holder::*;
#[allow(unused_imports)] // nor the binding whose slots cannot heal
pub(crate) use plain_binding::PlainBinding;

use hotmem::{
    CollectStats, CollectionKind, CollectorMode, GcError, Generations, HeapSizing, Mutator,
    NumaConfig, Runtime, RuntimeBuilder,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The builder the tests start from: a heap of `heap_max` bytes, NUMA off
/// (one partition, unbound workers: what every machine can give), and
/// `workers` GC workers (`None`: the default count).
///
/// Its collector is the stop-the-world one with a single generation (the
/// builder's default was, until the concurrent generational collector
/// became it): a test of another sets its own.
///
/// Its sizing is pinned ([`HeapSizing::Maximum`]): a collection runs when
/// a test asks for one, or when the whole heap is full, never because
/// adaptive sizing, which reacts to the share of time spent collecting
/// (and so to the machine's load), chose to start one early. A test that
/// counts what one collection finds must not depend on that; a test of
/// adaptive sizing sets its own.
pub(crate) fn builder(heap_max: usize, workers: Option<usize>) -> RuntimeBuilder {
    let b = Runtime::builder()
        .heap_max(heap_max)
        .numa(NumaConfig::Off)
        .collector(CollectorMode::StopTheWorld)
        .generations(Generations::Single)
        .heap_sizing(HeapSizing::Maximum);
    match workers {
        Some(n) => b.gc_workers(n),
        None => b,
    }
}

/// Runs `f` on a thread of its own and returns what it returns, or fails
/// the test if it has not returned after `deadline`: a generous bound that
/// only turns a hang into a failure (the scenarios take milliseconds). A
/// panic of `f` is raised again here.
pub(crate) fn with_deadline<R: Send + 'static>(
    name: &str,
    deadline: Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(deadline) {
        Ok(r) => {
            worker.join().expect("scenario thread");
            r
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: hung for {deadline:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(payload) => std::panic::resume_unwind(payload),
            Ok(()) => unreachable!("sent nothing but returned"),
        },
    }
}

/// The collectors and collections the weak-reference tests run through:
/// stop-the-world and concurrent, single-generation full collections and
/// two-generation young and full ones.
pub(crate) const EVERY_COLLECTION: [(CollectorMode, Generations, CollectionKind); 6] = [
    (
        CollectorMode::StopTheWorld,
        Generations::Single,
        CollectionKind::Full,
    ),
    (
        CollectorMode::StopTheWorld,
        Generations::YoungAndOld,
        CollectionKind::Young,
    ),
    (
        CollectorMode::StopTheWorld,
        Generations::YoungAndOld,
        CollectionKind::Full,
    ),
    (
        CollectorMode::Concurrent,
        Generations::Single,
        CollectionKind::Full,
    ),
    (
        CollectorMode::Concurrent,
        Generations::YoungAndOld,
        CollectionKind::Young,
    ),
    (
        CollectorMode::Concurrent,
        Generations::YoungAndOld,
        CollectionKind::Full,
    ),
];

/// A collection of `kind` from `me`.
pub(crate) fn collect(me: &mut Mutator, kind: CollectionKind) -> CollectStats {
    match kind {
        CollectionKind::Young => me.collect_young(),
        _ => me.collect(),
    }
    .expect("a collection")
}

/// A full collection asked for on a thread of its own, so that the test's
/// mutator can act while it runs (while a concurrent cycle marks, say).
pub(crate) struct BackgroundCycle {
    done: Arc<AtomicBool>,
    thread: JoinHandle<Result<CollectStats, GcError>>,
}

impl BackgroundCycle {
    /// Starts `rt.collect()` on a new thread.
    pub(crate) fn start(rt: &Runtime) -> BackgroundCycle {
        let (rt, done) = (rt.clone(), Arc::new(AtomicBool::new(false)));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let stats = rt.collect();
            flag.store(true, Ordering::Release);
            stats
        });
        BackgroundCycle { done, thread }
    }

    /// Whether the collection returned.
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Polls with `me` until the cycle marks or ends; whether it marks
    /// (the scheduler decides which comes first).
    pub(crate) fn wait_for_marking(&self, rt: &Runtime, me: &mut Mutator) -> bool {
        while !rt.is_marking() && !self.is_done() {
            me.poll();
            std::thread::yield_now();
        }
        rt.is_marking()
    }

    /// Polls with `me` until the collection returned, and returns what it
    /// returned.
    pub(crate) fn finish(self, me: &mut Mutator) -> Result<CollectStats, GcError> {
        while !self.is_done() {
            me.poll();
        }
        self.thread.join().expect("the collecting thread")
    }
}

/// Starts a concurrent cycle on another thread and returns once it marks
/// (or has ended: the scheduler decides), polling `me` meanwhile: the
/// cycle's thread, whose result is the cycle's statistics.
pub(crate) fn cycle_in_marking(rt: &Runtime, me: &mut Mutator) -> JoinHandle<CollectStats> {
    let cycle = {
        let rt = rt.clone();
        std::thread::spawn(move || rt.collect().unwrap())
    };
    while !rt.is_marking() && !cycle.is_finished() {
        me.poll();
        std::thread::yield_now();
    }
    cycle
}
