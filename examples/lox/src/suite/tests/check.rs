//! Judging runs: the README's rules for stdout, compile errors, runtime
//! errors and exit statuses.

use std::time::Duration;

use crate::suite::{
    Mismatch, RunOutput, Termination, TestFile, check, parse_test_file, stdout_diff,
};

fn judge(test: &str, code: i32, stdout: &str, stderr: &str) -> Vec<Mismatch> {
    let TestFile::Test(expectations) = parse_test_file(test).unwrap() else {
        panic!("not a test");
    };
    let output = RunOutput {
        termination: Termination::Exited(code),
        stdout: stdout.into(),
        stderr: stderr.into(),
    };
    check(&expectations, &output)
}

const OUTPUT_TEST: &str = "print 1; // expect: 1\nprint 2; // expect: 2\n";

#[test]
fn matching_output_passes() {
    assert_eq!(judge(OUTPUT_TEST, 0, "1\n2\n", ""), []);
    // One trailing empty line is dropped, as the official runner does.
    assert_eq!(judge(OUTPUT_TEST, 0, "1\n2\n\n", ""), []);
}

#[test]
fn output_mismatches() {
    assert_eq!(
        judge(OUTPUT_TEST, 0, "1\n3\n", ""),
        [Mismatch::WrongOutput {
            index: 1,
            expected: "2".into(),
            got: "3".into()
        }]
    );
    assert_eq!(
        judge(OUTPUT_TEST, 0, "1\n", ""),
        [Mismatch::MissingOutput {
            expected: "2".into(),
            source_line: 2
        }]
    );
    assert_eq!(
        judge(OUTPUT_TEST, 0, "1\n2\n3\n", ""),
        [Mismatch::UnexpectedOutput {
            index: 2,
            got: "3".into()
        }]
    );
}

#[test]
fn stderr_must_be_empty_without_expected_errors() {
    assert_eq!(
        judge(OUTPUT_TEST, 0, "1\n2\n", "warning\n"),
        [Mismatch::UnexpectedStderr("warning".into())]
    );
}

#[test]
fn exit_status_is_checked() {
    assert_eq!(
        judge(OUTPUT_TEST, 1, "1\n2\n", ""),
        [Mismatch::WrongExit {
            expected: 0,
            got: Termination::Exited(1)
        }]
    );
}

const COMPILE_ERROR_TEST: &str = "print; // Error at ';': Expect expression.\n\
                                  // [c line 3] Error: Unexpected character.\n\
                                  // [java line 4] Error: Java only.\n";

#[test]
fn compile_errors_must_all_appear_and_nothing_else() {
    let both = "[line 1] Error at ';': Expect expression.\n[line 3] Error: Unexpected character.\n";
    assert_eq!(judge(COMPILE_ERROR_TEST, 65, "", both), []);
    // Blank lines on stderr are ignored; order does not matter.
    let reordered =
        "[line 3] Error: Unexpected character.\n\n[line 1] Error at ';': Expect expression.\n";
    assert_eq!(judge(COMPILE_ERROR_TEST, 65, "", reordered), []);
    assert_eq!(
        judge(
            COMPILE_ERROR_TEST,
            65,
            "",
            "[line 1] Error at ';': Expect expression.\n"
        ),
        [Mismatch::MissingError(
            "[3] Error: Unexpected character.".into()
        )]
    );
    let extra = format!("{both}[line 4] Error: Java only.\n");
    assert_eq!(
        judge(COMPILE_ERROR_TEST, 65, "", &extra),
        [Mismatch::UnexpectedError(
            "[line 4] Error: Java only.".into()
        )]
    );
    assert_eq!(
        judge(COMPILE_ERROR_TEST, 0, "", both),
        [Mismatch::WrongExit {
            expected: 65,
            got: Termination::Exited(0)
        }]
    );
}

#[test]
fn unexpected_stderr_is_listed_up_to_ten_lines() {
    let noise = "noise\n".repeat(13);
    let mismatches = judge(OUTPUT_TEST, 0, "1\n2\n", &noise);
    assert_eq!(mismatches.len(), 11);
    assert_eq!(mismatches[10], Mismatch::MoreUnexpected(3));
}

const RUNTIME_ERROR_TEST: &str =
    "var a;\nnil(); // expect runtime error: Can only call functions and classes.\n";

#[test]
fn runtime_errors_check_message_and_innermost_line() {
    let message = "Can only call functions and classes.";
    assert_eq!(
        judge(
            RUNTIME_ERROR_TEST,
            70,
            "",
            &format!("{message}\n[line 2] in script\n")
        ),
        []
    );
    assert_eq!(
        judge(
            RUNTIME_ERROR_TEST,
            70,
            "",
            &format!("{message}\n[line 1] in script\n")
        ),
        [Mismatch::WrongRuntimeErrorLine {
            expected: 2,
            got: 1
        }]
    );
    assert_eq!(
        judge(RUNTIME_ERROR_TEST, 70, "", "Other.\n[line 2] in script\n"),
        [Mismatch::WrongRuntimeError {
            expected: message.into(),
            got: "Other.".into()
        }]
    );
    assert_eq!(
        judge(RUNTIME_ERROR_TEST, 70, "", &format!("{message}\n")),
        [Mismatch::NoRuntimeError {
            expected: message.into()
        }]
    );
    assert_eq!(
        judge(
            RUNTIME_ERROR_TEST,
            70,
            "",
            &format!("{message}\nin script\n")
        ),
        [Mismatch::NoStackTrace]
    );
}

#[test]
fn a_timeout_is_the_only_mismatch_reported() {
    let TestFile::Test(expectations) = parse_test_file(OUTPUT_TEST).unwrap() else {
        panic!("not a test");
    };
    let output = RunOutput {
        termination: Termination::TimedOut(Duration::from_secs(3)),
        stdout: String::new(),
        stderr: String::new(),
    };
    assert_eq!(
        check(&expectations, &output),
        [Mismatch::TimedOut(Duration::from_secs(3))]
    );
}

#[test]
fn mismatches_read_like_the_official_runner() {
    assert_eq!(
        Mismatch::WrongOutput {
            index: 1,
            expected: "2".into(),
            got: "3".into()
        }
        .to_string(),
        "Expected output '2' on line 1 and got '3'."
    );
    assert_eq!(
        Mismatch::MissingError("[3] Error: X".into()).to_string(),
        "Missing expected error: [3] Error: X"
    );
}

#[test]
fn the_diff_shows_context_around_the_first_difference() {
    let TestFile::Test(expectations) =
        parse_test_file("// expect: a\n// expect: b\n// expect: c\n// expect: d\n").unwrap()
    else {
        panic!("not a test");
    };
    assert_eq!(stdout_diff(&expectations.output, "a\nb\nc\nd\n"), None);
    let diff = stdout_diff(&expectations.output, "a\nb\nX\nd\n").unwrap();
    assert_eq!(
        diff,
        "stdout from line 0 (- expected, + got):\n    a\n    b\n  - c\n  - d\n  + X\n  + d\n"
    );
}
