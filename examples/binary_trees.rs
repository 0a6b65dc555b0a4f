//! binary-trees on the hotmem `Runtime`, against `Box` and a per-tree bump
//! arena, in one run.
//!
//! The program as the benchmarks game prints it: a stretch tree of depth
//! d+1, a long-lived tree of depth d, then 2^(d-k+4) trees of each depth
//! k = 4, 6, .., d, then the long-lived tree's check. Three variants:
//!
//! - `box`: nodes are `Box`es (malloc and free per node);
//! - `arena`: each short-lived tree in one bump arena dropped after its
//!   check, the long-lived tree in its own: the allocation floor, no
//!   collector;
//! - `runtime`: nodes are heap objects of two reference slots described
//!   through the binding, the trees in use rooted through the runtime's
//!   handles; collections run when an allocation finds the fixed heap full.
//!
//! With `--variant all` (the default) every run of every variant is a fresh
//! child process (this program again, with `--variant X --child`), run
//! interleaved, so that peak RSS (VmHWM) is each variant's own and machine
//! load drifts over all of them alike. The checks of all variants must be
//! identical. Prints the median wall time per variant, the runtime's
//! collections, pauses and phase times, peak RSS, the ratios and the load.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example binary_trees -- \
//!     [--depth 20] [--heap 256] [--threads 1] [--variant all|box|arena|runtime|concurrent|concurrent-young] \
//!     [--runs 1] [--generations young|single] [--sizing balanced|adaptive|maximum] [--young-max MIB] [--soft-max MIB] \
//!     [--live-depth D] [--report DIR]
//! ```
//!
//! `--generations young` (the default) runs the runtime with young
//! collections ([`hotmem::Generations::YoungAndOld`]); `single` with full
//! collections only.
//!
//! ```text
//! ```

#[path = "trees.rs"]
mod trees;
#[path = "trees_runtime.rs"]
mod trees_runtime;

use serde_json::{Value, json};
use std::process::{Command, ExitCode};
use std::time::Instant;
use trees::{ArenaTrees, BoxTrees, Trees};
use trees_runtime::{RuntimeFigures, RuntimeTrees};

const USAGE: &str = "usage: binary_trees [--depth 20] [--heap MIB] [--threads N] \
                     [--variant all|box|arena|runtime|concurrent|concurrent-young|LIST] [--runs N] \
                     [--generations young|single] [--sizing balanced|adaptive|maximum] [--young-max MIB] \
                     [--soft-max MIB] [--live-depth D] [--report DIR]";

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Variant {
    Box,
    Arena,
    /// The runtime with its stop-the-world collector (generations as
    /// `--generations` says).
    Runtime,
    /// The runtime with its concurrent collector (single-generation).
    Concurrent,
    /// The runtime with its concurrent collector's young and old cycles.
    ConcurrentGenerational,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::Box,
        Variant::Arena,
        Variant::Runtime,
        Variant::Concurrent,
        Variant::ConcurrentGenerational,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Box => "box",
            Variant::Arena => "arena",
            Variant::Runtime => "runtime",
            Variant::Concurrent => "concurrent",
            Variant::ConcurrentGenerational => "concurrent-young",
        }
    }

    /// `all`, one name, or names separated by commas (`runtime,concurrent`).
    fn parse(s: &str) -> Result<Vec<Variant>, String> {
        if s == "all" {
            return Ok(Variant::ALL.to_vec());
        }
        s.split(',')
            .map(|name| {
                Variant::ALL
                    .into_iter()
                    .find(|v| v.name() == name)
                    .ok_or(format!(
                        "--variant {name}: expected all, box, arena, runtime, concurrent \
                         or concurrent-young"
                    ))
            })
            .collect()
    }

    /// Whether the variant runs on the hotmem runtime.
    fn on_runtime(self) -> bool {
        matches!(
            self,
            Variant::Runtime | Variant::Concurrent | Variant::ConcurrentGenerational
        )
    }
}

