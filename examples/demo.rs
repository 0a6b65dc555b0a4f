//! The hotmem demo: `cargo xtask demo [-- --threads N --secs S --heap MIB --numa MODE --json --report DIR]`.
//!
//! `--report DIR` writes `DIR/index.html`, charts of the run (see the
//! README); `HOTMEM_LOG=gc*=info,safepoint=info` prints the GC log.
//!
//! A small but real managed heap driven by `hotmem::Runtime`: mutator threads
//! build object graphs (linked lists, trees, arrays of shared references,
//! cycles, single objects of small, medium and large sizes) and drop most of
//! them; collections stop the mutators, trace the graphs from the roots on
//! the GC workers, evacuate sparse pages on the NUMA workers, update every
//! reference and free the garbage; class loaders come and go. At the end
//! the whole reachable graph is verified (every payload checksum, every
//! reference) against what the threads built, and the report is printed.

#[path = "workload.rs"]
mod workload;

use hotmem::objects::SimpleObjects;
use hotmem::{ArenaKind, NumaConfig, Runtime};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use workload::{Counters, RunArgs, parse_args};

const USAGE: &str = "usage: demo [--threads N] [--secs S] [--heap MIB] [--numa detect|off|synthetic:DESC] [--generations young|single] [--json] [--report DIR]";

fn main() {
    let defaults = RunArgs {
        threads: 4,
        secs: 12.0,
        heap_mib: 256,
        numa: NumaConfig::Detect,
        json: Some(false),
        report: None,
        generations: hotmem::Generations::Single,
    };
    let args = match parse_args(USAGE, defaults) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("demo FAILED: {e}");
        std::process::exit(1);
    }
}

