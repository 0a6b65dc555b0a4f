//! Concurrent pauses against the number of roots: a mutator holds N
//! objects (half in a root table its binding reports, half in handles)
//! while a collector thread runs concurrent cycles back to back, and the
//! mutator allocates garbage and rewrites root entries, polling once per
//! iteration of its loop (at its back edge, as a compiled VM polls). For N = 10k, 100k and 1M, in one run, with the root tables
//! visited after the pauses ([`RootTableVisit::Concurrent`], the default)
//! and in them ([`RootTableVisit::InPause`], the baseline), it prints the
//! percentiles of Pause Mark Start and Pause Relocate Start, the
//! safepoints' total (reaching + at + leaving) and the part at the
//! safepoint, how many table entries were marked after Pause Mark Start,
//! and how many objects were relocated for the tables after Pause Relocate
//! Start (by the GC thread or the mutator reading an entry first).
//!
//! With `--registered finalizers`, every kept object is also registered
//! for finalization (it stays reachable, so nothing is queued): the
//! registry is a weak root that a concurrent cycle keeps out of Pause
//! Mark End and Pause Relocate Start, and this shows whether it does.
//!
//! The kept objects are allocated among garbage (one in four kept), so
//! their pages are worth evacuating and every cycle relocates some of
//! them: in the pauses that costs copying (within Pause Relocate Start's
//! 1 MiB budget) and updating every entry; after them, a state change per
//! table.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example root_pauses -- \
//!     [--roots 10000,100000,1000000] [--cycles 12] [--visit both|concurrent|in-pause]
//!     [--generations single|young] [--registered none|finalizers]
//! ```
//!
//! `--generations young` runs the concurrent collector's young and old
//! cycles (three young for each full one) instead of full cycles only.
//!
//! ```text
//! ```

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::safepoint::Histogram;
use hotmem::{CollectorMode, HeapSizing, RootTableVisit, Runtime};
use hotmem_examples::back_to_back::{CycleArgs, counts, us, wait_until_ready};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What else the kept objects are registered for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Registered {
    /// Nothing.
    None,
    /// Finalization ([`Runtime::register_finalizer`]).
    Finalizers,
}

struct Options {
    roots: Vec<usize>,
    visits: Vec<RootTableVisit>,
    registered: Registered,
    cycles: CycleArgs,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        roots: vec![10_000, 100_000, 1_000_000],
        visits: vec![RootTableVisit::Concurrent, RootTableVisit::InPause],
        registered: Registered::None,
        cycles: CycleArgs::default(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        if o.cycles.take(&arg, &mut value)? {
            continue;
        }
        match arg.as_str() {
            "--roots" => o.roots = counts("--roots", &value()?)?,
            "--visit" => {
                o.visits = match value()?.as_str() {
                    "both" => vec![RootTableVisit::Concurrent, RootTableVisit::InPause],
                    "concurrent" => vec![RootTableVisit::Concurrent],
                    "in-pause" => vec![RootTableVisit::InPause],
                    v => return Err(format!("--visit: {v}? (both|concurrent|in-pause)")),
                }
            }
            "--registered" => {
                o.registered = match value()?.as_str() {
                    "none" => Registered::None,
                    "finalizers" => Registered::Finalizers,
                    v => return Err(format!("--registered: {v}? (none|finalizers)")),
                }
            }
            "-h" | "--help" => {
                return Err(
                    "usage: root_pauses [--roots 10000,100000,1000000] [--cycles 12] \
                            [--visit both|concurrent|in-pause] [--generations single|young] \
                            [--registered none|finalizers]"
                        .into(),
                );
            }
            a => return Err(format!("unknown argument {a}")),
        }
    }
    o.cycles.check()?;
    Ok(o)
}

/// What one configuration measured.
struct Measured {
    mark_start: Histogram,
    mark_end: Histogram,
    relocate_start: Histogram,
    total: hotmem::safepoint::Percentiles,
    at: hotmem::safepoint::Percentiles,
    relocated_for_tables: u64,
    table_entries: u64,
    wall_ms: f64,
}

