//! The front end against the suite: `lox --compile-only` passes every test
//! that expects a compile error, and every other test compiles cleanly.

mod common;

use common::{suite_dir, suite_tests};
use hotmem_lox::compile;
use hotmem_lox::suite::{ExpectedExit, Interpreter, Selection, SuiteConfig, SuiteRun, run_suite};

#[test]
fn compile_only_passes_every_compile_error_test() {
    let Some(dir) = suite_dir() else { return };
    let mut config =
        SuiteConfig::new(Interpreter::new(env!("CARGO_BIN_EXE_lox")).arg("--compile-only"));
    config.suite_dir = dir;
    config.selection = Selection::CompileErrors;
    let SuiteRun::Completed(report) = run_suite(&config) else {
        panic!("the suite directory exists but was skipped");
    };
    eprintln!(
        "lox --compile-only, compile-error tests: {}",
        report.summary()
    );
    assert!(report.all_passed(), "{report}");
}

#[test]
fn every_other_test_compiles_without_errors() {
    let Some(dir) = suite_dir() else { return };
    let mut failures = Vec::new();
    for (path, source, expectations) in suite_tests(&dir) {
        if expectations.exit == ExpectedExit::CompileError {
            continue;
        }
        if let Err(errors) = compile(&source) {
            failures.push(format!("{}:\n{errors}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
