//! The steps each command runs, and the runner that times them.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Packages without loom models, left out of the loom run: the command
/// crate, the benches, the examples (whose library target holds the
/// `--report` charts and the `HOTMEM_LOG` helper) and the Lox VM
/// (`examples/lox`).
const NO_LOOM_PACKAGES: &[&str] = &["xtask", "hotmem-benches", "hotmem-examples", "hotmem-lox"];

/// Runs steps, prints each command and its duration, remembers the timings.
pub(crate) struct Runner {
    done: Vec<(String, Duration)>,
    started: Instant,
}

impl Runner {
    pub(crate) fn new() -> Self {
        Self {
            done: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Runs one step; a failure stops the run with the step's name.
    pub(crate) fn step(&mut self, name: &str, cmd: &mut Command) -> Result<(), String> {
        let shown = show(cmd);
        eprintln!("\n==> [{name}] {shown}");
        let t = Instant::now();
        let status = cmd
            .status()
            .map_err(|e| format!("[{name}] cannot start `{shown}`: {e}"))?;
        let took = t.elapsed();
        eprintln!(
            "<== [{name}] {} in {:.1}s",
            if status.success() { "ok" } else { "FAILED" },
            took.as_secs_f64()
        );
        self.done.push((name.to_string(), took));
        if status.success() {
            Ok(())
        } else {
            Err(format!("step [{name}] failed ({status}): {shown}"))
        }
    }

    /// Records a step that was run some other way (the NUMA guest, whose
    /// console the caller reads).
    pub(crate) fn record(&mut self, name: &str, took: Duration) {
        self.done.push((name.to_string(), took));
    }

    /// Prints the time each step took.
    pub(crate) fn summary(&self) {
        if self.done.is_empty() {
            return;
        }
        eprintln!("\nxtask steps:");
        for (name, took) in &self.done {
            eprintln!("  {:>8.1}s  {name}", took.as_secs_f64());
        }
        eprintln!("  {:>8.1}s  total", self.started.elapsed().as_secs_f64());
    }
}

pub(crate) fn show(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            s.push_str(&format!("{}={} ", k.to_string_lossy(), v.to_string_lossy()));
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

pub(crate) fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

pub(crate) fn cargo(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root()).args(args);
    c
}

/// `cargo run --release` of an example of the examples crate, ready for
/// the example's own arguments.
fn release_example(name: &str) -> Command {
    cargo(&[
        "run",
        "--release",
        "-p",
        "hotmem-examples",
        "--example",
        name,
        "--",
    ])
}

/// `cargo xtask demo`: the main job.
pub(crate) fn demo(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let mut c = release_example("demo");
    // `cargo xtask demo -- --flags` (as the README writes it) hands us the
    // separator too; the demo's arguments are what follows it.
    let args = match args.first() {
        Some(sep) if sep == "--" => &args[1..],
        _ => args,
    };
    c.args(args);
    r.step("demo", &mut c)
}

/// Whether the browser check of the report page must run.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Browser {
    /// Where Chromium is installed; said so where it is not.
    IfInstalled,
    /// Always: a missing Chromium fails the tests (CI installs it first).
    Required,
}

/// Chromium's binary on `PATH`, if any.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// `cargo xtask test`: everything a user needs to trust the code, ending
/// with the NUMA guests (`numa-vm`), skipped with a message where their
/// packages cannot be installed.
pub(crate) fn test(r: &mut Runner, browser: Browser) -> Result<(), String> {
    match chromium() {
        Some(c) => eprintln!(
            "xtask: the report page's browser check runs in {}",
            c.display()
        ),
        None => eprintln!(
            "xtask: no Chromium on PATH: the report page's browser check is skipped (Debian: apt-get install chromium)"
        ),
    }
    let mut tests = cargo(&["test", "--workspace"]);
    if browser == Browser::Required {
        tests.env("HOTMEM_REQUIRE_CHROMIUM", "1");
    }
    r.step("unit, integration and doc tests", &mut tests)?;
    facade_without_hwloc(r)?;
    lox_suite(r)?;
    loom(r, 2)?;
    crate::fuzz::smoke(r)?;
    // The NUMA tests on a real multi-node kernel: an emulated guest of 2
    // nodes x 2 CPUs, then 4 x 1 (about a minute each here).
    use crate::numa_vm::{VmShape, run_or_skip};
    run_or_skip(r, &[VmShape::new(2, 2), VmShape::new(4, 1)])
}

/// The facade's integration tests that do not run again without hwloc:
/// the slowest, whose subjects (heap sizing, evacuation failure, weak sets
/// and weak references) reach nothing NUMA-specific beyond building a
/// runtime, which every other test does too. They ran in the step before,
/// with the `numa` feature; again they took about 50 of this step's 150
/// seconds.
const NOT_AGAIN_WITHOUT_HWLOC: &[&str] = &[
    "soft_max",
    "young_evacuation_failure",
    "weak_sets",
    "weak_refs",
];

/// The facade built without its `numa` feature (no hwloc): every target
/// compiles, the library's and the other integration tests run, and the
/// doc examples.
fn facade_without_hwloc(r: &mut Runner) -> Result<(), String> {
    let dir = root().join("crates/hotmem/tests");
    let mut tests: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "rs" && !NOT_AGAIN_WITHOUT_HWLOC.contains(&stem.as_str()))
                .then_some(stem)
        })
        .collect();
    tests.sort();
    let mut args = vec!["test", "-p", "hotmem", "--no-default-features"];
    args.extend(["--lib", "--bins", "--examples"]);
    for test in &tests {
        args.extend(["--test", test.as_str()]);
    }
    r.step(
        "facade without hwloc (default-features = false)",
        &mut cargo(&args),
    )?;
    r.step(
        "facade without hwloc: doc examples",
        &mut cargo(&["test", "-p", "hotmem", "--no-default-features", "--doc"]),
    )
}

