//! The benchmark programs in `bench/` print what their `// expect:` comments
//! say when clox runs them. Ignored by default: it runs about 15 s of
//! benchmarks. Run it with
//! `cargo test -p hotmem-lox --test bench_programs -- --ignored`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{CloxBuild, clox};
use hotmem_lox::compile;
use hotmem_lox::suite::{Interpreter, SuiteConfig, SuiteRun, discover, run_suite};

fn bench_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/bench"))
}

#[test]
fn benchmarks_compile_within_clox_limits() {
    let files = discover(bench_dir()).expect("bench/ is readable");
    assert!(files.len() >= 9, "{files:?}");
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        if let Err(errors) = compile(&source) {
            panic!("{}:\n{errors}", file.display());
        }
    }
}

#[test]
#[ignore = "runs about 15 s of benchmarks on clox"]
fn benchmarks_print_their_expected_output_on_clox() {
    let Some(clox) = clox(CloxBuild::Release) else {
        return;
    };
    let mut config = SuiteConfig::new(Interpreter::new(clox));
    config.suite_dir = bench_dir().to_path_buf();
    config.jobs = std::num::NonZeroUsize::MIN;
    config.timeout = Duration::from_secs(60);
    let SuiteRun::Completed(report) = run_suite(&config) else {
        panic!("bench/ holds no programs");
    };
    assert!(report.all_passed(), "{report}");
}
