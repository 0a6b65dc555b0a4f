//! The VM passes the whole Lox suite through the Rust runner, collecting
//! when its policy says, at every allocation (`--gc-stress`, young and
//! full collections in turn), and with the concurrent collector running
//! cycles back to back in a 16 MiB heap (`--gc-concurrent`: objects move
//! while the program runs; `--gc-concurrent-generational`: three young
//! cycles for each full one). Skips (with a note) where the suite is
//! absent (`../shared/lox-tests`, or `$LOX_TESTS`).

mod common;

use std::time::Duration;

use common::suite_dir;
use hotmem_lox::suite::{Interpreter, SuiteConfig, SuiteRun, run_suite};

fn passes_the_suite(args: &[&str]) {
    let Some(dir) = suite_dir() else { return };
    let mut interpreter = Interpreter::new(env!("CARGO_BIN_EXE_lox"));
    for arg in args {
        interpreter = interpreter.arg(arg);
    }
    let mut config = SuiteConfig::new(interpreter);
    config.suite_dir = dir;
    // A debug build under --gc-stress collects thousands of times in the
    // longest tests.
    config.timeout = Duration::from_secs(60);
    let SuiteRun::Completed(report) = run_suite(&config) else {
        panic!("the suite directory exists but was skipped");
    };
    eprintln!("lox {}: {}", args.join(" "), report.summary());
    assert!(report.all_passed(), "{report}");
}

#[test]
fn the_vm_passes_the_whole_suite() {
    passes_the_suite(&[]);
}

#[test]
fn the_vm_passes_the_whole_suite_collecting_at_every_allocation() {
    passes_the_suite(&["--gc-stress"]);
}

#[test]
fn the_vm_passes_the_whole_suite_with_a_concurrent_cycle_always_running() {
    passes_the_suite(&["--gc-concurrent", "--heap-max", "16"]);
}

#[test]
fn the_vm_passes_the_whole_suite_with_young_and_old_concurrent_cycles_always_running() {
    passes_the_suite(&["--gc-concurrent-generational", "--heap-max", "16"]);
}
