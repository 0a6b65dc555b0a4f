//! Concurrent pauses of an interning program against the size of its weak
//! table: a mutator interns keys (looks each up, allocates and inserts the
//! ones it does not find) in a table of N entries, a quarter of which it
//! keeps alive at a time, while a collector thread runs concurrent cycles
//! back to back. For N = 10k, 100k and 1M, in one run, the table is the
//! runtime's [`WeakSet`](hotmem::WeakSet) (swept and forwarded after the
//! pauses) and, the baseline, the binding's own map processed by its weak
//! hooks ([`HookedObjects`]: [`Binding::process_weak_refs`](hotmem::Binding::process_weak_refs)
//! in Pause Mark End, [`Binding::forward_weak_refs`](hotmem::Binding::forward_weak_refs)
//! in Pause Relocate Start), as a VM's
//! string table was before the runtime had sets, a map of the runtime's
//! weak handles (cleared after Pause Mark End when nothing is to be
//! finalized) and one of its ephemerons (retained during marking, the
//! dead pairs cleared after Pause Mark End, forwarded after Pause Relocate
//! Start). It prints the
//! percentiles of Pause Mark End and Pause Relocate Start, the
//! safepoints' total (reaching + at + leaving), and the mutator's
//! lookups per second.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example weak_pauses -- \
//!     [--entries 10000,100000,1000000] [--cycles 12] [--table all|set|hooks|handles|ephemerons]
//!     [--generations single|young]
//! ```

use hotmem::objects::{HookedObjects, Ids, RootTable, SimpleObjects, build};
use hotmem::safepoint::Histogram;
use hotmem::{
    CollectorMode, Ephemeron, HeapSizing, Mutator, ObjectReference, Runtime, WeakHandle, WeakSet,
};
use hotmem_examples::back_to_back::{CycleArgs, counts, us, wait_until_ready};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Where the interned objects are found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Table {
    /// The runtime's weak set.
    Set,
    /// The binding's map, swept and forwarded by its weak hooks in the
    /// pauses: the baseline.
    Hooks,
    /// A map of the runtime's weak handles (`WeakHandle` per key), which
    /// a concurrent cycle clears after Pause Mark End when nothing is to
    /// be finalized, and forwards after Pause Relocate Start.
    Handles,
    /// A map of the runtime's ephemerons (the object as key and value):
    /// their values retained during concurrent marking, the dead pairs
    /// cleared after Pause Mark End, their forwarding after Pause Relocate
    /// Start.
    Ephemerons,
}

struct Options {
    entries: Vec<usize>,
    tables: Vec<Table>,
    cycles: CycleArgs,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        entries: vec![10_000, 100_000, 1_000_000],
        tables: vec![Table::Set, Table::Hooks, Table::Handles, Table::Ephemerons],
        cycles: CycleArgs::default(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        if o.cycles.take(&arg, &mut value)? {
            continue;
        }
        match arg.as_str() {
            "--entries" => o.entries = counts("--entries", &value()?)?,
            "--table" => {
                o.tables = match value()?.as_str() {
                    "all" => vec![Table::Set, Table::Hooks, Table::Handles, Table::Ephemerons],
                    "set" => vec![Table::Set],
                    "hooks" => vec![Table::Hooks],
                    "handles" => vec![Table::Handles],
                    "ephemerons" => vec![Table::Ephemerons],
                    v => {
                        return Err(format!("--table: {v}? (all|set|hooks|handles|ephemerons)"));
                    }
                }
            }
            "-h" | "--help" => {
                return Err(
                    "usage: weak_pauses [--entries 10000,100000,1000000] [--cycles 12] \
                            [--table all|set|hooks|handles|ephemerons] [--generations single|young]"
                        .into(),
                );
            }
            a => return Err(format!("unknown argument {a}")),
        }
    }
    o.cycles.check()?;
    Ok(o)
}

/// The maps of the tables that are not the runtime's weak set: the
/// binding's (processed by its weak hooks), and maps of the runtime's weak
/// handles and ephemerons.
struct Maps {
    hooks: Arc<HookedObjects>,
    handles: Mutex<HashMap<u64, WeakHandle>>,
    ephemerons: Mutex<HashMap<u64, Ephemeron>>,
}

/// The id in an object's header.
///
/// # Safety
/// `obj` is live, read since the mutator's last call that may collect.
unsafe fn id_of(obj: ObjectReference) -> u64 {
    // SAFETY: the caller's.
    unsafe { SimpleObjects::header(obj)[1] }
}

/// The object interned under `key`, found or made now.
fn intern(
    me: &mut Mutator,
    table: Table,
    set: &WeakSet,
    maps: &Maps,
    scratch: &RootTable,
    key: u64,
) -> Result<ObjectReference, String> {
    let found = match table {
        Table::Set => set
            .find(me, key, |o| {
                // SAFETY: the set hands the equality live objects at their
                // current addresses.
                unsafe { id_of(o) == key }
            })
            .map_err(|e| e.to_string())?,
        Table::Hooks => maps.hooks.find(me, key),
        // A weak handle's read keeps its object alive for a marking itself.
        Table::Handles => maps.handles.lock().get(&key).and_then(WeakHandle::get),
        // So does an ephemeron's.
        Table::Ephemerons => maps.ephemerons.lock().get(&key).and_then(Ephemeron::value),
    };
    if let Some(o) = found {
        return Ok(o);
    }
    let obj = build::object(me, scratch, 0, 2, key).map_err(|e| e.to_string())?;
    scratch.pop();
    match table {
        Table::Set => set.insert(me, key, obj).map_err(|e| e.to_string())?,
        Table::Hooks => maps.hooks.insert(key, obj),
        Table::Handles => drop(
            maps.handles
                .lock()
                .insert(key, me.runtime().weak_handle(obj)),
        ),
        Table::Ephemerons => drop(
            maps.ephemerons
                .lock()
                .insert(key, me.runtime().ephemeron(obj, obj)),
        ),
    }
    Ok(obj)
}

