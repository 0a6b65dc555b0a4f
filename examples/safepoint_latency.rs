//! Safepoint latency, new (wait barrier) against legacy (spin/yield/sleep,
//! wake through a shared mutex), in one run.
//!
//! For each thread count N: N busy mutator threads (managed code with a poll
//! on every iteration) and S safepoints with a trivial operation, one every
//! I ms, first with the wait barrier, then with the legacy strategy. Prints
//! p50/p90/p99/max of reaching (time to safepoint), at, leaving and total,
//! side by side, and the legacy/new ratios.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example safepoint_latency -- \
//!     [--threads 2,16] [--safepoints 300] [--interval-ms 2] [--log]
//! ```

use hotmem_safepoint::{Coordinator, Percentiles, SafepointLog, SafepointStats, Strategy};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

struct Options {
    threads: Vec<usize>,
    safepoints: usize,
    interval: Duration,
    log: SafepointLog,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        threads: vec![2, 16],
        safepoints: 300,
        interval: Duration::from_millis(2),
        log: SafepointLog::Off,
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
            "--log" => o.log = SafepointLog::Stderr,
            "--help" | "-h" => {
                return Err(
                    "usage: safepoint_latency [--threads 2,16] [--safepoints 300] \
                            [--interval-ms 2] [--log]"
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

fn run(strategy: Strategy, threads: usize, o: &Options) -> SafepointStats {
    let coordinator = Coordinator::builder().strategy(strategy).log(o.log).build();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (c, stop) = (coordinator.clone(), stop.clone());
            std::thread::spawn(move || {
                let me = c.register().expect("register");
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // A little managed work between polls (a loop back-edge).
                    for _ in 0..64 {
                        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                    me.poll();
                }
                black_box(x);
            })
        })
        .collect();
    while coordinator.registered() < threads {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20)); // let every thread spin up
    for _ in 0..o.safepoints {
        std::thread::sleep(o.interval);
        let guard = coordinator.begin("Cleanup").expect("begin");
        black_box(guard.id()); // the operation: trivial, as in the reference
        guard.end();
    }
    let stats = coordinator.stats();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    stats
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn ratio(old: u64, new: u64) -> String {
    if new == 0 {
        "-".into()
    } else {
        format!("{:.1}x", old as f64 / new as f64)
    }
}

fn print(threads: usize, new: &SafepointStats, old: &SafepointStats) {
    println!(
        "\n{threads} busy threads, {} safepoints each (us)",
        new.count
    );
    println!(
        "{:<9} | {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>7} {:>7}",
        "", "new p50", "p90", "p99", "max", "old p50", "p90", "p99", "max", "old/new", "p99"
    );
    let rows: [(&str, &Percentiles, &Percentiles); 4] = [
        ("reaching", &new.reaching, &old.reaching),
        ("at", &new.at, &old.at),
        ("leaving", &new.leaving, &old.leaving),
        ("total", &new.total, &old.total),
    ];
    for (name, n, l) in rows {
        println!(
            "{:<9} | {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>7} {:>7}",
            name,
            us(n.p50),
            us(n.p90),
            us(n.p99),
            us(n.max),
            us(l.p50),
            us(l.p90),
            us(l.p99),
            us(l.max),
            ratio(l.p50, n.p50),
            ratio(l.p99, n.p99)
        );
    }
    if let (Some(n), Some(l)) = (&new.last, &old.last) {
        println!("last new:    {n}");
        println!("last legacy: {l}");
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
    println!(
        "safepoint latency: {cores} cores, one safepoint every {} ms, trivial operation",
        o.interval.as_millis()
    );
    for &threads in &o.threads {
        let new = run(Strategy::WaitBarrier, threads, &o);
        let old = run(Strategy::Legacy, threads, &o);
        print(threads, &new, &old);
    }
    ExitCode::SUCCESS
}
