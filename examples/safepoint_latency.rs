//! Safepoint latency, three ways in one run: the wait barrier (new), the
//! legacy JDK 11 spin/yield/sleep strategy, and what a Rust user would write
//! instead: a `parking_lot::RwLock` stop-the-world (every mutator holds a
//! read guard and `bump`s it at each poll; the coordinator takes the write
//! lock).
//!
//! For each thread count N: N busy mutator threads (managed code with a poll
//! on every iteration) and S safepoints with a trivial operation, one every
//! I ms. After each safepoint the coordinator waits until every stopped
//! thread runs again before the next interval starts, so no safepoint's
//! leaving phase is cut short by the next one. Prints p50/p99 of reaching
//! (time to safepoint), leaving (end until every thread runs again), total
//! (begin until every thread runs again) and the `end()` call itself (how
//! long the coordinator is held by waking the others), and the ratios
//! legacy/new and rwlock/new. Then H handshakes to one busy thread among N
//! (wait barrier only): p50/p99 latency.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example safepoint_latency -- \
//!     [--threads 2,16] [--safepoints 300] [--interval-ms 2] [--handshakes 200] [--log] \
//!     [--diagnose]
//! ```
//!
//! `--diagnose` also reads the coordinator thread's involuntary context
//! switches (`/proc/thread-self/status`) around each `end()` call and says
//! how many of the calls over 50 us were preempted (it lengthens the
//! operation by that read, so its figures are not the comparison's).

