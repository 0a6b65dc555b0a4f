//! `cargo xtask lox-bench [--runs N] [--concurrent] [--build release|lto|static]`:
//! hotmem-lox against clox, the C reference VM, on every program of
//! `examples/lox/bench`; with `--concurrent`, also `lox --collector
//! concurrent-generational` (the concurrent collector's young and old
//! cycles) against lox's default collector, interleaved in the same runs.
//!
//! It builds clox from `../shared/clox` as its README does
//! (`cc -O3 -flto -std=c99 -w`) and `lox` in release (`--build lto`: with
//! fat LTO and one codegen unit, as clox is linked, in `target/lto`: the
//! interpreter's code layout, and so the concurrent copy's speed, depends
//! on the build more than on its source; `--build static`: linked
//! static-pie with `-C target-feature=+crt-static` added to the
//! workspace's `build.rustflags`, in `target/static`,
//! and clox linked `-static-pie` too, so that neither maps the shared
//! libraries a dynamic build keeps resident), then runs each
//! program `N` times on each (default 5), interleaved (clox, lox, clox,
//! lox, ...) so that a change in the machine's load hits both alike. Every
//! run is a fresh process under `/usr/bin/time -f %M` (peak RSS); its
//! output must be clox's. Then `lox` runs each program once more with
//! `LOX_GC_STATS=1`, which makes it print its collector's totals on
//! stderr: the GC's share of its time is the sum of its pauses over that
//! run's wall time. (Printing them runs code no other run does, 0.25 MiB
//! of a one-line script's peak RSS: the timed runs leave it off.) Last,
//! both VMs run a one-line script 30 times, interleaved, for the start's
//! peak RSS. The table gives each
//! program's median times, their ratio, the median peak RSS of each, the
//! GC share and collections, then the geometric mean of the ratios and the
//! load average.

use crate::steps::{Runner, cargo, flag_value, root};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Runs per program and VM unless `--runs` says otherwise.
const DEFAULT_RUNS: u32 = 5;

/// One run of one program on one VM.
#[derive(Clone, Debug, Default)]
struct Run {
    seconds: f64,
    rss_kib: u64,
    /// lox only, from the program's run with `LOX_GC_STATS=1`: total
    /// pause, collections, and that run's wall time.
    gc_pause_ns: u64,
    gc_cycles: u64,
    gc_seconds: f64,
}

/// Whether lox prints its collector's totals (`LOX_GC_STATS=1`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum GcStats {
    Printed,
    Off,
}

/// How `lox` is built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LoxBuild {
    /// The release profile, as `cargo build --release` builds it.
    Release,
    /// The release profile with fat LTO and one codegen unit, in
    /// `target/lto` (so the usual build stays warm).
    Lto,
    /// The release profile linked static-pie (glibc's static libraries),
    /// in `target/static`; clox is linked the same way.
    Static,
}

/// How clox is linked: as `lox` is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Linkage {
    /// Against the shared libc, as its README builds it.
    Dynamic,
    /// `-static-pie`.
    StaticPie,
}

impl LoxBuild {
    fn parse(args: &[String]) -> Result<LoxBuild, String> {
        match args.iter().position(|a| a == "--build") {
            None => Ok(LoxBuild::Release),
            Some(i) => match args.get(i + 1).map(String::as_str) {
                Some("release") => Ok(LoxBuild::Release),
                Some("lto") => Ok(LoxBuild::Lto),
                Some("static") => Ok(LoxBuild::Static),
                _ => Err("--build needs release, lto or static".into()),
            },
        }
    }

