//! One run of the demo (`cargo xtask demo`), written to any output so that
//! a test can run it in-process: mutator threads build and drop object
//! graphs on a generational runtime for a while, the whole reachable graph
//! is verified, and the run ends on one screen: the verdict, a short
//! summary and where the report page and the full text report are.

use crate::workload::{self, Counters, RunArgs};
use hotmem::objects::SimpleObjects;
use hotmem::{ArenaKind, Runtime};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// The demo's flags.
pub const USAGE: &str = "usage: demo [--threads N] [--secs S] [--heap MIB] [--numa detect|off|synthetic:DESC] \
                         [--generations young|single] [--collector stw|concurrent] [--page-cache mapped|page] [--root-tables concurrent|in-pause] [--young-in-full paced|each-round|never] [--json] [--report DIR] [--full]";

/// Where the report page goes unless `--report DIR` says otherwise.
pub fn default_report_dir() -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"));
    examples
        .parent()
        .unwrap_or(examples)
        .join("target/hotmem-report")
}

/// The demo's defaults: 4 threads, 12 s, 256 MiB, NUMA detected, the
/// concurrent collector with young and old generations (the runtime's
/// default), the report page in [`default_report_dir`].
pub fn defaults() -> RunArgs {
    RunArgs {
        threads: 4,
        secs: 12.0,
        heap_mib: 256,
        numa: hotmem::NumaConfig::Detect,
        json: Some(false),
        report: Some(default_report_dir()),
        generations: hotmem::Generations::YoungAndOld,
        collector: hotmem::CollectorMode::Concurrent,
        page_cache: hotmem::page::CacheMode::Mapped,
        root_tables: hotmem::RootTableVisit::Concurrent,
        young_in_full: hotmem::YoungInFull::Never,
        full: Some(false),
    }
}

/// Parses the command line over [`defaults`].
///
/// # Errors
/// The message to print, with [`USAGE`].
pub fn parse_args() -> Result<RunArgs, String> {
    workload::parse_args(USAGE, defaults())
}

/// What a run found, for callers that check it.
#[derive(Debug)]
pub struct Outcome {
    /// Reachable objects verified at the end.
    pub verified_objects: usize,
    /// The report page, if one was written.
    pub page: Option<PathBuf>,
}

