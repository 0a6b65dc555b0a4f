//! Judging one run against a test's expectations, by the suite README's
//! rules (which are the official runner's).

use std::fmt;
use std::time::Duration;

use super::expect::{Expectations, ExpectedOutput};
use super::lines::{reported_error, split_lines, stack_trace_line};
use super::process::{RunOutput, Termination};

/// Unexpected stderr lines reported before the rest is summarized.
const UNEXPECTED_SHOWN: usize = 10;

/// One way a run differed from what the test expects.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mismatch {
    /// The interpreter ran past the deadline.
    TimedOut(Duration),
    /// A runtime error was expected; stderr had fewer than two lines.
    NoRuntimeError {
        /// The expected message.
        expected: String,
    },
    /// stderr's first line was not the expected runtime error message.
    WrongRuntimeError {
        /// The expected message.
        expected: String,
        /// stderr's first line.
        got: String,
    },
    /// No `[line N]` after the runtime error message.
    NoStackTrace,
    /// The innermost stack frame named another line.
    WrongRuntimeErrorLine {
        /// The line of the test's comment.
        expected: u32,
        /// The line the trace named.
        got: u32,
    },
    /// A compile error the test does not expect.
    UnexpectedError(String),
    /// A stderr line that is no compile error.
    UnexpectedStderr(String),
    /// More unexpected stderr lines than are listed.
    MoreUnexpected(usize),
    /// An expected compile error (`[N] Error...`) that was not reported.
    MissingError(String),
    /// The wrong exit status.
    WrongExit {
        /// The status the test expects.
        expected: i32,
        /// How the interpreter ended.
        got: Termination,
    },
    /// stdout has a line where none was expected.
    UnexpectedOutput {
        /// The 0-based stdout line.
        index: usize,
        /// Its text.
        got: String,
    },
    /// A stdout line differs from the expected one.
    WrongOutput {
        /// The 0-based stdout line.
        index: usize,
        /// The expected text.
        expected: String,
        /// The text printed.
        got: String,
    },
    /// stdout ended before an expected line.
    MissingOutput {
        /// The expected text.
        expected: String,
        /// The test-file line that expects it.
        source_line: u32,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut(after) => write!(f, "Timed out after {:.1}s.", after.as_secs_f64()),
            Self::NoRuntimeError { expected } => {
                write!(f, "Expected runtime error '{expected}' and got none.")
            }
            Self::WrongRuntimeError { expected, got } => {
                write!(f, "Expected runtime error '{expected}' and got: {got}")
            }
            Self::NoStackTrace => f.write_str("Expected a stack trace line '[line N]' on stderr."),
            Self::WrongRuntimeErrorLine { expected, got } => write!(
                f,
                "Expected runtime error on line {expected} but was on line {got}."
            ),
            Self::UnexpectedError(line) => write!(f, "Unexpected error: {line}"),
            Self::UnexpectedStderr(line) => write!(f, "Unexpected output on stderr: {line}"),
            Self::MoreUnexpected(count) => write!(f, "(truncated {count} more...)"),
            Self::MissingError(error) => write!(f, "Missing expected error: {error}"),
            Self::WrongExit { expected, got } => match got {
                Termination::Exited(code) => {
                    write!(f, "Expected return code {expected} and got {code}.")
                }
                Termination::Signaled(signal) => {
                    write!(
                        f,
                        "Expected return code {expected}; killed by signal {signal}."
                    )
                }
                Termination::TimedOut(_) => {
                    write!(f, "Expected return code {expected}; timed out.")
                }
            },
            Self::UnexpectedOutput { got, .. } => {
                write!(f, "Got output '{got}' when none was expected.")
            }
            Self::WrongOutput {
                index,
                expected,
                got,
            } => write!(
                f,
                "Expected output '{expected}' on line {index} and got '{got}'."
            ),
            Self::MissingOutput {
                expected,
                source_line,
            } => write!(
                f,
                "Missing expected output '{expected}' on line {source_line}."
            ),
        }
    }
}

