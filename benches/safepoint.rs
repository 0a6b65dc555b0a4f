//! Safepoint benchmarks: the poll fast path, begin+end latency with 1, 2, 4
//! and 16 busy mutators for the wait barrier against both baselines in the
//! same group (the legacy JDK 11 spin/yield/sleep strategy, and a
//! `parking_lot::RwLock` stop-the-world: mutators hold a read guard and
//! `bump` it at each poll, the coordinator takes the write lock), and
//! handshake latency (one busy target alone, and one among 16).
//!
//! "begin+end" is the whole cycle as the mutators see it: begin (until every
//! thread is safe), end (wake-up), and until every stopped thread runs again
//! (`wait_until_resumed`; for the RwLock, until every reader has re-taken
//! its read lock).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_safepoint::{Coordinator, MutatorId, Strategy};
use parking_lot::{RwLock, RwLockReadGuard};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `n` threads that bump a counter and poll, until dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    ids: Vec<MutatorId>,
    threads: Vec<JoinHandle<()>>,
}

impl Busy {
    fn start(c: &Coordinator, n: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let threads = (0..n)
            .map(|_| {
                let (c, stop, tx) = (c.clone(), stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    let me = c.register().unwrap();
                    tx.send(me.id()).unwrap();
                    let work = AtomicU64::new(0);
                    while !stop.load(Ordering::Relaxed) {
                        work.fetch_add(1, Ordering::Relaxed);
                        me.poll();
                    }
                })
            })
            .collect();
        let ids = (0..n).map(|_| rx.recv().unwrap()).collect();
        Busy { stop, ids, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

/// The `parking_lot::RwLock` stop-the-world with `n` busy readers.
struct RwWorld {
    lock: RwLock<()>,
    /// Bumped under the write lock; a reader that sees it change after its
    /// `bump` runs again after that stop.
    generation: AtomicU64,
    /// Readers that ran again after the current generation's stop.
    resumed: AtomicUsize,
}

struct RwBusy {
    world: Arc<RwWorld>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl RwBusy {
    fn start(n: usize) -> RwBusy {
        let world = Arc::new(RwWorld {
            lock: RwLock::new(()),
            generation: AtomicU64::new(0),
            resumed: AtomicUsize::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let threads = (0..n)
            .map(|_| {
                let (world, stop, tx) = (world.clone(), stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    let mut guard = world.lock.read();
                    let mut seen = world.generation.load(Ordering::Relaxed);
                    tx.send(()).unwrap();
                    let work = AtomicU64::new(0);
                    while !stop.load(Ordering::Relaxed) {
                        work.fetch_add(1, Ordering::Relaxed);
                        RwLockReadGuard::bump(&mut guard);
                        let now = world.generation.load(Ordering::Relaxed);
                        if now != seen {
                            seen = now;
                            world.resumed.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                })
            })
            .collect();
        for _ in 0..n {
            rx.recv().unwrap();
        }
        RwBusy {
            world,
            stop,
            threads,
        }
    }

    /// Stop the world, run nothing, resume, until every reader runs again.
    fn cycle(&self) {
        let n = self.threads.len();
        let guard = self.world.lock.write();
        self.world.resumed.store(0, Ordering::Relaxed);
        self.world.generation.fetch_add(1, Ordering::Relaxed);
        drop(guard);
        while self.world.resumed.load(Ordering::Acquire) < n {
            std::thread::yield_now();
        }
    }
}

impl Drop for RwBusy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

fn poll(c: &mut Criterion) {
    let mut group = c.benchmark_group("safepoint/poll");
    const POLLS: u64 = 1000;
    group.throughput(Throughput::Elements(POLLS));
    let coordinator = Coordinator::new(Strategy::WaitBarrier);
    let me = coordinator.register().unwrap();
    group.bench_function("disarmed", |b| {
        b.iter(|| {
            for _ in 0..POLLS {
                black_box(&me).poll();
            }
        })
    });
    group.finish();
}

fn begin_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("safepoint/begin_end");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    for threads in [1usize, 2, 4, 16] {
        for (name, strategy) in [
            ("wait_barrier", Strategy::WaitBarrier),
            ("legacy", Strategy::Legacy),
        ] {
            let coordinator = Coordinator::new(strategy);
            let busy = Busy::start(&coordinator, threads);
            group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, _| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let guard = coordinator.begin("bench").unwrap();
                        guard.end();
                        coordinator.wait_until_resumed();
                        total += start.elapsed();
                    }
                    total
                })
            });
            drop(busy);
        }
        let rw = RwBusy::start(threads);
        group.bench_with_input(
            BenchmarkId::new("parking_lot_rwlock", threads),
            &threads,
            |b, _| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        rw.cycle();
                    }
                    start.elapsed()
                })
            },
        );
        drop(rw);
    }
    group.finish();
}

fn handshake(c: &mut Criterion) {
    let mut group = c.benchmark_group("safepoint/handshake");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(2));
    let coordinator = Coordinator::new(Strategy::WaitBarrier);

    // A busy thread runs the operation itself at its next poll.
    let busy = Busy::start(&coordinator, 1);
    let target = busy.ids[0];
    group.bench_function("busy_target", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                coordinator
                    .handshake(target, |cx| {
                        black_box(cx);
                    })
                    .unwrap();
            }
            start.elapsed()
        })
    });
    drop(busy);

    // A thread in native: the requester runs the operation on its behalf.
    let (ready_tx, ready) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let c2 = coordinator.clone();
    let sitter = std::thread::spawn(move || {
        let mut me = c2.register().unwrap();
        let id = me.id();
        let native = me.enter_native();
        ready_tx.send(id).unwrap();
        released.recv().unwrap();
        drop(native);
    });
    let target = ready.recv().unwrap();
    group.bench_function("native_target", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                coordinator
                    .handshake(target, |cx| {
                        black_box(cx);
                    })
                    .unwrap();
            }
            start.elapsed()
        })
    });
    release.send(()).unwrap();
    sitter.join().unwrap();

    // One busy thread among 16 (more threads than cores: the target may
    // have to wait for a CPU before it polls).
    let busy = Busy::start(&coordinator, 16);
    group.bench_function("busy_target_of_16", |b| {
        let mut next = 0;
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                next = (next + 1) % busy.ids.len();
                coordinator
                    .handshake(busy.ids[next], |cx| {
                        black_box(cx);
                    })
                    .unwrap();
            }
            start.elapsed()
        })
    });
    drop(busy);

    // Every one of 4 busy threads.
    let busy = Busy::start(&coordinator, 4);
    group.bench_function("all_4_busy", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                coordinator
                    .handshake_all(|cx| {
                        black_box(cx);
                    })
                    .unwrap();
            }
            start.elapsed()
        })
    });
    drop(busy);
    group.finish();
}

criterion_group!(benches, poll, begin_end, handshake);
criterion_main!(benches);
