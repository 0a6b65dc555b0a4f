//! The runner judges correctly: clox, the reference, passes the whole suite
//! through it. Builds clox with `cc`; skips (with a note) without `cc`, the
//! clox sources or the suite.

mod common;

use common::{CloxBuild, clox, suite_dir};
use hotmem_lox::suite::{Interpreter, SuiteConfig, SuiteRun, run_suite};

#[test]
fn clox_passes_the_whole_suite() {
    let Some(dir) = suite_dir() else { return };
    let Some(clox) = clox(CloxBuild::Release) else {
        return;
    };
    let mut config = SuiteConfig::new(Interpreter::new(clox));
    config.suite_dir = dir;
    let SuiteRun::Completed(report) = run_suite(&config) else {
        panic!("the suite directory exists but was skipped");
    };
    eprintln!("clox: {}", report.summary());
    assert!(report.all_passed(), "{report}");
}