use hotmem_safepoint::{Coordinator, Histogram, Percentiles, SafepointLog, Strategy};
use parking_lot::{RwLock, RwLockReadGuard};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Options {
    threads: Vec<usize>,
    safepoints: usize,
    interval: Duration,
    handshakes: usize,
    log: SafepointLog,
    diagnose: bool,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        threads: vec![2, 16],
        safepoints: 300,
        interval: Duration::from_millis(2),
        handshakes: 200,
        log: SafepointLog::Off,
        diagnose: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--threads" | "-n" => {
                o.threads = value()?
                    .split(',')
                    .map(|t| t.trim().parse().map_err(|e| format!("--threads {t}: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--safepoints" | "-s" => {
                o.safepoints = value()?.parse().map_err(|e| format!("--safepoints: {e}"))?;
            }
            "--interval-ms" => {
                let ms: u64 = value()?
                    .parse()
                    .map_err(|e| format!("--interval-ms: {e}"))?;
                o.interval = Duration::from_millis(ms);
            }
            "--handshakes" => {
                o.handshakes = value()?.parse().map_err(|e| format!("--handshakes: {e}"))?;
            }
            "--log" => o.log = SafepointLog::Stderr,
            "--diagnose" => o.diagnose = true,
            "--help" | "-h" => {
                return Err(
                    "usage: safepoint_latency [--threads 2,16] [--safepoints 300] \
                            [--interval-ms 2] [--handshakes 200] [--log] [--diagnose]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.threads.is_empty() || o.safepoints == 0 {
        return Err("--threads and --safepoints must be positive".into());
    }
    Ok(o)
}

/// What one strategy measured at one thread count (nanoseconds).
struct Summary {
    reaching: Percentiles,
    leaving: Percentiles,
    total: Percentiles,
    end_call: Percentiles,
}

/// A little managed work between polls (a loop back-edge).
#[inline]
fn work(x: &mut u64) {
    for _ in 0..64 {
        *x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// N busy mutators of a coordinator; stopped and joined on drop.
struct Mutators {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    ids: Vec<hotmem_safepoint::MutatorId>,
}

impl Mutators {
    fn start(coordinator: &Coordinator, n: usize) -> Mutators {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let threads = (0..n)
            .map(|_| {
                let (c, stop, tx) = (coordinator.clone(), stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    let me = c.register().expect("register");
                    tx.send(me.id()).expect("send id");
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        work(&mut x);
                        me.poll();
                    }
                    black_box(x);
                })
            })
            .collect();
        let ids = (0..n).map(|_| rx.recv().expect("mutator id")).collect();
        std::thread::sleep(Duration::from_millis(20)); // let every thread spin up
        Mutators { stop, threads, ids }
    }
}

impl Drop for Mutators {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().expect("mutator");
        }
    }
}

fn run_coordinator(strategy: Strategy, threads: usize, o: &Options) -> Summary {
    let coordinator = Coordinator::builder().strategy(strategy).log(o.log).build();
    let mutators = Mutators::start(&coordinator, threads);
    let mut end_call = Histogram::new();
    let (mut slow, mut slow_preempted) = (0, 0);
    for _ in 0..o.safepoints {
        std::thread::sleep(o.interval);
        let guard = coordinator.begin("Cleanup").expect("begin");
        black_box(guard.id()); // the operation: trivial, as in the reference
        let before = o.diagnose.then(involuntary_switches);
        let t = Instant::now();
        guard.end();
        let took = t.elapsed();
        end_call.record(took.as_nanos() as u64);
        if let Some(before) = before
            && took > Duration::from_micros(50)
        {
            slow += 1;
            if involuntary_switches() > before {
                slow_preempted += 1;
            }
        }
        coordinator.wait_until_resumed();
    }
    if o.diagnose {
        println!(
            "  {strategy:?}, {threads} threads: {slow} of {} end() calls over 50 us, \
             {slow_preempted} of them preempted (involuntary context switch)",
            o.safepoints
        );
    }
    let stats = coordinator.stats();
    drop(mutators);
    Summary {
        reaching: stats.reaching,
        leaving: stats.leaving,
        total: stats.total,
        end_call: end_call.percentiles(),
    }
}

/// The calling thread's involuntary context switches so far.
fn involuntary_switches() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The `parking_lot::RwLock` stop-the-world, as a Rust user would write it.
struct RwWorld {
    lock: RwLock<()>,
    /// Bumped under the write lock: a reader that sees a new value after
    /// its `bump` was stopped by that safepoint and runs again.
    generation: AtomicU64,
    /// Readers that run again after the current generation's safepoint.
    resumed: AtomicUsize,
    /// When the last of them did (ns since `epoch`).
    resumed_at: AtomicU64,
    ready: AtomicUsize,
    epoch: Instant,
}

impl RwWorld {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

fn run_rwlock(threads: usize, o: &Options) -> Summary {
    let world = Arc::new(RwWorld {
        lock: RwLock::new(()),
        generation: AtomicU64::new(0),
        resumed: AtomicUsize::new(0),
        resumed_at: AtomicU64::new(0),
        ready: AtomicUsize::new(0),
        epoch: Instant::now(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (world, stop) = (world.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut guard = world.lock.read();
                let mut seen = world.generation.load(Ordering::Relaxed);
                world.ready.fetch_add(1, Ordering::Release);
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    work(&mut x);
                    // The poll: releases and re-takes the read lock if a
                    // writer waits.
                    RwLockReadGuard::bump(&mut guard);
                    let now = world.generation.load(Ordering::Relaxed);
                    if now != seen {
                        seen = now;
                        if world.resumed.fetch_add(1, Ordering::AcqRel) + 1 == threads {
                            world.resumed_at.store(world.now(), Ordering::Release);
                        }
                    }
                }
                black_box(x);
            })
        })
        .collect();
    while world.ready.load(Ordering::Acquire) < threads {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    let (mut reaching, mut leaving, mut total, mut end_call) = (
        Histogram::new(),
        Histogram::new(),
        Histogram::new(),
        Histogram::new(),
    );
    for _ in 0..o.safepoints {
        std::thread::sleep(o.interval);
        let begun = world.now();
        let guard = world.lock.write();
        let safe = world.now();
        world.resumed.store(0, Ordering::Relaxed);
        world.generation.fetch_add(1, Ordering::Relaxed); // the operation
        let ended = world.now();
        drop(guard);
        let end_returned = world.now();
        while world.resumed.load(Ordering::Acquire) < threads {
            std::thread::sleep(Duration::from_micros(20));
        }
        let resumed = world.resumed_at.load(Ordering::Acquire);
        reaching.record(safe - begun);
        leaving.record(resumed.saturating_sub(ended));
        total.record(resumed.saturating_sub(begun));
        end_call.record(end_returned - ended);
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    Summary {
        reaching: reaching.percentiles(),
        leaving: leaving.percentiles(),
        total: total.percentiles(),
        end_call: end_call.percentiles(),
    }
}

/// Handshakes to one busy thread among `threads`, one every interval.
fn run_handshakes(threads: usize, o: &Options) -> (Percentiles, usize) {
    let coordinator = Coordinator::new(Strategy::WaitBarrier);
    let mutators = Mutators::start(&coordinator, threads);
    let mut latency = Histogram::new();
    let mut by_target = 0;
    for i in 0..o.handshakes {
        std::thread::sleep(o.interval);
        let target = mutators.ids[i % threads];
        let t = Instant::now();
        let report = coordinator
            .handshake(target, |cx| {
                black_box(cx);
            })
            .expect("handshake");
        latency.record(t.elapsed().as_nanos() as u64);
        if report.executed_by == hotmem_safepoint::Executor::Target {
            by_target += 1;
        }
    }
    drop(mutators);
    (latency.percentiles(), by_target)
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn ratio(old: u64, new: u64) -> String {
    if new == 0 {
        "-".into()
    } else {
        format!("{:.2}x", old as f64 / new as f64)
    }
}

/// Picks one phase out of a summary.
type Column = fn(&Summary) -> &Percentiles;

fn print(threads: usize, count: usize, new: &Summary, old: &Summary, rw: &Summary) {
    println!("\n{threads} busy threads, {count} safepoints each (us)");
    println!(
        "{:<9} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>7} {:>7} | {:>7} {:>7}",
        "", "new p50", "p99", "leg p50", "p99", "rw p50", "p99", "leg/new", "p99", "rw/new", "p99"
    );
    let rows: [(&str, Column); 4] = [
        ("reaching", |s| &s.reaching),
        ("leaving", |s| &s.leaving),
        ("total", |s| &s.total),
        ("end()", |s| &s.end_call),
    ];
    for (name, get) in rows {
        let (n, l, r) = (get(new), get(old), get(rw));
        println!(
            "{:<9} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} | {:>7} {:>7} | {:>7} {:>7}",
            name,
            us(n.p50),
            us(n.p99),
            us(l.p50),
            us(l.p99),
            us(r.p50),
            us(r.p99),
            ratio(l.p50, n.p50),
            ratio(l.p99, n.p99),
            ratio(r.p50, n.p50),
            ratio(r.p99, n.p99)
        );
    }
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "safepoint latency: {cores} cores, one safepoint every {} ms, trivial operation; \
         new = wait barrier, leg = legacy (JDK 11 back-off), rw = parking_lot::RwLock; \
         load average {}",
        o.interval.as_millis(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for &threads in &o.threads {
        let new = run_coordinator(Strategy::WaitBarrier, threads, &o);
        let old = run_coordinator(Strategy::Legacy, threads, &o);
        let rw = run_rwlock(threads, &o);
        print(threads, o.safepoints, &new, &old, &rw);
        if o.handshakes > 0 {
            let (hs, by_target) = run_handshakes(threads, &o);
            println!(
                "handshake to one busy thread of {threads}: p50 {} us, p99 {} us, max {} us \
                 ({by_target} of {} run by the target)",
                us(hs.p50),
                us(hs.p99),
                us(hs.max),
                o.handshakes
            );
        }
    }
    ExitCode::SUCCESS
}
