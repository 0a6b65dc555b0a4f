//! Busy mutator threads shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use hotmem_safepoint::{Coordinator, MutatorId};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a test waits for a condition before it calls it a failure:
/// far longer than any of them takes, even on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Wait until `done()` holds; fail the test (naming `what`) after
/// [`DEADLINE`]. Never an assertion on timing: only a bound on a hang.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "waited {DEADLINE:?} for {what}");
        std::thread::yield_now();
    }
}

/// Run `scenario` on a thread of its own; fail the test if it has not
/// finished after [`DEADLINE`] (a hang; the thread is left behind).
pub fn within_deadline<T: Send + 'static>(scenario: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(scenario());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(value) => {
            worker.join().expect("scenario thread");
            value
        }
        // The scenario panicked: re-raise its panic.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(worker.join().expect_err("it sent nothing"))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("hung for {DEADLINE:?}"),
    }
}

/// Threads that run "managed code" (bump a shared counter) with a poll on
/// every iteration, until stopped.
pub struct BusyThreads {
    pub coordinator: Coordinator,
    pub stop: Arc<AtomicBool>,
    /// Bumped in managed code only: frozen while a safepoint runs.
    pub progress: Arc<AtomicU64>,
    /// Behind a `parking_lot` lock, which ThreadSanitizer sees (the std's
    /// lock is in the uninstrumented std: TSan reported its guarded `Vec` as
    /// a race).
    pub ids: Arc<Mutex<Vec<MutatorId>>>,
    /// Iterations of each thread, in spawn order.
    pub per_thread: Arc<Vec<AtomicU64>>,
    threads: Vec<JoinHandle<u64>>,
}

impl BusyThreads {
    pub fn start(coordinator: &Coordinator, n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(AtomicU64::new(0));
        let ids = Arc::new(Mutex::new(Vec::new()));
        let per_thread: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let threads = (0..n)
            .map(|i| {
                let (c, stop, progress, ids, per_thread) = (
                    coordinator.clone(),
                    stop.clone(),
                    progress.clone(),
                    ids.clone(),
                    per_thread.clone(),
                );
                std::thread::spawn(move || {
                    let me = c.register().expect("register");
                    ids.lock().push(me.id());
                    let mut mine = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        progress.fetch_add(1, Ordering::Relaxed);
                        per_thread[i].fetch_add(1, Ordering::Relaxed);
                        mine += 1;
                        me.poll();
                    }
                    mine
                })
            })
            .collect();
        // The ids, not the registered count: a thread pushes its id after it
        // registered, and callers index `ids` right away.
        wait_until("the busy threads to register", || ids.lock().len() == n);
        BusyThreads {
            coordinator: coordinator.clone(),
            stop,
            progress,
            ids,
            per_thread,
            threads,
        }
    }

    /// Wait until every thread has run managed code since this call (all
    /// resumed after the last safepoint).
    pub fn wait_each_runs(&self) {
        let seen: Vec<u64> = self
            .per_thread
            .iter()
            .map(|n| n.load(Ordering::SeqCst))
            .collect();
        wait_until("every busy thread to run again", || {
            self.per_thread
                .iter()
                .zip(&seen)
                .all(|(n, &before)| n.load(Ordering::SeqCst) > before)
        });
    }

    /// Stop the threads; returns how many iterations each one ran.
    pub fn finish(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .into_iter()
            .map(|t| t.join().expect("busy thread panicked"))
            .collect()
    }
}

/// While a safepoint runs: the managed-code counter does not move and every
/// registered thread is in a safe state.
pub fn assert_world_stopped(coordinator: &Coordinator, progress: &AtomicU64) {
    let before = progress.load(Ordering::SeqCst);
    for _ in 0..50 {
        std::thread::yield_now();
    }
    assert_eq!(
        progress.load(Ordering::SeqCst),
        before,
        "managed code ran during a safepoint"
    );
    assert_all_safe(coordinator);
}

/// Every registered thread is in a safe state during a safepoint. A thread
/// still on its way out of the previous safepoint publishes `Managed` for a
/// moment before its poll sends it back to the barrier (it runs no managed
/// code in between: see the state word's docs), so a `Managed` reading is
/// given time to settle; a thread that stays `Managed` fails the check.
pub fn assert_all_safe(coordinator: &Coordinator) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let unsafe_now: Vec<_> = coordinator
            .mutators()
            .into_iter()
            .filter(|(_, s)| !s.is_safe())
            .collect();
        if unsafe_now.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "threads stayed in managed code during a safepoint: {unsafe_now:?}"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
}
