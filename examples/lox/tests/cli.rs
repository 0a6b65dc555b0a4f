//! The `lox` binary's front-end modes and its command-line errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn lox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lox"))
        .args(args)
        .output()
        .expect("lox runs")
}

/// A source file of this test's own, in the scratch directory.
fn source_file(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("the scratch directory is writable");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn compile_only_prints_errors_like_clox_and_exits_65() {
    let path = source_file("cli_errors.lox", "print 1\nvar = 2;\n");
    let output = lox(&["--compile-only", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(65));
    assert_eq!(
        text(&output.stderr),
        "[line 2] Error at 'var': Expect ';' after value.\n\
         [line 2] Error at '=': Expect variable name.\n"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn compile_only_is_silent_on_success() {
    let path = source_file("cli_ok.lox", "fun f(a) { return a; } print f(1);\n");
    let output = lox(&["--compile-only", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
}

#[test]
fn disassemble_lists_every_function() {
    let path = source_file(
        "cli_listing.lox",
        "fun add(a, b) { return a + b; }\nprint add(1, 2);\n",
    );
    let output = lox(&["--disassemble", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let listing = text(&output.stdout);
    assert!(listing.starts_with("== <script> =="), "{listing}");
    assert!(
        listing.contains("== <fn add> == Function, arity 2"),
        "{listing}"
    );
    assert!(listing.contains("CLOSURE"), "{listing}");
    assert!(listing.contains("ADD"), "{listing}");
}

#[test]
fn a_missing_file_exits_74_with_clox_message() {
    let output = lox(&["--compile-only", "/nonexistent/missing.lox"]);
    assert_eq!(output.status.code(), Some(74));
    assert_eq!(
        text(&output.stderr),
        "Could not open file \"/nonexistent/missing.lox\".\n"
    );
}

#[test]
fn a_bad_command_line_prints_usage_and_exits_64() {
    for args in [
        &["--bogus"][..],
        &["a.lox", "b.lox"],
        &["--heap-max"],
        &["--compile-only"],
    ] {
        let output = lox(args);
        assert_eq!(output.status.code(), Some(64), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains("Usage: lox"), "{args:?}: {stderr}");
    }
}
