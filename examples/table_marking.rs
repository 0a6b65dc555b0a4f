//! Concurrent Mark over roots spread across many root tables, against the
//! number of concurrent GC workers: a heap of `--tables` tables (default
//! 16) of `--entries` objects each (default 50 000, objects without
//! references), no mutator running, and `--cycles` concurrent cycles
//! (default 15) for each worker count of `--workers` (default 1 and 2),
//! in one run. It prints the median, minimum and maximum of Concurrent
//! Mark, and each count's median against one worker's (the baseline).
//!
//! The workers mark the tables' entries themselves, one table per job,
//! before they trace (see
//! [`RuntimeBuilder::concurrent_gc_workers`](hotmem::RuntimeBuilder::concurrent_gc_workers)):
//! with more workers, more tables are marked at once.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example table_marking -- \
//!     [--tables 16] [--entries 50000] [--cycles 15] [--workers 1,2]
//! ```

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{CollectorMode, Generations, HeapSizing, NumaConfig, Runtime};
use hotmem_examples::back_to_back::counts;
use std::process::ExitCode;

struct Options {
    tables: usize,
    entries: usize,
    cycles: usize,
    workers: Vec<usize>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        tables: 16,
        entries: 50_000,
        cycles: 15,
        workers: vec![1, 2],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{arg}: {e}"));
        match arg.as_str() {
            "--tables" => o.tables = number(value()?)?,
            "--entries" => o.entries = number(value()?)?,
            "--cycles" => o.cycles = number(value()?)?,
            "--workers" => o.workers = counts("--workers", &value()?)?,
            "-h" | "--help" => {
                return Err(
                    "usage: table_marking [--tables 16] [--entries 50000] [--cycles 15] [--workers 1,2]"
                        .into(),
                );
            }
            a => return Err(format!("unknown argument {a}")),
        }
    }
    if o.tables == 0 || o.cycles == 0 || o.workers.contains(&0) {
        return Err("--tables, --cycles and every --workers count must be positive".into());
    }
    Ok(o)
}

/// Concurrent Mark's lengths in ms, one per cycle, with `workers`
/// concurrent workers.
fn run(o: &Options, workers: usize) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(1 << 30)
        .numa(NumaConfig::Off)
        .collector(CollectorMode::Concurrent)
        .generations(Generations::Single)
        .gc_workers(o.workers.iter().copied().max().unwrap_or(1))
        .concurrent_gc_workers(workers)
        // Cycles run when this program asks.
        .heap_sizing(HeapSizing::Maximum)
        .binding(objects.clone())
        .build()?;
    let tables: Vec<_> = (0..o.tables).map(|_| objects.root_table()).collect();
    {
        let mut me = rt.attach_mutator()?;
        let mut ids = Ids::from(1);
        for t in &tables {
            for _ in 0..o.entries {
                build::object(&mut me, t, 0, 2, ids.next())?;
            }
        }
    }
    let mut mark = Vec::with_capacity(o.cycles);
    for _ in 0..o.cycles {
        let stats = rt.collect()?;
        let c = stats.concurrent.ok_or("not a concurrent cycle")?;
        let expected = (o.tables * o.entries) as u64;
        if stats.objects_marked != expected {
            return Err(format!("marked {} objects of {expected}", stats.objects_marked).into());
        }
        mark.push(c.concurrent_mark_ns as f64 / 1e6);
    }
    mark.sort_by(f64::total_cmp);
    Ok(mark)
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "table_marking: {} root tables of {} objects, no mutator, {} concurrent cycles per worker count",
        o.tables, o.entries, o.cycles
    );
    println!(
        "{:>8} | {:>26} | {:>9}",
        "workers", "Concurrent Mark med/min/max", "vs first"
    );
    let mut first = None;
    for &w in &o.workers {
        match run(&o, w) {
            Ok(m) => {
                let median = m[m.len() / 2];
                let base = *first.get_or_insert(median);
                println!(
                    "{:>8} | {:>8.2} {:>7.2} {:>7.2} ms | {:>8.2}x",
                    w,
                    median,
                    m[0],
                    m[m.len() - 1],
                    median / base
                );
            }
            Err(e) => {
                eprintln!("{w} workers: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