struct Options {
    depth: u32,
    heap_mib: usize,
    threads: usize,
    variants: Vec<Variant>,
    runs: usize,
    /// The runtime variant's generations.
    generations: hotmem::Generations,
    /// The runtime variant's heap sizing.
    sizing: hotmem::HeapSizing,
    /// `--soft-max MIB`: the runtime variants' soft maximum heap.
    soft_max_mib: Option<usize>,
    /// `--live-depth`: an extra tree of this depth kept for the whole run.
    live: Option<u32>,
    /// Run one variant once and print its result as a `RESULT {json}` line.
    child: bool,
    /// `--report DIR`: the runtime variant writes its page of charts there
    /// (each run overwrites it; the sampling thread runs beside the timed
    /// program, so time runs without it).
    report: Option<std::path::PathBuf>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        depth: 20,
        heap_mib: 256,
        threads: 1,
        variants: Variant::ALL.to_vec(),
        runs: 1,
        generations: hotmem::Generations::YoungAndOld,
        sizing: hotmem::HeapSizing::default(),
        soft_max_mib: None,
        live: None,
        child: false,
        report: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--depth" => o.depth = value()?.parse().map_err(|e| format!("--depth: {e}"))?,
            "--heap" => o.heap_mib = value()?.parse().map_err(|e| format!("--heap: {e}"))?,
            "--threads" => o.threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--variant" => o.variants = Variant::parse(&value()?)?,
            "--runs" => o.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--child" => o.child = true,
            "--generations" => {
                o.generations = match value()?.as_str() {
                    "young" => hotmem::Generations::YoungAndOld,
                    "single" => hotmem::Generations::Single,
                    other => {
                        return Err(format!("--generations {other}: expected young or single"));
                    }
                }
            }
            "--sizing" => {
                o.sizing = match value()?.as_str() {
                    "balanced" => hotmem::HeapSizing::Balanced(Default::default()),
                    "adaptive" => hotmem::HeapSizing::Adaptive(Default::default()),
                    "maximum" => hotmem::HeapSizing::Maximum,
                    other => {
                        return Err(format!(
                            "--sizing {other}: expected balanced, adaptive or maximum"
                        ));
                    }
                }
            }
            "--soft-max" => {
                let mib = value()?.parse().map_err(|e| format!("--soft-max: {e}"))?;
                o.soft_max_mib = Some(mib);
            }
            "--live-depth" => {
                o.live = Some(value()?.parse().map_err(|e| format!("--live-depth: {e}"))?);
            }
            "--young-max" => {
                let mib: usize = value()?.parse().map_err(|e| format!("--young-max: {e}"))?;
                let hotmem::HeapSizing::Adaptive(mut a) = o.sizing else {
                    return Err("--young-max needs --sizing adaptive (before it)".into());
                };
                a.young_max = mib << 20;
                a.young_min = a.young_min.min(a.young_max);
                o.sizing = hotmem::HeapSizing::Adaptive(a);
            }
            "--report" => o.report = Some(value()?.into()),
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if o.threads == 0 || o.runs == 0 || o.heap_mib == 0 {
        return Err("--threads, --runs and --heap must be positive".into());
    }
    if !(trees::MIN_DEPTH + 2..=30).contains(&o.depth) {
        return Err(format!("--depth must be in {}..=30", trees::MIN_DEPTH + 2));
    }
    if o.live.is_some_and(|d| !(1..=28).contains(&d)) {
        return Err("--live-depth must be in 1..=28".into());
    }
    if o.child && o.variants.len() != 1 {
        return Err("--child runs exactly one variant".into());
    }
    Ok(o)
}

/// One run of one variant.
struct RunResult {
    variant: Variant,
    wall_ns: u64,
    lines: Vec<String>,
    checks: Vec<u64>,
    peak_rss_kib: u64,
    /// The runtime's figures (collections, pauses, phases), `null` for the
    /// baselines.
    gc: Value,
}

impl RunResult {
    fn json(&self) -> Value {
        json!({
            "variant": self.variant.name(),
            "wall_ns": self.wall_ns,
            "lines": self.lines,
            "checks": self.checks,
            "peak_rss_kib": self.peak_rss_kib,
            "gc": self.gc,
        })
    }

    fn from_json(v: &Value) -> Option<RunResult> {
        let variant = Variant::parse(v["variant"].as_str()?).ok()?[0];
        Some(RunResult {
            variant,
            wall_ns: v["wall_ns"].as_u64()?,
            lines: v["lines"]
                .as_array()?
                .iter()
                .map(|l| l.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
            checks: v["checks"]
                .as_array()?
                .iter()
                .map(Value::as_u64)
                .collect::<Option<_>>()?,
            peak_rss_kib: v["peak_rss_kib"].as_u64()?,
            gc: v["gc"].clone(),
        })
    }
}

/// This process's peak resident set (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|e| format!("unavailable ({e})"))
}

fn timed<T: Trees>(trees: &T, o: &Options) -> (u64, Vec<String>, Vec<u64>) {
    let mut lines = Vec::new();
    let start = Instant::now();
    let checks = trees::program(trees, o.depth, o.threads, o.live, &mut |l| lines.push(l));
    (start.elapsed().as_nanos() as u64, lines, checks)
}