/// The Lox conformance suite on the release `lox`, collecting normally, at
/// every allocation (`--gc-stress`), and with the concurrent collector
/// running cycles back to back in a 16 MiB heap (`--gc-concurrent`, and
/// `--gc-concurrent-generational` with young and full cycles);
/// skipped with a message where the suite (`../shared/lox-tests`, or
/// `$LOX_TESTS`) is absent.
fn lox_suite(r: &mut Runner) -> Result<(), String> {
    let suite = std::env::var_os("LOX_TESTS")
        .map_or_else(|| root().join("../shared/lox-tests"), PathBuf::from);
    if !suite.is_dir() {
        eprintln!(
            "\n==> [lox suite] skipped: no Lox suite at {} (set LOX_TESTS)",
            suite.display()
        );
        return Ok(());
    }
    // With the examples' `numa` feature, which the Lox VM alone leaves
    // off (its binary then loads no libhwloc): the release runtime is then
    // the one the soak's and the hostile suite's examples use, built once.
    // NUMA changes nothing the suite checks.
    r.step(
        "build lox and lox-suite (release)",
        &mut cargo(&[
            "build",
            "--release",
            "-p",
            "hotmem-lox",
            "--bins",
            "--features",
            "hotmem-examples/numa",
        ]),
    )?;
    let lox = root().join("target/release/lox");
    let modes: [&[&str]; 4] = [
        &[],
        &["--gc-stress"],
        &["--gc-concurrent", "--heap-max", "16"],
        &["--gc-concurrent-generational", "--heap-max", "16"],
    ];
    for mode in modes {
        let mut c = Command::new(root().join("target/release/lox-suite"));
        c.arg("--quiet")
            .arg("--suite")
            .arg(&suite)
            .arg(&lox)
            .args(mode);
        r.step(
            &format!(
                "lox suite{}",
                mode.iter().fold(String::new(), |acc, a| acc + " " + a)
            ),
            &mut c,
        )?;
    }
    Ok(())
}