/// Runs the demo with `args`, writing its lines to `out`.
///
/// # Errors
/// A failed verification or a part that could not run, as text.
pub fn run(args: &RunArgs, out: &mut dyn Write) -> Result<Outcome, Box<dyn std::error::Error>> {
    let objects = SimpleObjects::new();
    let (log, recorder) = crate::log_and_recorder(args.report.is_some(), || {
        format!(
            "hotmem demo: {} mutator threads, {:.0} s, heap {} MiB",
            args.threads, args.secs, args.heap_mib
        )
    })?;
    let rt = Runtime::builder()
        .heap_max(args.heap_mib << 20)
        .numa(args.numa.clone())
        .log(log)
        .generations(args.generations)
        .collector(args.collector)
        .page_cache(args.page_cache)
        .root_table_visit(args.root_tables)
        .young_in_full(args.young_in_full)
        .binding(objects.clone())
        .build()?;
    let sampling = match &recorder {
        Some(r) => Some(r.sample(&rt, Duration::from_millis(200))?),
        None => None,
    };
    let json = args.json == Some(true);
    if !json {
        writeln!(
            out,
            "hotmem demo: {} mutator threads for {:.0} s, heap {} MiB ({:?} generations, {:?} collector, cache: {}) in {} partition(s) (NUMA {}), {} GC workers",
            args.threads,
            args.secs,
            args.heap_mib,
            args.generations,
            args.collector,
            args.page_cache,
            rt.numa().nodes,
            rt.numa().source,
            rt.gc_workers(),
        )?;
    }
    // The boot loader lives as long as the runtime: its classes stay in
    // metaspace while application loaders come and go around them.
    let mut boot = rt.class_loader(ArenaKind::Boot);
    for i in 0..600 {
        boot.alloc_class(512 + (i % 8) * 128)?;
        boot.alloc_metadata(2048 + (i % 16) * 256)?;
    }
    let c = Arc::new(Counters::default());
    let started = Instant::now();
    let work = workload::start(
        &rt,
        &objects,
        &c,
        args.threads,
        "mutator",
        0x9E37_79B9,
        Duration::from_millis(250),
    )?;
    progress(&rt, &c, args, started, (!json).then_some(&mut *out))?;
    c.stop.store(true, Relaxed);
    let mut alive_loaders = work.join()?;
    let wall = started.elapsed();
    // The run's safepoints: the last collection and the check below come
    // after it, and the check's safepoint (a walk of the whole graph with
    // the world stopped) is the demo's, not a collection's pause.
    let pauses = rt.safepoints().stats();
    if let Some(r) = &recorder {
        // The seed 004 story: the metaspaces while the application's
        // loaders live, and once they have died (the boot loader stays).
        let alive = format!("with {} loaders alive", alive_loaders.len() + 1);
        r.snapshot_spaces(&rt, &alive);
        alive_loaders.clear();
        r.snapshot_spaces(&rt, "after the application loaders died");
    }
    // One more collection with no mutator attached, then check every object.
    let last = rt.collect()?;
    let checking = std::time::Instant::now();
    let (graph, all) = rt.run_at_safepoint("demo-check", || {
        // SAFETY: at a safepoint, serialized with collections.
        let graph = unsafe { workload::check_graphs(&rt, &c) };
        // SAFETY: as above.
        let all = unsafe { objects.verify_at_safepoint(&rt) };
        (graph, all)
    })?;
    let check = checking.elapsed();
    let graph = graph.map_err(|e| format!("verification failed: {e}"))?;
    let all = all.map_err(|e| format!("verification failed: {e}"))?;
    if all != graph {
        return Err(format!("the root tables reach {all:?}, the threads kept {graph:?}").into());
    }
    let report = rt.report();
    let page = match (&recorder, &args.report) {
        (Some(r), Some(dir)) => {
            drop(sampling);
            let page = r.finish(&rt, dir)?;
            std::fs::write(dir.join("report.txt"), report.to_string())?;
            Some(page)
        }
        _ => None,
    };
    if json {
        let gc = rt.gc_totals();
        let out_json = serde_json::json!({
            "verified_objects": graph.objects,
            "verified_bytes": graph.bytes,
            "collections": gc.cycles,
            "young_collections": gc.young_collections,
            "objects_allocated": c.objects.load(Relaxed),
            "bytes_allocated": c.bytes.load(Relaxed),
            "spot_checks": c.checks.load(Relaxed),
            "class_loaders": c.loaders.load(Relaxed),
            "out_of_memory": c.out_of_memory.load(Relaxed),
            "handshakes": c.handshakes.load(Relaxed),
            "report": report.json(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&out_json)?)?;
    } else {
        let facts = Facts {
            rt: &rt,
            c: &c,
            graph: &graph,
            last: &last,
            wall,
            pauses: &pauses,
            check,
        };
        summary(&facts, out)?;
        match &page {
            Some(page) => {
                let txt = page.with_file_name("report.txt");
                writeln!(out, "report page: {}", page.display())?;
                writeln!(
                    out,
                    "full report (NMT, metaspace, safepoints, the annotated OS map): {}{}",
                    txt.display(),
                    if args.full == Some(true) {
                        ", printed below"
                    } else {
                        " (or --full)"
                    }
                )?;
            }
            None => writeln!(out, "no report page (--report DIR writes one)")?,
        }
        if args.full == Some(true) {
            write!(out, "\n{report}")?;
        }
    }
    drop((alive_loaders, boot));
    Ok(Outcome {
        verified_objects: graph.objects,
        page,
    })
}

/// One line a second until the run's time is up; a handshake with every
/// mutator each second (without stopping the world).
fn progress(
    rt: &Runtime,
    c: &Arc<Counters>,
    args: &RunArgs,
    start: Instant,
    mut out: Option<&mut dyn Write>,
) -> std::io::Result<()> {
    let deadline = start + Duration::from_secs_f64(args.secs);
    while Instant::now() < deadline {
        std::thread::sleep(
            Duration::from_secs(1).min(deadline.saturating_duration_since(Instant::now())),
        );
        let h = c.clone();
        // A safepoint in progress refuses it: skip this round.
        let _ = rt.safepoints().handshake_all(move |_| {
            h.handshakes.fetch_add(1, Relaxed);
        });
        let Some(out) = out.as_mut() else { continue };
        let t = start.elapsed().as_secs_f64();
        let kept = workload::kept_summary(c);
        let gc = rt.gc_totals();
        let usage = rt.heap().usage();
        writeln!(
            out,
            "[{t:5.1}s] allocated {:>7} MiB ({:>5.0} MiB/s)  live {:>6} objs {:>4} MiB  heap {:>3}/{} MiB  GCs {:>4} ({} young)  loaders {:>5}  handshakes {}",
            c.bytes.load(Relaxed) >> 20,
            (c.bytes.load(Relaxed) >> 20) as f64 / t,
            kept.objects,
            kept.bytes >> 20,
            usage.used >> 20,
            usage.max_capacity >> 20,
            gc.cycles,
            gc.young_collections,
            c.loaders.load(Relaxed),
            c.handshakes.load(Relaxed),
        )?;
    }
    Ok(())
}

/// What the summary is made of.
struct Facts<'a> {
    rt: &'a Runtime,
    c: &'a Counters,
    graph: &'a hotmem::objects::GraphSummary,
    last: &'a hotmem::CollectStats,
    wall: Duration,
    /// The safepoints of the run (up to the mutators' end).
    pauses: &'a hotmem::safepoint::SafepointStats,
    /// The verification's own safepoint, after the run.
    check: Duration,
}

