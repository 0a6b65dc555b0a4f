//! Fuzzing with cargo-fuzz on stable (`--sanitizer none`): the smoke run of
//! `test`, long runs with a summary of executions and coverage, and the
//! replay of the regression corpus (`fuzz/regressions/TARGET/`: inputs that
//! once found a bug, run on every `test`).

use crate::steps::{Runner, cargo, flag_value, root};
use std::fs::File;
use std::path::PathBuf;

/// Inputs each fuzz target runs in the smoke step of `test` (5 to 40 seconds
/// each on this machine kind).
const SMOKE_RUNS: u32 = 4000;
/// The longest smoke input. The smoke also turns off libFuzzer's slow growth
/// of input length (`-len_control=0`): with a few thousand runs, inputs
/// would otherwise stay under a dozen bytes (chunk: 417 edges instead of 680).
const SMOKE_MAX_LEN: u32 = 512;
/// The smoke step's libFuzzer seed: with a fixed seed, a fixed number of
/// runs and a fresh corpus, the smoke runs the same inputs on every machine
/// and every commit, so CI cannot fail on an input it happened to draw this
/// time. Exploring new inputs is `cargo xtask fuzz`'s job.
const SMOKE_SEED: u32 = 1;
/// Seconds one fuzz input may run before libFuzzer reports it as a hang.
const INPUT_TIMEOUT_SECS: u32 = 60;
/// The cargo-fuzz version that `test` installs when it is missing.
const CARGO_FUZZ_VERSION: &str = "0.13.1";

fn target_dir() -> PathBuf {
    root().join("target/fuzz")
}

fn ensure_cargo_fuzz(r: &mut Runner) -> Result<(), String> {
    let present = cargo(&["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    let version = format!("cargo-fuzz@{CARGO_FUZZ_VERSION}");
    r.step(
        "install cargo-fuzz",
        &mut cargo(&["install", "--locked", &version]),
    )
}

/// The fuzz targets: every file in `fuzz/fuzz_targets/`.
fn targets() -> Result<Vec<String>, String> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "rs" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    Ok(names)
}

fn build(r: &mut Runner) -> Result<(), String> {
    let mut c = cargo(&["fuzz", "build", "--sanitizer", "none", "--release"]);
    c.env("CARGO_TARGET_DIR", target_dir());
    r.step("fuzz build", &mut c)
}

fn run_cmd(target: &str) -> std::process::Command {
    let mut c = cargo(&["fuzz", "run", "--sanitizer", "none", "--release", target]);
    c.env("CARGO_TARGET_DIR", target_dir());
    c
}

/// Runs every input of the target's regression corpus once.
fn replay(r: &mut Runner, target: &str) -> Result<(), String> {
    let dir = root().join("fuzz/regressions").join(target);
    let count = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    if count == 0 {
        return Ok(());
    }
    let mut c = run_cmd(target);
    c.arg(&dir).args(["--", "-runs=0"]);
    r.step(
        &format!("fuzz {target}: replay {count} regression input(s)"),
        &mut c,
    )
}

/// What a run printed at its end.
#[derive(Default)]
struct Stats {
    executions: u64,
    coverage: u64,
    features: u64,
    corpus: u64,
}

fn parse(log: &str) -> Stats {
    let mut s = Stats::default();
    for line in log.lines() {
        if let Some(v) = line.strip_prefix("stat::number_of_executed_units:") {
            s.executions = v.trim().parse().unwrap_or(0);
        }
        // "#123 DONE cov: 456 ft: 789 corp: 12/34b ..." or a progress line.
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            let value = || -> u64 {
                words
                    .clone()
                    .next()
                    .and_then(|v| v.split('/').next()?.parse().ok())
                    .unwrap_or(0)
            };
            match w {
                "cov:" => s.coverage = value(),
                "ft:" => s.features = value(),
                "corp:" => s.corpus = value(),
                _ => {}
            }
        }
    }
    s
}

