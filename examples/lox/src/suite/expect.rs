//! What a test file expects, read from its comments exactly as the suite's
//! README (and the official runner) state it.

use std::collections::BTreeSet;
use std::fmt;

use super::lines::{after, split_lines, tagged_error_line};

/// The exit status a test expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedExit {
    /// 0: no error.
    Success,
    /// 65: a compile error.
    CompileError,
    /// 70: a runtime error.
    RuntimeError,
}

impl ExpectedExit {
    /// The numeric exit status.
    pub fn code(self) -> i32 {
        match self {
            Self::Success => 0,
            Self::CompileError => 65,
            Self::RuntimeError => 70,
        }
    }
}

/// One expected line of stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedOutput {
    /// The exact text of the line.
    pub text: String,
    /// The line of the test file that states it.
    pub source_line: u32,
}

/// An expected runtime error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedRuntimeError {
    /// The exact first line of stderr.
    pub message: String,
    /// The line the innermost stack frame must name.
    pub line: u32,
}

/// Everything a test expects of the interpreter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectations {
    /// stdout, line by line, in order.
    pub output: Vec<ExpectedOutput>,
    /// Compile errors, each as `[N] Error...` (the form the runner compares).
    pub compile_errors: BTreeSet<String>,
    /// A runtime error, if one is expected.
    pub runtime_error: Option<ExpectedRuntimeError>,
    /// The exit status.
    pub exit: ExpectedExit,
}

/// A parsed `.lox` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestFile {
    /// Marked `// nontest`: not a test, skipped.
    NonTest,
    /// A test and its expectations.
    Test(Expectations),
}

/// A test file whose expectations contradict each other.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpectationError {
    /// It expects both compile errors and a runtime error.
    CompileAndRuntimeErrors,
}

impl fmt::Display for ExpectationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CompileAndRuntimeErrors => {
                f.write_str("Cannot expect both compile and runtime errors.")
            }
        }
    }
}

impl std::error::Error for ExpectationError {}

/// Reads the expectations of a test file from its source.
///
/// Per line, the first of these that matches wins: `// nontest` (the whole
/// file is no test), `// expect: TEXT`, `// Error...` (a compile error on
/// this line), `// [line N] Error...` / `// [c line N] Error...` (a compile
/// error on line N; `[java line N]` is ignored), `// expect runtime error:
/// MESSAGE`.
///
/// # Errors
///
/// [`ExpectationError`] if the file expects both kinds of error.
pub fn parse_test_file(source: &str) -> Result<TestFile, ExpectationError> {
    let mut output = Vec::new();
    let mut compile_errors = BTreeSet::new();
    let mut runtime_error = None;
    let mut exit = ExpectedExit::Success;
    for (index, line) in split_lines(source).into_iter().enumerate() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        if line.contains("// nontest") {
            return Ok(TestFile::NonTest);
        }
        if let Some(text) = after(line, "// expect:") {
            let text = text.strip_prefix(' ').unwrap_or(text);
            output.push(ExpectedOutput {
                text: text.to_owned(),
                source_line: number,
            });
            continue;
        }
        if let Some(at) = line.find("// Error") {
            compile_errors.insert(format!("[{number}] {}", &line[at + 3..]));
            exit = ExpectedExit::CompileError;
            continue;
        }
        if let Some((tag, error_line, error)) = tagged_error_line(line) {
            if tag.is_none_or(|tag| tag == "c") {
                compile_errors.insert(format!("[{error_line}] {error}"));
                exit = ExpectedExit::CompileError;
            }
            continue;
        }
        if let Some(message) = after(line, "// expect runtime error: ").filter(|m| !m.is_empty()) {
            runtime_error = Some(ExpectedRuntimeError {
                message: message.to_owned(),
                line: number,
            });
            exit = ExpectedExit::RuntimeError;
        }
    }
    if !compile_errors.is_empty() && runtime_error.is_some() {
        return Err(ExpectationError::CompileAndRuntimeErrors);
    }
    Ok(TestFile::Test(Expectations {
        output,
        compile_errors,
        runtime_error,
        exit,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expectations(source: &str) -> Expectations {
        match parse_test_file(source).unwrap() {
            TestFile::Test(expectations) => expectations,
            TestFile::NonTest => panic!("not a test"),
        }
    }

    #[test]
    fn expected_output_in_order() {
        let e =
            expectations("print 1; // expect: 1\nprint \"\"; // expect:\nprint 2; // expect:  2\n");
        let texts: Vec<_> = e
            .output
            .iter()
            .map(|o| (o.text.as_str(), o.source_line))
            .collect();
        assert_eq!(texts, [("1", 1), ("", 2), (" 2", 3)]);
        assert_eq!(e.exit, ExpectedExit::Success);
        assert!(e.compile_errors.is_empty());
        assert_eq!(e.runtime_error, None);
    }

    #[test]
    fn compile_error_on_its_own_line() {
        let e = expectations("\n\nprint; // Error at ';': Expect expression.\n");
        assert_eq!(
            e.compile_errors.into_iter().collect::<Vec<_>>(),
            ["[3] Error at ';': Expect expression."]
        );
        assert_eq!(e.exit, ExpectedExit::CompileError);
        assert_eq!(e.exit.code(), 65);
    }

    #[test]
    fn compile_errors_on_stated_lines_c_and_untagged_only() {
        let e = expectations(
            "// [line 2] Error: Unexpected character.\n\
             // [java line 3] Error at 'x': Java only.\n\
             // [c line 4] Error at end: C only.\n",
        );
        assert_eq!(
            e.compile_errors.into_iter().collect::<Vec<_>>(),
            [
                "[2] Error: Unexpected character.",
                "[4] Error at end: C only."
            ]
        );
        assert_eq!(e.exit, ExpectedExit::CompileError);
    }

    #[test]
    fn java_only_errors_expect_nothing() {
        let e = expectations("// [java line 1] Error: x\nprint 1; // expect: 1\n");
        assert!(e.compile_errors.is_empty());
        assert_eq!(e.exit, ExpectedExit::Success);
    }

    #[test]
    fn runtime_error_with_its_line() {
        let e = expectations(
            "var a;\nunknown(); // expect runtime error: Undefined variable 'unknown'.\n",
        );
        assert_eq!(
            e.runtime_error,
            Some(ExpectedRuntimeError {
                message: "Undefined variable 'unknown'.".into(),
                line: 2
            })
        );
        assert_eq!(e.exit, ExpectedExit::RuntimeError);
        assert_eq!(e.exit.code(), 70);
    }

    #[test]
    fn nontest_anywhere_skips_the_file() {
        assert_eq!(
            parse_test_file("print 1; // expect: 1\n// nontest\n"),
            Ok(TestFile::NonTest)
        );
    }

    #[test]
    fn both_kinds_of_error_is_a_test_error() {
        assert_eq!(
            parse_test_file("x; // Error at 'x': A.\ny; // expect runtime error: B.\n"),
            Err(ExpectationError::CompileAndRuntimeErrors)
        );
    }

    #[test]
    fn expect_wins_over_error_on_the_same_line() {
        let e = expectations("// expect: // Error at 'x': no\n");
        assert_eq!(e.output[0].text, "// Error at 'x': no");
        assert!(e.compile_errors.is_empty());
    }

    #[test]
    fn duplicate_errors_collapse() {
        let e = expectations("// [line 1] Error: A\n// [c line 1] Error: A\n");
        assert_eq!(e.compile_errors.len(), 1);
    }
}
