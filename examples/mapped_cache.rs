//! The mapped cache (JDK-8350441) against the page cache it replaced, and
//! against the system allocator, on a heap of mixed page sizes: each round
//! frees about half of the pages (small, medium and large interleaved) and
//! allocates again up to the fill level in another mix of sizes. The same
//! seed, the same sizes and the same frees in every mode, one after the
//! other in one run.
//!
//! Prints per mode: allocations, cache hits and splits, merges, harvests
//! (Page Cache Flush: ops and MiB), the heap's map + unmap system calls on
//! the allocation path and on the free path (defragment), and the latency
//! of the allocation calls (p50, p99, p99.9, max); then the p99 ratio.
//!
//! Two fill levels by default: 90% (a collector that starts before the
//! heap is full, as ZGC's triggers do) and 100% (every round runs the heap
//! to exhaustion, where the last pages must be assembled from the holes
//! between live pages: the floor of any allocator that does not move live
//! pages).
//!
//! `cargo run --release -p hotmem-examples --example mapped_cache -- [--rounds N] [--heap-mib N] [--fill PERCENT[,PERCENT...]]`

#![allow(missing_docs)]

#[path = "mixed_pages.rs"]
mod mixed_pages;

use mixed_pages::{Backend, MixedPages, Outcome};
use std::time::Duration;

struct Args {
    rounds: u64,
    heap_mib: usize,
    fills: Vec<usize>,
}

fn args() -> Args {
    let mut a = Args {
        rounds: 3000,
        heap_mib: 256,
        fills: vec![90, 100],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().expect("flag needs a value");
        let number = |v: &str| v.parse::<u64>().expect("flag needs a number");
        match flag.as_str() {
            "--rounds" => a.rounds = number(&value),
            "--heap-mib" => a.heap_mib = number(&value) as usize,
            "--fill" => a.fills = value.split(',').map(|v| number(v) as usize).collect(),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        a.rounds > 0 && a.fills.iter().all(|&f| f > 0 && f <= 100),
        "rounds positive, fill in 1..=100"
    );
    a
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn row(name: &str, runs: &[(Backend, Outcome)], f: &dyn Fn(&Outcome) -> String) {
    print!("  {name:<44}");
    for (_, o) in runs {
        print!("{:>14}", f(o));
    }
    println!();
}

fn main() {
    let a = args();
    println!(
        "mapped_cache: {} MiB heap, {} rounds: free about half of the pages (small, medium, large interleaved), \
         allocate again to the fill level in the next mix (small-heavy, medium-heavy, large-heavy)",
        a.heap_mib, a.rounds
    );
    for &fill in &a.fills {
        println!("\n== filled to {fill}% ==");
        table(&a, fill);
    }
}

fn table(a: &Args, fill: usize) {
    let runs: Vec<(Backend, Outcome)> = Backend::ALL
        .into_iter()
        .map(|b| (b, MixedPages::new(b, a.heap_mib, fill).run_rounds(a.rounds)))
        .collect();
    print!("  {:<44}", "");
    for (b, _) in &runs {
        print!("{:>14}", b.name());
    }
    println!();
    let counter = |f: fn(&hotmem_page::CounterSnapshot) -> u64| {
        move |o: &Outcome| o.counters.map_or("-".to_string(), |c| f(&c).to_string())
    };
    row("allocations", &runs, &|o| o.latencies_ns.len().to_string());
    row("allocated (MiB)", &runs, &|o| (o.bytes >> 20).to_string());
    row("cache hits", &runs, &counter(|c| c.cache_hits));
    row("  of which splits", &runs, &counter(|c| c.cache_splits));
    row("merges", &runs, &counter(|c| c.cache_merges));
    row(
        "harvests (Page Cache Flush, ops)",
        &runs,
        &counter(|c| c.cache_flush_ops),
    );
    row(
        "harvested (Page Cache Flush, MiB)",
        &runs,
        &counter(|c| c.cache_flush_bytes >> 20),
    );
    row("defragment (ops)", &runs, &counter(|c| c.defragment_ops));
    let syscalls = |f: fn(&Outcome) -> u64| {
        move |o: &Outcome| match o.counters {
            Some(_) => f(o).to_string(),
            None => "-".to_string(),
        }
    };
    row(
        "map+unmap calls, allocation path",
        &runs,
        &syscalls(|o| o.alloc_remaps),
    );
    row(
        "map+unmap calls, free path",
        &runs,
        &syscalls(|o| o.free_remaps),
    );
    for (name, q) in [
        ("allocation latency p50 (us)", 0.5),
        ("allocation latency p99 (us)", 0.99),
        ("allocation latency p99.9 (us)", 0.999),
        ("allocation latency max (us)", 1.0),
    ] {
        row(name, &runs, &|o| format!("{:.2}", us(o.quantile(q))));
    }
    let p99 = |i: usize| us(runs[i].1.quantile(0.99));
    let harvest_share = |i: usize| {
        runs[i].1.counters.map_or(0.0, |c| {
            100.0 * c.cache_flush_bytes as f64 / c.page_bytes_allocated.max(1) as f64
        })
    };
    println!(
        "p99 Mapped / PageCache: {:.3}; Mapped / System: {:.3}; harvested / allocated: Mapped {:.2}%, PageCache {:.2}%",
        p99(0) / p99(1),
        p99(0) / p99(2),
        harvest_share(0),
        harvest_share(1)
    );
}