/// `cargo xtask ci`: the gates in order, then `test` (with the browser
/// check, Chromium installed first), the packaging of the library crates, a
/// short ASan run and a short soak.
pub(crate) fn ci(r: &mut Runner) -> Result<(), String> {
    if chromium().is_none() {
        crate::system::install_apt_packages(&["chromium"])
            .map_err(|e| format!("the browser check needs Chromium: {e}"))?;
    }
    r.step("fmt", &mut cargo(&["fmt", "--all", "--check"]))?;
    r.step(
        "clippy",
        &mut cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    // The Lox VM's `--report` page is behind a feature the workspace leaves
    // off (it links libm): lint that code too.
    r.step(
        "clippy (lox --features report)",
        &mut cargo(&[
            "clippy",
            "-p",
            "hotmem-lox",
            "--all-targets",
            "--features",
            "report",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    // As docs.rs builds them: every feature, `--cfg docsrs` (which turns on
    // `doc_cfg`, an unstable rustdoc feature: RUSTC_BOOTSTRAP lets stable
    // build it, as the sanitizer step does for its flags).
    let mut doc = cargo(&["doc", "--workspace", "--no-deps", "--all-features"]);
    doc.env("RUSTDOCFLAGS", "--cfg docsrs -D warnings")
        .env("RUSTC_BOOTSTRAP", "1");
    r.step("docs (as docs.rs builds them)", &mut doc)?;
    r.step(
        "benches compile",
        &mut cargo(&["bench", "--workspace", "--no-run"]),
    )?;
    test(r, Browser::Required)?;
    crate::package::package(r)?;
    crate::sanitize::ci(r)?;
    soak(r, CI_SOAK_SECS)
}

/// Seconds of soak that `ci` runs.
const CI_SOAK_SECS: u32 = 20;

/// `cargo xtask soak [--secs N]`: the whole runtime under load, with
/// invariant checks and a leak check at the end, then the
/// hostile-embedder suite (random public calls from several threads, a
/// panicking binding in half the cases, every collector) as long.
pub(crate) fn soak(r: &mut Runner, secs: u32) -> Result<(), String> {
    let mut c = release_example("soak");
    c.args(["--secs", &secs.to_string()]);
    r.step(&format!("soak ({secs}s)"), &mut c)?;
    let mut c = release_example("hostile");
    c.args(["--secs", &secs.to_string()]);
    r.step(&format!("hostile-embedder suite ({secs}s)"), &mut c)
}

/// `cargo xtask soak [--secs N]`.
pub(crate) fn soak_cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    soak(r, flag_value(args, "--secs")?.unwrap_or(60))
}

/// `cargo xtask bench [NAME]`.
pub(crate) fn bench(r: &mut Runner, name: Option<&str>) -> Result<(), String> {
    let mut c = cargo(&["bench", "-p", "hotmem-benches"]);
    if let Some(n) = name {
        c.args(["--bench", n]);
    }
    r.step("bench", &mut c)
}

fn loom(r: &mut Runner, preemptions: u32) -> Result<(), String> {
    let mut c = cargo(&["test", "--release", "--workspace", "--lib"]);
    for p in NO_LOOM_PACKAGES {
        c.args(["--exclude", p]);
    }
    c.args(["--", "loom"]);
    c.env("RUSTFLAGS", "--cfg hotmem_loom")
        .env("CARGO_TARGET_DIR", root().join("target/loom"))
        .env("LOOM_MAX_PREEMPTIONS", preemptions.to_string())
        .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "true");
    r.step("loom models", &mut c)
}

/// `cargo xtask loom [--preemptions N]`.
pub(crate) fn loom_cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let n = flag_value(args, "--preemptions")?.unwrap_or(2);
    loom(r, n)
}

pub(crate) fn flag_value(args: &[String], flag: &str) -> Result<Option<u32>, String> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} needs a number")),
    }
}
