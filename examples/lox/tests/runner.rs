//! The suite runner end to end, on suites and interpreters of its own: a
//! temporary directory of small tests, and `sh` scripts that behave as
//! passing, failing and hanging interpreters.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hotmem_lox::suite::{
    Interpreter, Mismatch, Outcome, Selection, SkipReason, SuiteConfig, SuiteRun, run_suite,
};

/// A fresh suite directory holding `files`.
fn suite(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// An interpreter that runs `script` with the test file as `$1`.
fn shell(script: &str) -> Interpreter {
    Interpreter::new("sh").arg("-c").arg(script).arg("sh")
}

fn config(interpreter: Interpreter, dir: PathBuf) -> SuiteConfig {
    let mut config = SuiteConfig::new(interpreter);
    config.suite_dir = dir;
    config.jobs = NonZeroUsize::new(2).unwrap();
    config
}

fn completed(run: SuiteRun) -> hotmem_lox::suite::SuiteReport {
    match run {
        SuiteRun::Completed(report) => report,
        SuiteRun::Skipped(reason) => panic!("skipped: {reason}"),
    }
}

/// Tests whose expected output is the file's last word (`cat`-able).
const FILES: &[(&str, &str)] = &[
    ("a/one.lox", "// expect: one\n"),
    ("a/two.lox", "// expect: two\n"),
    ("b/three.lox", "// expect: three\n"),
    ("b/skip.lox", "// nontest\n"),
    ("c/error.lox", "x // Error at 'x': Bad.\n"),
    ("notes.txt", "not a test\n"),
];

/// Prints each file's expected line and fakes clox's error for error.lox.
const FAKE_LOX: &str = r#"case "$1" in
  *error.lox) echo "[line 1] Error at 'x': Bad." >&2; exit 65;;
  *) sed -n 's|// expect: ||p' "$1";;
esac"#;

#[test]
fn a_correct_interpreter_passes_everything() {
    let report = completed(run_suite(&config(
        shell(FAKE_LOX),
        suite("runner_pass", FILES),
    )));
    assert_eq!(report.summary(), "4/4 passed");
    assert!(report.all_passed());
    let paths: Vec<_> = report.results().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        ["a/one.lox", "a/two.lox", "b/three.lox", "c/error.lox"].map(PathBuf::from)
    );
}

#[test]
fn failures_are_reported_with_their_mismatches() {
    let report = completed(run_suite(&config(
        shell("echo wrong"),
        suite("runner_fail", FILES),
    )));
    assert_eq!(report.passed(), 0);
    assert_eq!(report.summary(), "0/4 passed");
    let first = report.failures().next().unwrap();
    let Outcome::Failed {
        mismatches, diff, ..
    } = &first.outcome
    else {
        panic!("expected a failure");
    };
    assert_eq!(
        mismatches[0],
        Mismatch::WrongOutput {
            index: 0,
            expected: "one".into(),
            got: "wrong".into()
        }
    );
    assert!(diff.as_deref().unwrap().contains("  - one\n  + wrong"));
    let text = report.to_string();
    assert!(text.contains("FAIL a/one.lox"), "{text}");
    assert!(text.ends_with("0/4 passed\n"), "{text}");
}

#[test]
fn a_hung_test_fails_at_its_deadline() {
    let files = [
        ("hang.lox", "// expect: never\n"),
        ("ok.lox", "// expect: ok\n"),
    ];
    let mut config = config(
        // `sleep` is a child of the shell: it keeps the pipes open after
        // the shell is killed, and the runner must not wait for it.
        shell(r#"case "$1" in *hang.lox) sleep 5;; *) echo ok;; esac"#),
        suite("runner_hang", &files),
    );
    config.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let report = completed(run_suite(&config));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(report.summary(), "1/2 passed");
    let Outcome::Failed { mismatches, .. } = &report.results()[0].outcome else {
        panic!("the hung test should fail");
    };
    assert!(
        matches!(mismatches[..], [Mismatch::TimedOut(_)]),
        "{mismatches:?}"
    );
}

#[test]
fn compile_error_selection_runs_only_tests_expecting_65() {
    let mut config = config(shell(FAKE_LOX), suite("runner_select", FILES));
    config.selection = Selection::CompileErrors;
    let report = completed(run_suite(&config));
    assert_eq!(report.summary(), "1/1 passed");
    assert_eq!(report.results()[0].path, PathBuf::from("c/error.lox"));
}

#[test]
fn a_filter_keeps_a_subtree() {
    let mut config = config(shell(FAKE_LOX), suite("runner_filter", FILES));
    config.filter = Some("a/".into());
    assert_eq!(completed(run_suite(&config)).summary(), "2/2 passed");
}

#[test]
fn a_missing_suite_is_skipped_not_failed() {
    let config = config(shell(FAKE_LOX), PathBuf::from("/nonexistent/lox-tests"));
    match run_suite(&config) {
        SuiteRun::Skipped(reason @ SkipReason::Unreadable { .. }) => {
            assert!(reason.to_string().contains("LOX_TESTS"), "{reason}");
        }
        other => panic!("expected a skip, got {other:?}"),
    }
}

#[test]
fn a_missing_interpreter_is_an_error_per_test() {
    let config = config(
        Interpreter::new("/nonexistent/lox"),
        suite("runner_noexe", &FILES[..1]),
    );
    let report = completed(run_suite(&config));
    assert!(matches!(report.results()[0].outcome, Outcome::Error(_)));
    assert_eq!(report.summary(), "0/1 passed");
}
