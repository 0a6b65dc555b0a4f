//! Soak test of the whole runtime: `cargo xtask soak [--secs N]`.
//!
//! 16 mutator threads build and drop object graphs (lists, trees, arrays of
//! shared references, cycles) and class loaders without pause; collections
//! run periodically and on allocation failure; another thread requests
//! handshakes and NMT reports all the time. By default the runtime has
//! young collections (`--generations single` for full ones only): the
//! objects' reference stores go through the store barrier, and the
//! periodic collections are three young ones to one full one. Every few
//! seconds, at a safepoint, it checks the invariants: the whole reachable
//! graph against what the threads built (every payload checksum, every
//! reference), NMT's totals against the allocators' own accounting, the
//! metaspace's `verify()` and the heap's invariants. At the
//! end it drops the runtime and checks that nothing leaked: no mapping of
//! the runtime left, NMT at zero, resident memory back near the start.
//!
//! `--report DIR` writes `DIR/index.html`, charts of the run (see the
//! README); `HOTMEM_LOG=gc*=info,safepoint=info` prints the GC log.

use hotmem::nmt::Scale;
use hotmem::objects::SimpleObjects;
use hotmem::os::{MemTag, procfs};
use hotmem::{MetadataType, NumaConfig, Runtime};
use hotmem_examples::workload::{self, Counters, RunArgs, parse_args};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: soak [--secs N] [--threads N] [--heap MIB] [--numa detect|off|synthetic:DESC] [--generations young|single] [--collector stw|concurrent] [--page-cache mapped|page] [--root-tables concurrent|in-pause] [--young-in-full paced|each-round|never] [--report DIR]";

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix(field)?
                    .strip_prefix(':')?
                    .split_whitespace()
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
        })
        .unwrap_or(0)
        * 1024
}

/// The invariants, checked with the world stopped.
fn check(rt: &Runtime, c: &Counters) -> Result<usize, String> {
    // SAFETY: called at a safepoint, serialized with collections.
    let live = unsafe { workload::check_graphs(rt, c) }?.objects;
    let nmt = rt.nmt();
    let heap = nmt.totals(MemTag::JAVA_HEAP);
    if heap.committed != rt.heap().committed_bytes() || heap.reserved != rt.heap().reserved().len()
    {
        return Err(format!(
            "NMT heap {heap:?} != heap committed {} reserved {}",
            rt.heap().committed_bytes(),
            rt.heap().reserved().len()
        ));
    }
    for (tag, ty) in [
        (MemTag::CLASS, MetadataType::Class),
        (MemTag::METASPACE, MetadataType::NonClass),
    ] {
        let space = rt.metaspace().space(ty);
        let t = nmt.totals(tag);
        if t.committed != space.committed_bytes() || t.reserved != space.reserved_bytes() {
            return Err(format!(
                "NMT {tag} {t:?} != space committed {} reserved {}",
                space.committed_bytes(),
                space.reserved_bytes()
            ));
        }
    }
    rt.metaspace()
        .verify()
        .map_err(|e| format!("metaspace: {e}"))?;
    rt.heap().check_invariants();
    Ok(live)
}

