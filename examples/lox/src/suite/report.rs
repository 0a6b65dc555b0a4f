//! Results: per test, per run, and how they print.

use std::fmt;
use std::path::PathBuf;

use super::check::Mismatch;

/// Lines of stderr shown under a failure.
const STDERR_SHOWN: usize = 10;

/// Mismatches listed under a failure (the first is the one that matters;
/// a wrong value usually makes every later line differ too).
const MISMATCHES_SHOWN: usize = 5;

/// How one test went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything matched.
    Passed,
    /// Something differed.
    Failed {
        /// Every difference, in the order they were checked.
        mismatches: Vec<Mismatch>,
        /// Expected and actual stdout around their first difference.
        diff: Option<String>,
        /// The interpreter's stderr.
        stderr: String,
    },
    /// The test could not be run (unreadable, contradictory, no interpreter).
    Error(String),
}

/// One test's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    /// The test's path relative to the suite directory.
    pub path: PathBuf,
    /// How it went.
    pub outcome: Outcome,
}

impl TestResult {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }
}

impl fmt::Display for TestResult {
    /// `PASS path`, or `FAIL path` with the first few mismatches, the stdout
    /// diff and the start of stderr.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.outcome {
            Outcome::Passed => writeln!(f, "PASS {path}"),
            Outcome::Error(error) => writeln!(f, "ERROR {path}\n    {error}"),
            Outcome::Failed {
                mismatches,
                diff,
                stderr,
            } => {
                writeln!(f, "FAIL {path}")?;
                for mismatch in mismatches.iter().take(MISMATCHES_SHOWN) {
                    writeln!(f, "    {mismatch}")?;
                }
                if mismatches.len() > MISMATCHES_SHOWN {
                    let more = mismatches.len() - MISMATCHES_SHOWN;
                    writeln!(f, "    ... {more} more mismatches")?;
                }
                if let Some(diff) = diff {
                    for line in diff.lines() {
                        writeln!(f, "    {line}")?;
                    }
                }
                let lines: Vec<&str> = stderr.lines().collect();
                if !lines.is_empty() {
                    writeln!(f, "    stderr:")?;
                    for line in lines.iter().take(STDERR_SHOWN) {
                        writeln!(f, "      {line}")?;
                    }
                    if lines.len() > STDERR_SHOWN {
                        writeln!(f, "      ... {} more lines", lines.len() - STDERR_SHOWN)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Why the suite did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// The directory could not be read (usually: it does not exist).
    Unreadable {
        /// The suite directory.
        dir: PathBuf,
        /// The I/O error.
        error: String,
    },
    /// The directory holds no `.lox` file.
    NoTests(PathBuf),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable { dir, error } => write!(
                f,
                "no Lox suite at {} ({error}); set {} to its directory",
                dir.display(),
                super::SUITE_DIR_VAR
            ),
            Self::NoTests(dir) => write!(f, "no .lox tests under {}", dir.display()),
        }
    }
}

/// What a suite run came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuiteRun {
    /// The tests ran.
    Completed(SuiteReport),
    /// There was no suite to run.
    Skipped(SkipReason),
}

/// The results of every test that ran, in path order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteReport {
    results: Vec<TestResult>,
}

impl SuiteReport {
    pub(super) fn new(results: Vec<TestResult>) -> Self {
        Self { results }
    }

    /// Every result.
    pub fn results(&self) -> &[TestResult] {
        &self.results
    }

    /// How many tests ran.
    pub fn total(&self) -> usize {
        self.results.len()
    }

    /// How many passed.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.passed()).count()
    }

    /// Whether every test passed (and at least one ran).
    pub fn all_passed(&self) -> bool {
        self.total() > 0 && self.passed() == self.total()
    }

    /// The failed (or unrunnable) tests.
    pub fn failures(&self) -> impl Iterator<Item = &TestResult> {
        self.results.iter().filter(|r| !r.passed())
    }

    /// The closing line: `246/246 passed`.
    pub fn summary(&self) -> String {
        format!("{}/{} passed", self.passed(), self.total())
    }
}

impl fmt::Display for SuiteReport {
    /// Every failure in detail, then the summary line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for failure in self.failures() {
            write!(f, "{failure}")?;
        }
        writeln!(f, "{}", self.summary())
    }
}