/// Every mismatch between `output` and `expectations`, in the order the
/// official runner checks: stderr, exit status, stdout. Empty means pass.
pub fn check(expectations: &Expectations, output: &RunOutput) -> Vec<Mismatch> {
    if let Termination::TimedOut(after) = output.termination {
        return vec![Mismatch::TimedOut(after)];
    }
    let mut mismatches = Vec::new();
    let stderr = split_lines(&output.stderr);
    match &expectations.runtime_error {
        Some(expected) => {
            check_runtime_error(&expected.message, expected.line, &stderr, &mut mismatches)
        }
        None => check_compile_errors(expectations, &stderr, &mut mismatches),
    }
    let expected_exit = expectations.exit.code();
    if output.termination != Termination::Exited(expected_exit) {
        mismatches.push(Mismatch::WrongExit {
            expected: expected_exit,
            got: output.termination,
        });
    }
    check_output(&expectations.output, &output.stdout, &mut mismatches);
    mismatches
}

fn check_runtime_error(message: &str, line: u32, stderr: &[&str], out: &mut Vec<Mismatch>) {
    let [first, trace @ ..] = stderr else {
        out.push(Mismatch::NoRuntimeError {
            expected: message.to_owned(),
        });
        return;
    };
    if trace.is_empty() {
        out.push(Mismatch::NoRuntimeError {
            expected: message.to_owned(),
        });
        return;
    }
    if *first != message {
        out.push(Mismatch::WrongRuntimeError {
            expected: message.to_owned(),
            got: (*first).to_owned(),
        });
    }
    match trace.iter().find_map(|line| stack_trace_line(line)) {
        None => out.push(Mismatch::NoStackTrace),
        Some(got) if got != line => out.push(Mismatch::WrongRuntimeErrorLine {
            expected: line,
            got,
        }),
        Some(_) => {}
    }
}

fn check_compile_errors(expectations: &Expectations, stderr: &[&str], out: &mut Vec<Mismatch>) {
    let mut found = std::collections::BTreeSet::new();
    let mut unexpected = 0;
    for line in stderr {
        let mismatch = match reported_error(line) {
            Some(error) if expectations.compile_errors.contains(&error) => {
                found.insert(error);
                continue;
            }
            Some(_) => Mismatch::UnexpectedError((*line).to_owned()),
            None if line.is_empty() => continue,
            None => Mismatch::UnexpectedStderr((*line).to_owned()),
        };
        if unexpected < UNEXPECTED_SHOWN {
            out.push(mismatch);
        }
        unexpected += 1;
    }
    if unexpected > UNEXPECTED_SHOWN {
        out.push(Mismatch::MoreUnexpected(unexpected - UNEXPECTED_SHOWN));
    }
    for missing in expectations.compile_errors.difference(&found) {
        out.push(Mismatch::MissingError(missing.clone()));
    }
}

fn check_output(expected: &[ExpectedOutput], stdout: &str, out: &mut Vec<Mismatch>) {
    let mut lines = split_lines(stdout);
    if lines.last() == Some(&"") {
        lines.pop();
    }
    for (index, line) in lines.iter().enumerate() {
        match expected.get(index) {
            None => out.push(Mismatch::UnexpectedOutput {
                index,
                got: (*line).to_owned(),
            }),
            Some(want) if want.text != *line => out.push(Mismatch::WrongOutput {
                index,
                expected: want.text.clone(),
                got: (*line).to_owned(),
            }),
            Some(_) => {}
        }
    }
    for missing in expected.iter().skip(lines.len()) {
        out.push(Mismatch::MissingOutput {
            expected: missing.text.clone(),
            source_line: missing.source_line,
        });
    }
}

/// A few lines of expected and actual stdout around their first difference,
/// or `None` when they agree.
pub fn stdout_diff(expected: &[ExpectedOutput], stdout: &str) -> Option<String> {
    const CONTEXT: usize = 2;
    const SHOWN: usize = 3;
    let mut actual = split_lines(stdout);
    if actual.last() == Some(&"") {
        actual.pop();
    }
    let first = (0..expected.len().max(actual.len()))
        .find(|&i| expected.get(i).map(|e| e.text.as_str()) != actual.get(i).copied())?;
    let mut diff = format!(
        "stdout from line {} (- expected, + got):\n",
        first.saturating_sub(CONTEXT)
    );
    for line in &actual[first.saturating_sub(CONTEXT)..first] {
        diff.push_str(&format!("    {line}\n"));
    }
    for want in expected.iter().skip(first).take(SHOWN) {
        diff.push_str(&format!("  - {}\n", want.text));
    }
    for got in actual.iter().skip(first).take(SHOWN) {
        diff.push_str(&format!("  + {got}\n"));
    }
    let left = expected.len().max(actual.len()) - first;
    if left > SHOWN {
        diff.push_str(&format!("    ... {} more lines\n", left - SHOWN));
    }
    Some(diff)
}