/// Runs `variant` once in this process.
fn run_once(variant: Variant, o: &Options) -> Result<RunResult, String> {
    let (wall_ns, lines, checks, gc) = match variant {
        Variant::Box => {
            let (w, l, c) = timed(&BoxTrees, o);
            (w, l, c, Value::Null)
        }
        Variant::Arena => {
            let (w, l, c) = timed(&ArenaTrees, o);
            (w, l, c, Value::Null)
        }
        Variant::Runtime | Variant::Concurrent | Variant::ConcurrentGenerational => {
            let (collector, generations) = match variant {
                Variant::Concurrent => (
                    hotmem::CollectorMode::Concurrent,
                    hotmem::Generations::Single,
                ),
                Variant::ConcurrentGenerational => (
                    hotmem::CollectorMode::Concurrent,
                    hotmem::Generations::YoungAndOld,
                ),
                _ => (hotmem::CollectorMode::StopTheWorld, o.generations),
            };
            // Building the runtime (reserving the heap, starting the GC
            // workers) is part of the variant's time.
            let (log, recorder) = hotmem_examples::log_and_recorder(o.report.is_some(), || {
                format!(
                    "hotmem binary_trees: depth {}, heap {} MiB, {} thread(s)",
                    o.depth, o.heap_mib, o.threads
                )
            })?;
            let start = Instant::now();
            let soft_max = o.soft_max_mib.map(|m| m << 20);
            let rt = RuntimeTrees::new(
                o.heap_mib << 20,
                log,
                generations,
                o.sizing,
                collector,
                soft_max,
            )
            .map_err(|e| e.to_string())?;
            let built_ns = start.elapsed().as_nanos() as u64;
            let sampling = match &recorder {
                Some(r) => Some(
                    r.sample(rt.runtime(), std::time::Duration::from_millis(100))
                        .map_err(|e| format!("report sampler: {e}"))?,
                ),
                None => None,
            };
            let (_, l, c) = timed(&rt, o);
            if let (Some(r), Some(dir)) = (&recorder, &o.report) {
                drop(sampling);
                r.snapshot_spaces(rt.runtime(), "at the end (binary-trees loads no classes)");
                r.finish(rt.runtime(), dir)?;
            }
            let mut gc = figures_json(&rt.figures());
            drop(rt);
            gc["build_ns"] = built_ns.into();
            (start.elapsed().as_nanos() as u64, l, c, gc)
        }
    };
    Ok(RunResult {
        variant,
        wall_ns,
        lines,
        checks,
        peak_rss_kib: peak_rss_kib(),
        gc,
    })
}

/// The flags that give a child `sizing`.
fn sizing_args(sizing: hotmem::HeapSizing) -> Vec<String> {
    match sizing {
        hotmem::HeapSizing::Adaptive(a) => vec![
            "--sizing".into(),
            "adaptive".into(),
            "--young-max".into(),
            (a.young_max >> 20).to_string(),
        ],
        hotmem::HeapSizing::Balanced(_) => vec!["--sizing".into(), "balanced".into()],
        _ => vec!["--sizing".into(), "maximum".into()],
    }
}