fn run(
    n: usize,
    visit: RootTableVisit,
    registered: Registered,
    cycles: CycleArgs,
) -> Result<Measured, String> {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(1 << 30)
        .collector(CollectorMode::Concurrent)
        .generations(cycles.generations)
        .root_table_visit(visit)
        // Cycles run when the collector thread asks, not on the budget.
        .heap_sizing(HeapSizing::Maximum)
        .numa(hotmem::NumaConfig::Off)
        .binding(objects.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let mutator = {
        let (rt, objects, stop, ready) = (rt.clone(), objects.clone(), stop.clone(), ready.clone());
        std::thread::spawn(move || -> Result<(), String> {
            let mut me = rt.attach_mutator().map_err(|e| e.to_string())?;
            let table = objects.root_table();
            let mut ids = Ids::from(1);
            let mut handles = Vec::with_capacity(n / 2);
            for i in 0..4 * n {
                let obj =
                    build::object(&mut me, &table, 0, 2, ids.next()).map_err(|e| e.to_string())?;
                if i % 4 == 0 && registered == Registered::Finalizers {
                    rt.register_finalizer(obj).map_err(|e| e.to_string())?;
                }
                if i % 4 != 0 {
                    table.pop();
                } else if (i / 4) % 2 == 1 {
                    let r = table.pop().expect("just pushed");
                    handles.push(me.handle(r));
                }
            }
            ready.store(true, Ordering::Release);
            let garbage = objects.root_table();
            let mut k = 0usize;
            while !stop.load(Ordering::Relaxed) {
                // Garbage, and a root entry rewritten now and then: what a
                // VM's globals see.
                build::object(&mut me, &garbage, 1, 4, ids.next()).map_err(|e| e.to_string())?;
                garbage.pop();
                k = k.wrapping_add(7919);
                if k.is_multiple_of(64) {
                    let (a, b) = (k % table.len(), (k / 64) % table.len());
                    let (x, y) = (table.get(a), table.get(b));
                    table.set(a, y);
                    table.set(b, x);
                }
                // The loop's back edge: a compiled VM polls here.
                me.poll();
            }
            drop(handles);
            Ok(())
        })
    };
    wait_until_ready(&ready, &mutator);
    let started = Instant::now();
    let mut m = Measured {
        mark_start: Histogram::new(),
        mark_end: Histogram::new(),
        relocate_start: Histogram::new(),
        total: Default::default(),
        at: Default::default(),
        relocated_for_tables: 0,
        table_entries: 0,
        wall_ms: 0.0,
    };
    cycles.run(&rt, &mutator, |c, counted| {
        if counted {
            m.mark_start.record(c.mark_start_ns);
            m.mark_end.record(c.mark_end_ns);
            if c.relocate_start_ns > 0 {
                m.relocate_start.record(c.relocate_start_ns);
            }
        }
        m.relocated_for_tables += c.relocated_for_root_tables;
        m.table_entries += c.root_table_entries;
    })?;
    m.wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let sp = rt.safepoints().stats();
    m.total = sp.total;
    m.at = sp.at;
    stop.store(true, Ordering::Relaxed);
    mutator.join().map_err(|_| "the mutator panicked")??;
    Ok(m)
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
        "root_pauses: concurrent collector ({}), 1 mutator, {} cycles per configuration (the first 2 left out of the pause percentiles){}",
        o.cycles.describe(),
        o.cycles.cycles,
        match o.registered {
            Registered::None => "",
            Registered::Finalizers => "; every kept object registered for finalization",
        }
    );
    println!(
        "{:>9} {:>10} | {:>27} | {:>27} | {:>27} | {:>27} | {:>13} | {:>13} {:>11} | {:>7}",
        "roots",
        "tables",
        "Pause Mark Start p50/p99/max",
        "Pause Mark End p50/p99/max",
        "Relocate Start p50/p99/max",
        "safepoint total p50/p99/max",
        "at p50/p99 us",
        "entries after",
        "relocated",
        "wall ms"
    );
    for &n in &o.roots {
        for &visit in &o.visits {
            match run(n, visit, o.registered, o.cycles) {
                Ok(m) => println!(
                    "{:>9} {:>10} | {:>8.0} {:>8.0} {:>8.0} us | {:>8.0} {:>8.0} {:>8.0} us | {:>8.0} {:>8.0} {:>8.0} us | {:>8.0} {:>8.0} {:>8.0} us | {:>6.0} {:>6.0} | {:>13} {:>11} | {:>7.0}",
                    n,
                    match visit {
                        RootTableVisit::InPause => "in-pause",
                        _ => "concurrent",
                    },
                    us(m.mark_start.quantile(0.5)),
                    us(m.mark_start.quantile(0.99)),
                    us(m.mark_start.max()),
                    us(m.mark_end.quantile(0.5)),
                    us(m.mark_end.quantile(0.99)),
                    us(m.mark_end.max()),
                    us(m.relocate_start.quantile(0.5)),
                    us(m.relocate_start.quantile(0.99)),
                    us(m.relocate_start.max()),
                    us(m.total.p50),
                    us(m.total.p99),
                    us(m.total.max),
                    us(m.at.p50),
                    us(m.at.p99),
                    m.table_entries,
                    m.relocated_for_tables,
                    m.wall_ms,
                ),
                Err(e) => {
                    eprintln!("{n} roots, {visit:?}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
