//! Safepoint benchmarks: the poll fast path, begin+end latency with 1, 2, 4
//! and 16 busy mutators for the wait barrier against the legacy
//! spin/yield/sleep strategy (same group), and handshake latency.
//!
//! "begin+end" is the whole cycle as the mutators see it: begin (until every
//! thread is safe), end (wake-up), and until every stopped thread runs again
//! (`wait_until_resumed`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_safepoint::{Coordinator, MutatorId, Strategy};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