    fn describe(self) -> &'static str {
        match self {
            LoxBuild::Release => "the release profile (--build release)",
            LoxBuild::Lto => "the release profile with fat LTO and one codegen unit (--build lto)",
            LoxBuild::Static => {
                "the release profile linked static-pie, and clox too (--build static)"
            }
        }
    }

    /// How clox is linked beside this build.
    fn clox_linkage(self) -> Linkage {
        match self {
            LoxBuild::Release | LoxBuild::Lto => Linkage::Dynamic,
            LoxBuild::Static => Linkage::StaticPie,
        }
    }

    /// Builds `lox`; returns the binary.
    fn build(self, r: &mut Runner) -> Result<PathBuf, String> {
        let base = ["build", "--release", "-p", "hotmem-lox", "--bin", "lox"];
        match self {
            LoxBuild::Release => {
                r.step("build lox (release)", &mut cargo(&base))?;
                Ok(root().join("target/release/lox"))
            }
            LoxBuild::Lto => {
                let dir = root().join("target/lto");
                let lto = [
                    "--config",
                    "profile.release.lto=\"fat\"",
                    "--config",
                    "profile.release.codegen-units=1",
                ];
                let mut c = cargo(&[&base[..], &lto[..]].concat());
                c.env("CARGO_TARGET_DIR", &dir);
                r.step("build lox (release, fat LTO, one codegen unit)", &mut c)?;
                Ok(dir.join("release/lox"))
            }
            LoxBuild::Static => {
                // With an explicit target, the flag reaches the target's
                // crates only: build scripts and proc-macros stay
                // dynamic, as they must.
                let host = host_triple()?;
                if !host.ends_with("-linux-gnu") {
                    return Err(format!(
                        "--build static needs a *-linux-gnu host, not {host}"
                    ));
                }
                let dir = root().join("target/static");
                let mut c = cargo(&[&base[..], &["--target", &host][..]].concat());
                // Flags from the environment replace the workspace's
                // `build.rustflags` (the interpreter's dispatch layout):
                // repeat them, or the static build is another interpreter.
                let config = root().join(".cargo/config.toml");
                let config = std::fs::read_to_string(&config)
                    .map_err(|e| format!("{}: {e}", config.display()))?;
                let mut flags = build_rustflags(&config);
                flags.extend(["-C".to_owned(), "target-feature=+crt-static".to_owned()]);
                c.env("CARGO_TARGET_DIR", &dir)
                    .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\u{1f}"));
                r.step("build lox (release, static-pie)", &mut c)?;
                Ok(dir.join(host).join("release/lox"))
            }
        }
    }
}

/// The strings of the `rustflags` array of a cargo config's `[build]`
/// table (the workspace's is one flat array of quoted strings).
fn build_rustflags(config: &str) -> Vec<String> {
    let mut in_build = false;
    let mut list: Option<String> = None;
    for line in config.lines() {
        let line = line.trim();
        if let Some(list) = list.as_mut() {
            list.push_str(line);
            if line.contains(']') {
                break;
            }
            continue;
        }
        if line.starts_with('[') {
            in_build = line == "[build]";
        } else if in_build && line.starts_with("rustflags") {
            let value = line.split_once('=').map_or("", |(_, v)| v).trim();
            list = Some(value.to_owned());
            if value.contains(']') {
                break;
            }
        }
    }
    let list = list.unwrap_or_default();
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// `cargo xtask lox-bench [--runs N] [--concurrent] [--build release|lto]`.
pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let runs = flag_value(args, "--runs")?.unwrap_or(DEFAULT_RUNS).max(1);
    let concurrent = args.iter().any(|a| a == "--concurrent");
    let build = LoxBuild::parse(args)?;
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return Err("lox-bench measures peak RSS with GNU time: apt-get install time".into());
    }
    let clox = build_clox(r, build.clox_linkage())?;
    let lox = build.build(r)?;
    let programs = programs()?;
    let scratch = root().join("target/lox-bench");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    eprintln!(
        "\n==> [lox-bench] {} programs x {runs} runs on clox and lox ({build:?} build), interleaved",
        programs.len()
    );
    let started = Instant::now();
    let mut results: Vec<(Vec<Run>, Vec<Run>)> = vec![Default::default(); programs.len()];
    let mut versus: Vec<Vec<Run>> = vec![Vec::new(); programs.len()];
    for run in 0..runs {
        for (i, program) in programs.iter().enumerate() {
            let (expected, c) = run_once(&clox, program, &scratch, Vm::Clox, GcStats::Off)?;
            let (got, l) = run_once(&lox, program, &scratch, Vm::Lox, GcStats::Off)?;
            if got != expected {
                return Err(format!(
                    "lox printed something else than clox for {} (run {run})",
                    program.display()
                ));
            }
            results[i].0.push(c);
            results[i].1.push(l);
            if concurrent {
                let (got, v) = run_once(&lox, program, &scratch, Vm::LoxConcurrent, GcStats::Off)?;
                if got != expected {
                    return Err(format!(
                        "lox --collector concurrent-generational printed something else than clox for {} (run {run})",
                        program.display()
                    ));
                }
                versus[i].push(v);
            }
        }
    }
    r.record("lox-bench runs", started.elapsed());
    // The collectors' figures from one more run each: printing them runs
    // code that no other run does (0.25 MiB of the one-line script's peak
    // RSS), so the runs above leave it off.
    let started = Instant::now();
    for (i, program) in programs.iter().enumerate() {
        let (_, gc) = run_once(&lox, program, &scratch, Vm::Lox, GcStats::Printed)?;
        results[i].1.iter_mut().for_each(|r| r.gc_from(&gc));
        if concurrent {
            let (_, gc) = run_once(&lox, program, &scratch, Vm::LoxConcurrent, GcStats::Printed)?;
            versus[i].iter_mut().for_each(|r| r.gc_from(&gc));
        }
    }
    r.record("lox-bench GC statistics", started.elapsed());
    let started = Instant::now();
    let start = one_line_rss(&clox, &lox, &scratch)?;
    r.record("lox-bench one-line script", started.elapsed());
    println!("\nlox: {}", build.describe());
    print_table(&programs, &results, runs);
    if concurrent {
        print_versus(&programs, &results, &versus, runs);
    }
    let [clox_kib, lox_kib] = start;
    println!(
        "\none-line script (print \"hi\";), {ONE_LINE_RUNS} runs each, interleaved: peak RSS median clox {clox_kib} KiB, lox {lox_kib} KiB ({:+} KiB)",
        lox_kib as i64 - clox_kib as i64
    );
    Ok(())
}

