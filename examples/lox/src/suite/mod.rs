//! The conformance-suite runner: runs an interpreter on every test of the
//! official Lox suite and checks stdout, stderr and the exit status against
//! the expectations written in each file (see the suite's `README.md`).
//!
//! ```no_run
//! use hotmem_lox::suite::{Interpreter, SuiteConfig, SuiteRun, run_suite};
//!
//! let config = SuiteConfig::new(Interpreter::new("target/clox"));
//! match run_suite(&config) {
//!     SuiteRun::Completed(report) => {
//!         print!("{report}");
//!         assert!(report.all_passed());
//!     }
//!     SuiteRun::Skipped(reason) => println!("skipped: {reason}"),
//! }
//! ```

#![forbid(unsafe_code)]

mod check;
mod expect;
mod lines;
mod process;
mod report;

#[cfg(test)]
mod tests;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

pub use check::{Mismatch, check, stdout_diff};
pub use expect::{
    ExpectationError, Expectations, ExpectedExit, ExpectedOutput, ExpectedRuntimeError, TestFile,
    parse_test_file,
};
pub use process::{Interpreter, RunOutput, Termination, run_file};
pub use report::{Outcome, SkipReason, SuiteReport, SuiteRun, TestResult};

/// The environment variable that overrides the suite directory.
pub const SUITE_DIR_VAR: &str = "LOX_TESTS";

/// The suite directory: `$LOX_TESTS` if set, else `../shared/lox-tests`
/// relative to the workspace root.
pub fn default_suite_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(SUITE_DIR_VAR) {
        return PathBuf::from(dir);
    }
    // This crate is examples/lox in the workspace.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/lox-tests");
    dir.canonicalize().unwrap_or(dir)
}

/// Which tests to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Selection {
    /// Every test.
    #[default]
    All,
    /// Only the tests that expect a compile error (exit 65): what a front
    /// end without a VM (`lox --compile-only`) can pass.
    CompileErrors,
}

/// How to run the suite.
#[derive(Clone, Debug)]
pub struct SuiteConfig {
    /// The interpreter under test.
    pub interpreter: Interpreter,
    /// The directory holding the `.lox` tests.
    pub suite_dir: PathBuf,
    /// Which tests to run.
    pub selection: Selection,
    /// Only tests whose path (relative to the suite) starts with this.
    pub filter: Option<String>,
    /// How many tests run at once.
    pub jobs: NonZeroUsize,
    /// How long one test may run before it is killed and failed.
    pub timeout: Duration,
}

impl SuiteConfig {
    /// Every test of [`default_suite_dir`], a job per CPU (at most 8), 10 s
    /// per test.
    pub fn new(interpreter: Interpreter) -> Self {
        let cpus = thread::available_parallelism().map_or(2, NonZeroUsize::get);
        Self {
            interpreter,
            suite_dir: default_suite_dir(),
            selection: Selection::All,
            filter: None,
            jobs: NonZeroUsize::new(cpus.min(8)).unwrap_or(NonZeroUsize::MIN),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Runs the suite as `config` says.
///
/// A missing suite directory (or one without tests) is reported as
/// [`SuiteRun::Skipped`], not as a failure.
pub fn run_suite(config: &SuiteConfig) -> SuiteRun {
    let files = match discover(&config.suite_dir) {
        Ok(files) if files.is_empty() => {
            return SuiteRun::Skipped(SkipReason::NoTests(config.suite_dir.clone()));
        }
        Ok(files) => files,
        Err(error) => {
            return SuiteRun::Skipped(SkipReason::Unreadable {
                dir: config.suite_dir.clone(),
                error: error.to_string(),
            });
        }
    };
    let selected: Vec<PathBuf> = files
        .into_iter()
        .filter(|path| {
            let relative = relative(&config.suite_dir, path);
            config
                .filter
                .as_deref()
                .is_none_or(|prefix| relative.to_string_lossy().starts_with(prefix))
        })
        .collect();
    let results = run_parallel(config, &selected);
    SuiteRun::Completed(SuiteReport::new(results))
}

/// Every `.lox` file under `dir`, sorted.
///
/// # Errors
///
/// The I/O error of reading a directory.
pub fn discover(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "lox") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn relative(base: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(base).unwrap_or(path).to_path_buf()
}

/// Runs the files on `config.jobs` threads; results in file order, `None`
/// for files that are not selected tests.
fn run_parallel(config: &SuiteConfig, files: &[PathBuf]) -> Vec<TestResult> {
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    thread::scope(|scope| {
        for _ in 0..config.jobs.get().min(files.len().max(1)) {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(index) else { return };
                    if let Some(result) = run_one(config, file) {
                        // The receiver outlives the scope.
                        let _ = sender.send((index, result));
                    }
                }
            });
        }
    });
    drop(sender);
    let mut results: Vec<(usize, TestResult)> = receiver.into_iter().collect();
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

/// Runs one file; `None` if it is not a test or not selected.
fn run_one(config: &SuiteConfig, file: &Path) -> Option<TestResult> {
    let path = relative(&config.suite_dir, file);
    let source = match std::fs::read(file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            return Some(TestResult {
                path,
                outcome: Outcome::Error(format!("cannot read the test: {error}")),
            });
        }
    };
    let expectations = match parse_test_file(&source) {
        Ok(TestFile::NonTest) => return None,
        Ok(TestFile::Test(expectations)) => expectations,
        Err(error) => {
            return Some(TestResult {
                path,
                outcome: Outcome::Error(error.to_string()),
            });
        }
    };
    if config.selection == Selection::CompileErrors
        && expectations.exit != ExpectedExit::CompileError
    {
        return None;
    }
    let outcome = match run_file(&config.interpreter, file, config.timeout) {
        Err(error) => Outcome::Error(format!(
            "cannot run {}: {error}",
            config.interpreter.program.display()
        )),
        Ok(output) => {
            let mismatches = check(&expectations, &output);
            if mismatches.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Failed {
                    diff: stdout_diff(&expectations.output, &output.stdout),
                    stderr: output.stderr,
                    mismatches,
                }
            }
        }
    };
    Some(TestResult { path, outcome })
}
