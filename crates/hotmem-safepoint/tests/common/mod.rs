//! Busy mutator threads shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use hotmem_safepoint::{Coordinator, MutatorId};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Threads that run "managed code" (bump a shared counter) with a poll on
/// every iteration, until stopped.
pub struct BusyThreads {
    pub coordinator: Coordinator,
    pub stop: Arc<AtomicBool>,
    /// Bumped in managed code only: frozen while a safepoint runs.
    pub progress: Arc<AtomicU64>,
    pub ids: Arc<Mutex<Vec<MutatorId>>>,
    threads: Vec<JoinHandle<u64>>,
}

impl BusyThreads {
    pub fn start(coordinator: &Coordinator, n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(AtomicU64::new(0));
        let ids = Arc::new(Mutex::new(Vec::new()));
        let before = coordinator.registered();
        let threads = (0..n)
            .map(|_| {
                let (c, stop, progress, ids) = (
                    coordinator.clone(),
                    stop.clone(),
                    progress.clone(),
                    ids.clone(),
                );
                std::thread::spawn(move || {
                    let me = c.register().expect("register");
                    ids.lock().unwrap().push(me.id());
                    let mut mine = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        progress.fetch_add(1, Ordering::Relaxed);
                        mine += 1;
                        me.poll();
                    }
                    mine
                })
            })
            .collect();
        while coordinator.registered() < before + n {
            std::thread::yield_now();
        }
        BusyThreads {
            coordinator: coordinator.clone(),
            stop,
            progress,
            ids,
            threads,
        }
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
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
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
            std::time::Instant::now() < deadline,
            "threads stayed in managed code during a safepoint: {unsafe_now:?}"
        );
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}