/// The verdict and the figures a user came for, in a few lines.
fn summary(f: &Facts<'_>, out: &mut dyn Write) -> std::io::Result<()> {
    let (rt, c) = (f.rt, f.c);
    let gc = rt.gc_totals();
    let sp = f.pauses;
    let ms = |ns: u64| ns as f64 / 1e6;
    let mib = |b: u64| b >> 20;
    writeln!(out)?;
    writeln!(
        out,
        "verification: OK: the whole reachable graph ({} objects, {} KiB; every payload checksum and every reference) is what the threads built (checked at a safepoint after the run: {:.1} ms, not in the pauses below)",
        f.graph.objects,
        f.graph.bytes >> 10,
        f.check.as_secs_f64() * 1e3
    )?;
    writeln!(
        out,
        "collections: {} ({} young, {} full; {} on allocation failure); pauses p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; time to safepoint p50 {} us",
        gc.cycles,
        gc.young_collections,
        gc.cycles - gc.young_collections,
        gc.allocation_failures,
        ms(sp.total.p50),
        ms(sp.total.p99),
        ms(sp.total.max),
        sp.reaching.p50 / 1000,
    )?;
    let bytes = c.bytes.load(Relaxed);
    writeln!(
        out,
        "allocation: {} MiB in {:.1} s ({:.0} MiB/s), {} objects; {} MiB relocated; {} out-of-memory recoveries; {} spot checks",
        mib(bytes),
        f.wall.as_secs_f64(),
        mib(bytes) as f64 / f.wall.as_secs_f64(),
        c.objects.load(Relaxed),
        mib(gc.bytes_relocated),
        c.out_of_memory.load(Relaxed),
        c.checks.load(Relaxed),
    )?;
    writeln!(
        out,
        "collection time: mark {:.1} ms, references {:.1} ms, relocate {:.1} ms, update {:.1} ms; {:.1} ms paused in all ({:.1}% of the run); last collection relocated {} objects",
        ms(gc.mark_ns),
        ms(gc.refs.ns),
        ms(gc.relocation_ns),
        ms(gc.update_ns),
        ms(gc.pause_ns),
        ms(gc.pause_ns) / (f.wall.as_secs_f64() * 1e3) * 100.0,
        f.last.objects_relocated,
    )?;
    if gc.stalls > 0 {
        let by = &gc.stalls_by_cycle;
        writeln!(
            out,
            "allocation stalls: {} ({:.1} ms waited); begun during full cycles {} ({:.1} ms), during young cycles {} ({:.1} ms), between cycles {} ({:.1} ms)",
            gc.stalls,
            ms(gc.stall_ns),
            by.full.stalls,
            ms(by.full.ns),
            by.young.stalls,
            ms(by.young.ns),
            by.between.stalls,
            ms(by.between.ns),
        )?;
    }
    let usage = rt.heap().usage();
    writeln!(
        out,
        "heap: {} MiB used, {} MiB committed, maximum {} MiB",
        usage.used >> 20,
        rt.heap().committed_bytes() >> 20,
        usage.max_capacity >> 20,
    )?;
    nmt_line(rt, out)?;
    let meta = rt.metaspace().statistics();
    let (cl, nc) = (&meta.class, &meta.non_class);
    writeln!(
        out,
        "metaspace: class {} KiB used of {} KiB committed, non-class {} KiB of {} KiB; {} class loaders created",
        cl.used >> 10,
        cl.committed >> 10,
        nc.used >> 10,
        nc.committed >> 10,
        c.loaders.load(Relaxed),
    )?;
    let numa = rt.numa();
    writeln!(
        out,
        "NUMA: {}, {} node(s), memory bound: {}, workers bound during relocation: {}, {} GC workers",
        numa.source,
        numa.nodes,
        numa.memory_bound,
        numa.worker_binding,
        rt.gc_workers(),
    )
}

/// NMT's totals and the largest tags, on one line.
fn nmt_line(rt: &Runtime, out: &mut dyn Write) -> std::io::Result<()> {
    let nmt = rt.nmt();
    let summary = nmt.summary();
    let total = summary.total();
    let mut tags: Vec<(String, usize, usize)> = summary
        .iter()
        .filter(|(_, t)| t.committed > 0)
        .map(|(tag, t)| {
            let name = nmt
                .tag_name(tag)
                .map_or_else(|| format!("{tag}"), str::to_string);
            (name, t.reserved, t.committed)
        })
        .collect();
    tags.sort_by_key(|t| std::cmp::Reverse(t.2));
    let top: Vec<String> = tags
        .iter()
        .take(5)
        .map(|(n, _, c)| format!("{n} {} KiB", c >> 10))
        .collect();
    writeln!(
        out,
        "NMT: {} MiB reserved, {} MiB committed; committed by tag: {}",
        total.reserved >> 20,
        total.committed >> 20,
        top.join(", ")
    )
}