/// How long one fuzz run goes on.
#[derive(Copy, Clone)]
enum Budget {
    /// A fixed number of inputs from a fixed seed and a fresh corpus seeded
    /// with the regression inputs: the same run every time.
    Reproducible { runs: u32, seed: u32 },
    /// As many inputs as fit in the time, from a random seed, growing the
    /// kept corpus in `fuzz/corpus/TARGET`.
    Explore { secs: u32 },
}

fn run(r: &mut Runner, target: &str, budget: Budget) -> Result<Stats, String> {
    let logs = target_dir().join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let log_path = logs.join(format!("{target}.log"));
    let log = File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let mut c = run_cmd(target);
    let (limit, what) = match budget {
        Budget::Reproducible { runs, seed } => {
            let corpus = target_dir().join("smoke-corpus").join(target);
            let _ = std::fs::remove_dir_all(&corpus);
            std::fs::create_dir_all(&corpus)
                .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
            c.arg(&corpus);
            let regressions = root().join("fuzz/regressions").join(target);
            if regressions.is_dir() {
                c.arg(regressions);
            }
            c.args([
                "--",
                &format!("-runs={runs}"),
                &format!("-seed={seed}"),
                "-len_control=0",
                &format!("-max_len={SMOKE_MAX_LEN}"),
            ]);
            (String::new(), format!("{runs} inputs, seed {seed}"))
        }
        Budget::Explore { secs } => {
            c.arg("--");
            (format!("-max_total_time={secs}"), format!("{secs}s"))
        }
    };
    // -max_total_time does not interrupt an input that runs long: -timeout
    // turns such an input into a reported failure (with its artifact).
    if !limit.is_empty() {
        c.arg(limit);
    }
    c.args([
        &format!("-timeout={INPUT_TIMEOUT_SECS}"),
        "-print_final_stats=1",
    ])
    .stderr(log.try_clone().map_err(|e| e.to_string())?)
    .stdout(log);
    let result = r.step(
        &format!("fuzz {target} ({what}, log {})", log_path.display()),
        &mut c,
    );
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    if let Err(e) = result {
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        for line in tail.into_iter().rev() {
            eprintln!("    {line}");
        }
        return Err(format!(
            "{e}\nthe crashing input is under fuzz/artifacts/{target}/; once fixed, add it to fuzz/regressions/{target}/"
        ));
    }
    let stats = parse(&text);
    eprintln!(
        "    {target}: {} executions, coverage {} edges, {} features, corpus {}",
        stats.executions, stats.coverage, stats.features, stats.corpus
    );
    Ok(stats)
}

/// The smoke step of `test`: build, then for every target replay its
/// regressions and run a fixed, seeded set of inputs.
pub(crate) fn smoke(r: &mut Runner) -> Result<(), String> {
    ensure_cargo_fuzz(r)?;
    build(r)?;
    for t in targets()? {
        replay(r, &t)?;
        run(
            r,
            &t,
            Budget::Reproducible {
                runs: SMOKE_RUNS,
                seed: SMOKE_SEED,
            },
        )?;
    }
    Ok(())
}

/// `cargo xtask fuzz TARGET|--all [--secs N]`.
pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let all = targets()?;
    let chosen: Vec<String> = if args.iter().any(|a| a == "--all") {
        all
    } else {
        match args.first().filter(|a| !a.starts_with("--")) {
            Some(t) if all.contains(t) => vec![t.clone()],
            _ => {
                return Err(format!(
                    "fuzz needs --all or a target: one of {}",
                    all.join(", ")
                ));
            }
        }
    };
    let secs = flag_value(args, "--secs")?.unwrap_or(60);
    ensure_cargo_fuzz(r)?;
    build(r)?;
    let mut table = Vec::new();
    for t in &chosen {
        replay(r, t)?;
        table.push((t.clone(), run(r, t, Budget::Explore { secs })?));
    }
    eprintln!("\nfuzz summary ({secs} s each):");
    eprintln!(
        "  {:<10} {:>14} {:>10} {:>10} {:>8}",
        "target", "executions", "coverage", "features", "corpus"
    );
    for (t, s) in table {
        eprintln!(
            "  {:<10} {:>14} {:>10} {:>10} {:>8}",
            t, s.executions, s.coverage, s.features, s.corpus
        );
    }
    Ok(())
}