/// Runs `variant` once in a fresh child process.
fn run_child(variant: Variant, o: &Options) -> Result<RunResult, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let out = Command::new(exe)
        .args(["--variant", variant.name(), "--child"])
        .args(["--depth", &o.depth.to_string()])
        .args(["--heap", &o.heap_mib.to_string()])
        .args(["--threads", &o.threads.to_string()])
        .args([
            "--generations",
            match o.generations {
                hotmem::Generations::Single => "single",
                _ => "young",
            },
        ])
        .args(sizing_args(o.sizing))
        .args(match o.soft_max_mib {
            Some(m) => vec!["--soft-max".to_string(), m.to_string()],
            None => vec![],
        })
        .args(match o.live {
            Some(d) => vec!["--live-depth".to_string(), d.to_string()],
            None => vec![],
        })
        .args(match (&o.report, variant) {
            (Some(dir), Variant::Runtime) => vec!["--report".into(), dir.clone()],
            _ => vec![],
        })
        .output()
        .map_err(|e| format!("spawning the {} child: {e}", variant.name()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the {} child failed ({}):\n{stdout}{}",
            variant.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|j| serde_json::from_str(j).ok())
        .and_then(|v: Value| RunResult::from_json(&v))
        .ok_or(format!(
            "the {} child printed no result:\n{stdout}",
            variant.name()
        ))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("binary_trees FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(o: &Options) -> Result<(), String> {
    if o.child {
        let r = run_once(o.variants[0], o)?;
        println!("RESULT {}", r.json());
        return Ok(());
    }
    let in_children = o.variants.len() > 1;
    println!(
        "binary-trees depth {}, heap {} MiB, {} thread(s), {} run(s) of {}{}; {} nodes allocated per run",
        o.depth,
        o.heap_mib,
        o.threads,
        o.runs,
        o.variants
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", "),
        if in_children {
            " (each run a fresh child process, variants interleaved)"
        } else {
            " (in this process)"
        },
        trees::allocated_nodes(o.depth),
    );
    println!("loadavg before: {}", loadavg());
    let mut results: Vec<RunResult> = Vec::new();
    for run in 0..o.runs {
        for &v in &o.variants {
            let r = if in_children {
                run_child(v, o)?
            } else {
                run_once(v, o)?
            };
            eprintln!(
                "run {}/{} {:<8} {:>9.1} ms",
                run + 1,
                o.runs,
                v.name(),
                ms(r.wall_ns)
            );
            results.push(r);
        }
    }

    // The program's output, once; every run of every variant must agree.
    let first = &results[0];
    for line in &first.lines {
        println!("{line}");
    }
    let expected = expected_checks(o.depth, o.live);
    for r in &results {
        if r.checks != first.checks || r.lines != first.lines {
            return Err(format!(
                "{} printed different checks: {:?} against {}'s {:?}",
                r.variant.name(),
                r.checks,
                first.variant.name(),
                first.checks
            ));
        }
    }
    if first.checks != expected {
        return Err(format!(
            "checks {:?}, expected node counts {expected:?}",
            first.checks
        ));
    }
    println!(
        "checks: identical across {} run(s), equal to the node counts",
        results.len()
    );

    println!();
    println!(
        "{:<8} {:>13} {:>13}  runs ms",
        "variant", "median ms", "peak RSS MiB"
    );
    let mut medians = Vec::new();
    for &v in &o.variants {
        let rs: Vec<&RunResult> = results.iter().filter(|r| r.variant == v).collect();
        let wall = median(rs.iter().map(|r| r.wall_ns).collect());
        let rss = median(rs.iter().map(|r| r.peak_rss_kib).collect());
        let runs: Vec<String> = rs.iter().map(|r| format!("{:.0}", ms(r.wall_ns))).collect();
        println!(
            "{:<8} {:>13.1} {:>13.1}  {}",
            v.name(),
            ms(wall),
            rss as f64 / 1024.0,
            runs.join(" ")
        );
        medians.push((v, wall));
        if v.on_runtime() {
            // The figures of the run whose wall time is the median.
            let r = rs
                .iter()
                .find(|r| r.wall_ns == wall)
                .expect("the median is one of the runs");
            println!("{}", describe(&r.gc));
            let pauses = r.gc["pause_total_ns"].as_u64().unwrap_or(0);
            println!(
                "  outside pauses (mutators, runtime build and teardown): {:.1} ms; in pauses: {:.1} ms ({:.0}% of the wall time)",
                ms(r.wall_ns.saturating_sub(pauses)),
                ms(pauses),
                100.0 * pauses as f64 / r.wall_ns.max(1) as f64
            );
        }
    }
    let wall_of = |v| medians.iter().find(|(m, _)| *m == v).map(|&(_, w)| w);
    if let (Some(stw), Some(conc)) = (wall_of(Variant::Runtime), wall_of(Variant::Concurrent)) {
        println!();
        println!(
            "concurrent/runtime {:.2}  (wall time of the concurrent collector against the stop-the-world one, medians)",
            conc as f64 / stw as f64
        );
    }
    if let (Some(stw), Some(conc)) = (
        wall_of(Variant::Runtime),
        wall_of(Variant::ConcurrentGenerational),
    ) {
        println!(
            "concurrent-young/runtime {:.2}  (young and old concurrent cycles against the stop-the-world collector, medians; goal <= 1.05)",
            conc as f64 / stw as f64
        );
    }
    if let Some(rt) = wall_of(Variant::Runtime) {
        println!();
        if let Some(b) = wall_of(Variant::Box) {
            let r = rt as f64 / b as f64;
            println!(
                "runtime/box   {r:.2}  (goal < 1.00: {})",
                if r < 1.0 { "met" } else { "NOT met" }
            );
        }
        if let Some(a) = wall_of(Variant::Arena) {
            let r = rt as f64 / a as f64;
            println!(
                "runtime/arena {r:.2}  (goal <= 1.50: {})",
                if r <= 1.5 { "met" } else { "NOT met" }
            );
        }
    }
    println!("loadavg after: {}", loadavg());
    if let (Some(dir), true) = (&o.report, o.variants.contains(&Variant::Runtime)) {
        println!(
            "report (runtime variant, last run; sampled beside the timed program): {}",
            dir.join("index.html").display()
        );
    }
    Ok(())
}