fn main() {
    let defaults = RunArgs {
        threads: 16,
        secs: 60.0,
        heap_mib: 256,
        numa: NumaConfig::Detect,
        json: None,
        report: None,
        generations: hotmem::Generations::YoungAndOld,
        collector: hotmem::CollectorMode::Concurrent,
        page_cache: hotmem::page::CacheMode::Mapped,
        root_tables: hotmem::RootTableVisit::Concurrent,
        young_in_full: hotmem::YoungInFull::Never,
        full: None,
    };
    let args = match parse_args(USAGE, defaults) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match soak(&args) {
        Ok(()) => println!("soak: PASSED"),
        Err(e) => {
            eprintln!("soak: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn soak(args: &RunArgs) -> Result<(), Box<dyn std::error::Error>> {
    let rss_start = status_bytes("VmRSS");
    let objects = SimpleObjects::new();
    let (log, recorder) = hotmem_examples::log_and_recorder(args.report.is_some(), || {
        format!(
            "hotmem soak: {} mutator threads, {:.0} s, heap {} MiB",
            args.threads, args.secs, args.heap_mib
        )
    })?;
    let rt = Runtime::builder()
        .heap_max(args.heap_mib << 20)
        .numa(args.numa.clone())
        .uncommit_delay(Duration::from_secs(2))
        .log(log)
        .generations(args.generations)
        .collector(args.collector)
        .page_cache(args.page_cache)
        .root_table_visit(args.root_tables)
        .young_in_full(args.young_in_full)
        .binding(objects.clone())
        .build()?;
    let sampling = match &recorder {
        Some(r) => Some(r.sample(&rt, Duration::from_millis(250))?),
        None => None,
    };
    println!(
        "soak: {} mutators for {:.0} s on a {} MiB heap ({} partition(s), {} GC workers); RSS at start {} MiB",
        args.threads,
        args.secs,
        args.heap_mib,
        rt.partitions().len(),
        rt.gc_workers(),
        rss_start >> 20
    );
    let c = Arc::new(Counters::default());
    let workload = workload::start(
        &rt,
        &objects,
        &c,
        args.threads,
        "soak-mutator",
        0x51_7CC1_B727,
        Duration::from_millis(100),
    )?;
    let reports = Arc::new(AtomicU64::new(0));
    let reporter = {
        let (rt, c, reports) = (rt.clone(), c.clone(), reports.clone());
        std::thread::spawn(move || {
            let mut text = String::with_capacity(16 << 10);
            while !c.stop.load(Relaxed) {
                let h = c.clone();
                // A safepoint may be in progress: then this round is skipped.
                let _ = rt.safepoints().handshake_all(move |_| {
                    h.handshakes.fetch_add(1, Relaxed);
                });
                text.clear();
                let _ = rt.nmt().write_summary(&mut text, Scale::Kilo);
                let _ = writeln!(text, "{}", rt.report().sections().len());
                reports.fetch_add(1, Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.secs);
    let mut checks = 0;
    while Instant::now() < deadline {
        std::thread::sleep(
            Duration::from_secs(2).min(deadline.saturating_duration_since(Instant::now())),
        );
        let live = rt.run_at_safepoint("soak-check", || check(&rt, &c))??;
        checks += 1;
        let gc = rt.gc_totals();
        println!(
            "[{:5.1}s] invariants OK: the reachable graph ({live} objects) is what was built; {} collections ({} young), {} MiB allocated, {} loaders, {} handshake ops, {} reports, RSS {} MiB",
            start.elapsed().as_secs_f64(),
            gc.cycles,
            gc.young_collections,
            c.bytes.load(Relaxed) >> 20,
            c.loaders.load(Relaxed),
            c.handshakes.load(Relaxed),
            reports.load(Relaxed),
            status_bytes("VmRSS") >> 20
        );
    }
    c.stop.store(true, Relaxed);
    let loaders = workload.join()?;
    reporter.join().map_err(|_| "the reporter panicked")?;
    if let Some(r) = &recorder {
        // The seed 004 story: the metaspaces while the last loaders live,
        // and once they have died.
        r.snapshot_spaces(&rt, &format!("with {} loaders alive", loaders.len()));
    }
    drop(loaders);
    if let Some(r) = &recorder {
        r.snapshot_spaces(&rt, "after the loaders died");
    }
    rt.collect()?;
    let live = rt.run_at_safepoint("soak-final-check", || check(&rt, &c))??;
    let gc = rt.gc_totals();
    if let (Some(r), Some(dir)) = (&recorder, &args.report) {
        drop(sampling);
        let page = r.finish(&rt, dir)?;
        println!("report: {}", page.display());
    }

    // Leaks: every mapping NMT knew of must go with the runtime.
    let nmt = rt.nmt().clone();
    let ours = rt.reserved_ranges();
    drop(rt);
    drop(objects);
    let maps = procfs::smaps()?;
    let left = ours
        .iter()
        .filter(|r| maps.iter().any(|m| m.range.overlaps(**r)))
        .count();
    let nmt_left: usize = [
        MemTag::JAVA_HEAP,
        MemTag::CLASS,
        MemTag::METASPACE,
        MemTag::INTERNAL,
        MemTag::THREAD_STACK,
    ]
    .iter()
    .map(|t| nmt.totals(*t).reserved)
    .sum();
    let rss_end = status_bytes("VmRSS");
    let peak = status_bytes("VmHWM");
    println!(
        "\nsoak figures: {:.1} s, {} objects ({} MiB) allocated, {} collections ({} on allocation failure, {} objects / {} MiB relocated, max pause {:.2} ms), {} class loaders, {} handshake operations, {} NMT reports, {} invariant checks (last: {live} objects), {} heap and {} metaspace out-of-memory recoveries",
        start.elapsed().as_secs_f64(),
        c.objects.load(Relaxed),
        c.bytes.load(Relaxed) >> 20,
        gc.cycles,
        gc.allocation_failures,
        gc.objects_relocated,
        gc.bytes_relocated >> 20,
        gc.max_pause_ns as f64 / 1e6,
        c.loaders.load(Relaxed),
        c.handshakes.load(Relaxed),
        reports.load(Relaxed),
        checks + 1,
        c.out_of_memory.load(Relaxed),
        c.metaspace_full.load(Relaxed),
    );
    println!(
        "memory: RSS {} MiB at start, peak {} MiB, {} MiB at the end; runtime reservations (heap, class space, metaspace) still mapped: {left} of {}; NMT bytes left: {nmt_left}",
        rss_start >> 20,
        peak >> 20,
        rss_end >> 20,
        ours.len()
    );
    if left != 0 || nmt_left != 0 {
        return Err(format!(
            "leak: {left} mapping(s) and {nmt_left} NMT bytes left after dropping the runtime"
        )
        .into());
    }
    // Malloc arenas and cached thread stacks may keep a little; the heap and
    // metaspace (hundreds of MiB at peak) must be gone.
    if rss_end > rss_start + (32 << 20) {
        return Err(format!(
            "resident memory did not come back: {} MiB -> {} MiB",
            rss_start >> 20,
            rss_end >> 20
        )
        .into());
    }
    Ok(())
}