/// Runs of each VM on the one-line script: its peak RSS moves with where
/// the kernel's 64 KiB fault-around windows fall, so one run says little.
const ONE_LINE_RUNS: usize = 30;

/// The median peak RSS (KiB) of clox and of lox on `print "hi";`, the
/// start's cost (#36's goal: within 1 MiB of clox).
fn one_line_rss(clox: &Path, lox: &Path, scratch: &Path) -> Result<[u64; 2], String> {
    let program = scratch.join("one_line.lox");
    std::fs::write(&program, crate::lox_layout::ONE_LINE)
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let mut kib = [Vec::new(), Vec::new()];
    for _ in 0..ONE_LINE_RUNS {
        for (i, (vm, kind)) in [(clox, Vm::Clox), (lox, Vm::Lox)].into_iter().enumerate() {
            let (out, run) = run_once(vm, &program, scratch, kind, GcStats::Off)?;
            if out != b"hi\n" {
                return Err(format!(
                    "{} printed {out:?} for print \"hi\";",
                    vm.display()
                ));
            }
            kib[i].push(run.rss_kib as f64);
        }
    }
    let [c, l] = kib.map(|v| median(v) as u64);
    Ok([c, l])
}

/// Builds clox into `target/clox` (`target/clox-static` linked
/// static-pie).
fn build_clox(r: &mut Runner, linkage: Linkage) -> Result<PathBuf, String> {
    let sources = root().join("../shared/clox");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&sources)
        .map_err(|e| format!("no clox sources at {}: {e}", sources.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    let (binary, link, what) = match linkage {
        Linkage::Dynamic => ("target/clox", None, "build clox (cc -O3 -flto)"),
        Linkage::StaticPie => (
            "target/clox-static",
            Some("-static-pie"),
            "build clox (cc -O3 -flto -static-pie)",
        ),
    };
    let binary = root().join(binary);
    let mut cc = Command::new("cc");
    cc.args(["-O3", "-flto", "-std=c99", "-w"])
        .args(link)
        .args(&files)
        .arg("-o")
        .arg(&binary);
    r.step(what, &mut cc)?;
    Ok(binary)
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("{rustc} -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| format!("{rustc} -vV printed no host"))
}

/// The benchmark programs, sorted.
fn programs() -> Result<Vec<PathBuf>, String> {
    let dir = root().join("examples/lox/bench");
    let mut programs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "lox"))
        .collect();
    programs.sort();
    Ok(programs)
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Vm {
    Clox,
    Lox,
    /// `lox --collector concurrent-generational`.
    LoxConcurrent,
}

impl Run {
    /// Takes the collector's figures of `stats`, a run with them printed.
    fn gc_from(&mut self, stats: &Run) {
        self.gc_pause_ns = stats.gc_pause_ns;
        self.gc_cycles = stats.gc_cycles;
        self.gc_seconds = stats.seconds;
    }
}

/// Runs `vm` on `program` once; its stdout and measurements.
fn run_once(
    vm: &Path,
    program: &Path,
    scratch: &Path,
    kind: Vm,
    stats: GcStats,
) -> Result<(Vec<u8>, Run), String> {
    let rss_file = scratch.join("rss");
    let mut c = Command::new("/usr/bin/time");
    c.args(["-f", "%M", "-o"]).arg(&rss_file).arg(vm);
    if kind == Vm::LoxConcurrent {
        c.args(["--collector", "concurrent-generational"]);
    }
    c.arg(program);
    if stats == GcStats::Printed {
        c.env("LOX_GC_STATS", "1");
    }
    let start = Instant::now();
    let out = c
        .output()
        .map_err(|e| format!("cannot run {}: {e}", vm.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{} {} failed ({}):\n{}",
            vm.display(),
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rss_kib = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|s| s.trim().lines().last().and_then(|l| l.trim().parse().ok()))
        .ok_or("GNU time wrote no peak RSS")?;
    let mut run = Run {
        seconds,
        rss_kib,
        ..Run::default()
    };
    if stats == GcStats::Printed {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stats = stderr
            .lines()
            .find(|l| l.starts_with("lox-gc-stats"))
            .ok_or("lox printed no lox-gc-stats line (LOX_GC_STATS=1)")?;
        run.gc_pause_ns = stat(stats, "pause_ns");
        run.gc_cycles = stat(stats, "cycles");
    }
    Ok((out.stdout, run))
}

/// The number after `name=` in a `lox-gc-stats` line (0 if absent).
fn stat(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn print_table(programs: &[PathBuf], results: &[(Vec<Run>, Vec<Run>)], runs: u32) {
    println!(
        "\nhotmem-lox vs clox: median of {runs} runs each, interleaved; peak RSS medians; GC share = lox's pauses / lox's wall time, and GCs, from one more run with LOX_GC_STATS=1"
    );
    let pairs: Vec<(&[Run], &[Run])> = results.iter().map(|(c, l)| (&c[..], &l[..])).collect();
    let geomean = print_rows(programs, &pairs, ["clox", "lox"]);
    println!("geometric mean of lox/clox: {geomean:.2}x");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}

/// `--concurrent`: the concurrent collector's young and old cycles against
/// lox's default collector (stop-the-world, generational), same runs.
fn print_versus(
    programs: &[PathBuf],
    results: &[(Vec<Run>, Vec<Run>)],
    versus: &[Vec<Run>],
    runs: u32,
) {
    println!(
        "\nlox --collector concurrent-generational vs lox (stop-the-world, generational): median of {runs} runs each, interleaved with the above; GC share = pauses / wall time"
    );
    let pairs: Vec<(&[Run], &[Run])> = results
        .iter()
        .zip(versus)
        .map(|((_, l), v)| (&l[..], &v[..]))
        .collect();
    let geomean = print_rows(programs, &pairs, ["lox", "conc"]);
    println!("geometric mean of concurrent-generational/lox: {geomean:.2}x (goal <= 1.05)");
}

/// One row per program: the baseline's and the measured VM's median times,
/// their ratio, both median peak RSS, the measured one's GC share and
/// collections; returns the geometric mean of the ratios. `names`: the
/// baseline's and the measured VM's column names.
fn print_rows(programs: &[PathBuf], pairs: &[(&[Run], &[Run])], names: [&str; 2]) -> f64 {
    let [b, m] = names;
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>11} {:>11} {:>9} {:>6}",
        "program",
        format!("{b} s"),
        format!("{m} s"),
        format!("{m}/{b}"),
        format!("{b} RSS"),
        format!("{m} RSS"),
        "GC share",
        "GCs"
    );
    let mut log_sum = 0.0;
    for (program, (base, measured)) in programs.iter().zip(pairs) {
        let name = program
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let c = median(base.iter().map(|r| r.seconds).collect());
        let l = median(measured.iter().map(|r| r.seconds).collect());
        let ratio = l / c;
        log_sum += ratio.ln();
        let c_rss = median(base.iter().map(|r| r.rss_kib as f64).collect()) / 1024.0;
        let l_rss = median(measured.iter().map(|r| r.rss_kib as f64).collect()) / 1024.0;
        let share = median(
            measured
                .iter()
                .map(|r| r.gc_pause_ns as f64 / 1e9 / r.gc_seconds * 100.0)
                .collect(),
        );
        let cycles = median(measured.iter().map(|r| r.gc_cycles as f64).collect());
        println!(
            "{name:<16} {c:>9.3} {l:>9.3} {ratio:>8.2}x {c_rss:>7.1} MiB {l_rss:>7.1} MiB {share:>8.1}% {cycles:>6.0}"
        );
    }
    (log_sum / programs.len().max(1) as f64).exp()
}

#[cfg(test)]
mod tests {
    use super::build_rustflags;

    #[test]
    fn the_build_tables_rustflags_are_read() {
        let config = "[alias]\nx = \"run\"\n\n[build]\n# a comment\nrustflags = [\n    \"-C\", \"llvm-args=-a=5\",\n    \"-C\", \"llvm-args=-b=128\",\n]\n\n[target.x]\nrustflags = [\"-C\", \"no\"]\n";
        assert_eq!(
            build_rustflags(config),
            ["-C", "llvm-args=-a=5", "-C", "llvm-args=-b=128"]
        );
        assert_eq!(
            build_rustflags("[build]\nrustflags = [\"-C\", \"x\"]\n"),
            ["-C", "x"]
        );
        assert!(build_rustflags("[alias]\n").is_empty());
    }

    #[test]
    fn the_workspace_config_has_the_dispatch_flags() {
        let config = std::fs::read_to_string(crate::steps::root().join(".cargo/config.toml"))
            .expect("the workspace's cargo config");
        let flags = build_rustflags(&config);
        assert!(
            flags.iter().any(|f| f.starts_with("llvm-args=-tail-dup")),
            "{flags:?}"
        );
    }
}