/// The checks every variant must print: node counts.
fn expected_checks(depth: u32, live: Option<u32>) -> Vec<u64> {
    let mut c = vec![trees::nodes(depth + 1)];
    for k in (trees::MIN_DEPTH..=depth).step_by(2) {
        c.push(trees::iterations(depth, k) * trees::nodes(k));
    }
    c.push(trees::nodes(depth));
    c.extend(live.map(trees::nodes));
    c
}

fn figures_json(f: &RuntimeFigures) -> Value {
    json!({
        "heap_bytes": f.heap_bytes,
        "gc_workers": f.gc_workers,
        "collections": f.collections,
        "young_collections": f.young_collections,
        "allocation_failures": f.allocation_failures,
        "pause_p50_ns": f.pause_p50_ns,
        "pause_p99_ns": f.pause_p99_ns,
        "pause_max_ns": f.pause_max_ns,
        "ttsp_p50_ns": f.ttsp_p50_ns,
        "ttsp_max_ns": f.ttsp_max_ns,
        "pause_total_ns": f.pause_total_ns,
        "mark_ns": f.mark_ns,
        "relocate_ns": f.relocate_ns,
        "update_ns": f.update_ns,
        "objects_marked": f.objects_marked,
        "objects_relocated": f.objects_relocated,
        "bytes_relocated": f.bytes_relocated,
        "pages_freed": f.pages_freed,
        "marking_rate": f.marking_rate,
        "remembered_updates": f.remembered_updates,
        "full_updates": f.full_updates,
        "tlab_refills": f.tlab_refills,
        "at_p50_ns": f.at_p50_ns,
        "at_p99_ns": f.at_p99_ns,
        "at_max_ns": f.at_max_ns,
        "concurrent_cycles": f.concurrent_cycles,
        "stalls": f.stalls,
        "stall_ns": f.stall_ns,
        "relocated_by_mutators": f.relocated_by_mutators,
        "soft_max": f.soft_max,
        "over_soft_max": f.over_soft_max,
    })
}

/// The runtime's figures of one run, as lines.
fn describe(gc: &Value) -> String {
    let n = |k: &str| gc[k].as_u64().unwrap_or(0);
    let us = |k: &str| n(k) as f64 / 1e3;
    let mark_ms = ms(n("mark_ns"));
    let rate = gc["marking_rate"].as_f64().unwrap_or(0.0);
    let soft = match n("soft_max") {
        0 => String::new(),
        bytes => format!(
            "\n  soft maximum {} MiB, set aside (collections over the time limit) after {} collections",
            bytes >> 20,
            n("over_soft_max")
        ),
    };
    format!(
        "  runtime: heap {} MiB, {} GC workers, built in {:.1} ms (in the wall time); {} collections ({} young, {} on allocation failure)\n  \
         pause (safepoint total) p50 {:.0} us, p99 {:.0} us, max {:.0} us; ttsp p50 {:.0} us, max {:.0} us; pauses sum {:.1} ms\n  \
         at the safepoint (the pause less reaching and leaving it) p50 {:.0} us, p99 {:.0} us, max {:.0} us\n  \
         mark {:.1} ms, relocate {:.1} ms, update {:.1} ms (totals); {} objects marked ({:.0} per ms per worker), \
         {} objects / {:.1} MiB relocated, {} pages freed\n  \
         updates: {} of remembered slots only, {} of every live object; {} thread-local buffers taken\n  \
         concurrent cycles {}, allocation stalls {} ({:.1} ms), objects relocated by mutators' load barriers {}{soft}",
        n("heap_bytes") >> 20,
        n("gc_workers"),
        ms(n("build_ns")),
        n("collections"),
        n("young_collections"),
        n("allocation_failures"),
        us("pause_p50_ns"),
        us("pause_p99_ns"),
        us("pause_max_ns"),
        us("ttsp_p50_ns"),
        us("ttsp_max_ns"),
        ms(n("pause_total_ns")),
        us("at_p50_ns"),
        us("at_p99_ns"),
        us("at_max_ns"),
        mark_ms,
        ms(n("relocate_ns")),
        ms(n("update_ns")),
        n("objects_marked"),
        rate,
        n("objects_relocated"),
        n("bytes_relocated") as f64 / (1 << 20) as f64,
        n("pages_freed"),
        n("remembered_updates"),
        n("full_updates"),
        n("tlab_refills"),
        n("concurrent_cycles"),
        n("stalls"),
        ms(n("stall_ns")),
        n("relocated_by_mutators"),
    )
}