/// What one configuration measured.
struct Measured {
    mark_end: Histogram,
    relocate_start: Histogram,
    total: hotmem::safepoint::Percentiles,
    lookups_per_s: f64,
    interned: u64,
}

fn run(n: usize, table: Table, cycles: CycleArgs) -> Result<Measured, String> {
    let objects = SimpleObjects::new();
    let maps = Arc::new(Maps {
        hooks: HookedObjects::new(objects.clone()),
        handles: Mutex::new(HashMap::new()),
        ephemerons: Mutex::new(HashMap::new()),
    });
    let rt = Runtime::builder()
        .heap_max(1 << 30)
        .collector(CollectorMode::Concurrent)
        .generations(cycles.generations)
        // Cycles run when the collector thread asks, not on the budget.
        .heap_sizing(HeapSizing::Maximum)
        .numa(hotmem::NumaConfig::Off)
        .binding(maps.hooks.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let set = rt.weak_set();
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));
    let mutator = {
        let (rt, set, maps) = (rt.clone(), set.clone(), maps.clone());
        let (stop, ready, lookups) = (stop.clone(), ready.clone(), lookups.clone());
        std::thread::spawn(move || -> Result<(), String> {
            let mut me = rt.attach_mutator().map_err(|e| e.to_string())?;
            let scratch = objects.root_table();
            // A quarter of the keys alive at a time: a ring of roots.
            let kept = objects.root_table();
            let ring = (n / 4).max(1);
            let mut ids = Ids::from(1 << 40);
            let mut key = 0u64;
            let mut i = 0usize;
            loop {
                // Every key once, then keys at random (a multiplicative
                // walk): found while kept, made again after.
                key = match i < n {
                    true => i as u64,
                    false => key
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407),
                };
                let k = key % n as u64;
                let obj = intern(&mut me, table, &set, &maps, &scratch, k)?;
                match kept.len() < ring {
                    true => drop(kept.push(Some(obj))),
                    false => drop(kept.set(i % ring, Some(obj))),
                }
                i += 1;
                if i == n {
                    ready.store(true, Ordering::Release);
                }
                if i.is_multiple_of(64) {
                    // Garbage besides, so that pages are worth evacuating.
                    build::garbage(&mut me, &scratch, 8, &mut ids).map_err(|e| e.to_string())?;
                    lookups.store(i as u64, Ordering::Relaxed);
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                }
                // The loop's back edge: a compiled VM polls here.
                me.poll();
            }
        })
    };
    wait_until_ready(&ready, &mutator);
    let started = Instant::now();
    let before = lookups.load(Ordering::Relaxed);
    let mut m = Measured {
        mark_end: Histogram::new(),
        relocate_start: Histogram::new(),
        total: Default::default(),
        lookups_per_s: 0.0,
        interned: 0,
    };
    cycles.run(&rt, &mutator, |c, counted| {
        if counted {
            m.mark_end.record(c.mark_end_ns);
            if c.relocate_start_ns > 0 {
                m.relocate_start.record(c.relocate_start_ns);
            }
        }
    })?;
    m.lookups_per_s =
        (lookups.load(Ordering::Relaxed) - before) as f64 / started.elapsed().as_secs_f64();
    m.total = rt.safepoints().stats().total;
    m.interned = match table {
        Table::Set => set.len() as u64,
        Table::Hooks => maps.hooks.len() as u64,
        Table::Handles => maps
            .handles
            .lock()
            .values()
            .filter(|w| !w.is_cleared())
            .count() as u64,
        Table::Ephemerons => maps
            .ephemerons
            .lock()
            .values()
            .filter(|e| e.get().is_some())
            .count() as u64,
    };
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
        "weak_pauses: concurrent collector ({}), 1 mutator interning, {} cycles per configuration (the first 2 left out of the pause percentiles)",
        o.cycles.describe(),
        o.cycles.cycles
    );
    println!(
        "{:>9} {:>9} | {:>27} | {:>27} | {:>27} | {:>12} | {:>9}",
        "entries",
        "table",
        "Pause Mark End p50/p99/max",
        "Relocate Start p50/p99/max",
        "safepoint total p50/p99/max",
        "lookups/s",
        "in table"
    );
    for &n in &o.entries {
        for &table in &o.tables {
            match run(n, table, o.cycles) {
                Ok(m) => println!(
                    "{:>9} {:>9} | {:>8.0} {:>8.0} {:>8.0} us | {:>8.0} {:>8.0} {:>8.0} us | {:>8.0} {:>8.0} {:>8.0} us | {:>12.0} | {:>9}",
                    n,
                    match table {
                        Table::Set => "weak set",
                        Table::Hooks => "hooks",
                        Table::Handles => "handles",
                        Table::Ephemerons => "ephemerons",
                    },
                    us(m.mark_end.quantile(0.5)),
                    us(m.mark_end.quantile(0.99)),
                    us(m.mark_end.max()),
                    us(m.relocate_start.quantile(0.5)),
                    us(m.relocate_start.quantile(0.99)),
                    us(m.relocate_start.max()),
                    us(m.total.p50),
                    us(m.total.p99),
                    us(m.total.max),
                    m.lookups_per_s,
                    m.interned,
                ),
                Err(e) => {
                    eprintln!("{n} entries, {table:?}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