fn run(args: &RunArgs) -> Result<(), Box<dyn std::error::Error>> {
    let objects = SimpleObjects::new();
    let (log, recorder) = hotmem_examples::log_and_recorder(args.report.is_some(), || {
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
        .binding(objects.clone())
        .build()?;
    let sampling = match &recorder {
        Some(r) => Some(r.sample(&rt, Duration::from_millis(200))?),
        None => None,
    };
    let numa = rt.numa();
    if args.json != Some(true) {
        println!(
            "hotmem demo: {} mutator threads for {:.0} s, heap {} MiB in {} partition(s) (NUMA {}), {} GC workers, medium pages of {} MiB",
            args.threads,
            args.secs,
            args.heap_mib,
            numa.nodes,
            numa.source,
            rt.gc_workers(),
            rt.heap().page_sizes().medium_page() >> 20
        );
    }
    // The boot loader lives as long as the runtime: its classes stay in
    // metaspace while application loaders come and go around them.
    let mut boot = rt.class_loader(ArenaKind::Boot);
    for i in 0..600 {
        boot.alloc_class(512 + (i % 8) * 128)?;
        boot.alloc_metadata(2048 + (i % 16) * 256)?;
    }
    let c = Arc::new(Counters::default());
    let workload = workload::start(
        &rt,
        &objects,
        &c,
        args.threads,
        "mutator",
        0x9E37_79B9,
        Duration::from_millis(250),
    )?;

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.secs);
    while Instant::now() < deadline {
        std::thread::sleep(
            Duration::from_secs(1).min(deadline.saturating_duration_since(Instant::now())),
        );
        // A handshake with every mutator, without stopping the world.
        let h = c.clone();
        if rt
            .safepoints()
            .handshake_all(move |_| {
                h.handshakes.fetch_add(1, Relaxed);
            })
            .is_err()
        {
            // A safepoint was in progress: skip this round.
        }
        if args.json != Some(true) {
            let t = start.elapsed().as_secs_f64();
            let kept = workload::kept_summary(&c);
            let (live_n, live_b) = (kept.objects, kept.bytes);
            let gc = rt.gc_totals();
            let usage = rt.heap().usage();
            println!(
                "[{t:5.1}s] allocated {:>7} MiB ({:>5.0} MiB/s)  live {:>6} objs {:>4} MiB  heap used {:>3}/{} MiB  GCs {:>4} ({} on alloc failure)  relocated {:>5} MiB  loaders {:>5}  handshakes {}",
                c.bytes.load(Relaxed) >> 20,
                (c.bytes.load(Relaxed) >> 20) as f64 / t,
                live_n,
                live_b >> 20,
                usage.used >> 20,
                usage.max_capacity >> 20,
                gc.cycles,
                gc.allocation_failures,
                gc.bytes_relocated >> 20,
                c.loaders.load(Relaxed),
                c.handshakes.load(Relaxed),
            );
        }
    }
    c.stop.store(true, Relaxed);
    let mut alive_loaders = workload.join()?;
    if let Some(r) = &recorder {
        // The seed 004 story: the metaspaces while the application's
        // loaders live, and once they have died (the boot loader stays).
        r.snapshot_spaces(
            &rt,
            &format!("with {} loaders alive", alive_loaders.len() + 1),
        );
        alive_loaders.clear();
        r.snapshot_spaces(&rt, "after the application loaders died");
    }

    // One more collection with no mutator attached, then check every object.
    let last = rt.collect()?;
    // SAFETY: every thread that could collect has stopped.
    let graph =
        unsafe { workload::check_graphs(&c) }.map_err(|e| format!("verification failed: {e}"))?;
    // SAFETY: as above.
    let all = unsafe { objects.verify() }.map_err(|e| format!("verification failed: {e}"))?;
    if all != graph {
        return Err(format!("the root tables reach {all:?}, the threads kept {graph:?}").into());
    }
    let verified = graph.objects;
    let gc = rt.gc_totals();
    let report = rt.report();
    if args.json == Some(true) {
        let out = serde_json::json!({
            "verified_objects": verified,
            "verified_bytes": graph.bytes,
            "mark_ms": gc.mark_ns as f64 / 1e6,
            "relocation_ms": gc.relocation_ns as f64 / 1e6,
            "update_ms": gc.update_ns as f64 / 1e6,
            "objects_marked": gc.objects_marked,
            "collections": gc.cycles,
            "objects_allocated": c.objects.load(Relaxed),
            "bytes_allocated": c.bytes.load(Relaxed),
            "spot_checks": c.checks.load(Relaxed),
            "class_loaders": c.loaders.load(Relaxed),
            "out_of_memory": c.out_of_memory.load(Relaxed),
            "handshakes": c.handshakes.load(Relaxed),
            "report": report.json(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "\nverification: OK, the whole reachable graph ({verified} objects, {} KiB: every payload checksum and every reference) is what the threads built, after {} collections ({} objects, {} MiB relocated; {} spot checks during the run; last collection relocated {} objects); {} objects ({} MiB) allocated, {} class loaders, {} out-of-memory recoveries, {} handshake operations\n",
            graph.bytes >> 10,
            gc.cycles,
            gc.objects_relocated,
            gc.bytes_relocated >> 20,
            c.checks.load(Relaxed),
            last.objects_relocated,
            c.objects.load(Relaxed),
            c.bytes.load(Relaxed) >> 20,
            c.loaders.load(Relaxed),
            c.out_of_memory.load(Relaxed),
            c.handshakes.load(Relaxed),
        );
        println!(
            "where collection time went: mark {:.1} ms ({} objects, {:.0} objects/ms/worker), relocate {:.1} ms, update {:.1} ms, of {:.1} ms paused in all\n",
            gc.mark_ns as f64 / 1e6,
            gc.objects_marked,
            last.marking_rate(),
            gc.relocation_ns as f64 / 1e6,
            gc.update_ns as f64 / 1e6,
            gc.pause_ns as f64 / 1e6,
        );
        print!("{report}");
    }
    if let (Some(r), Some(dir)) = (&recorder, &args.report) {
        drop(sampling);
        let page = r.finish(&rt, dir)?;
        println!("report: {}", page.display());
    }
    drop((alive_loaders, boot));
    Ok(())
}
