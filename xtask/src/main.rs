//! The project's commands. Run `cargo xtask help`.
//!
//! Every command first makes sure the system has what the build needs (hwloc,
//! udev, pkg-config), then runs its steps one by one, printing each command
//! and how long it took. A failing step stops the run with its own error.

mod fuzz;
mod lox_bench;
mod lox_layout;
mod miri;
mod numa_vm;
mod package;
mod sanitize;
mod steps;
mod system;

use std::process::ExitCode;
use steps::Runner;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  demo [ARGS...]            build and run the demo (examples/demo) in release
  test                      unit, integration and doc tests, loom models, fuzz smoke, NUMA guests (2 and 4 nodes)
  ci                        fmt, clippy -D warnings, docs as docs.rs builds them, bench --no-run, test (Chromium installed),
                            the library crates packaged, ASan (fast crates), a 20 s soak
  bench [NAME]              run the criterion benches (all, or one bench file)
  fuzz TARGET|--all [--secs N]  fuzz for N seconds each (default 60); prints executions and coverage
  loom [--preemptions N]    run the loom models (default LOOM_MAX_PREEMPTIONS=2)
  soak [--secs N]           the whole runtime under load for N seconds (default 60), leak-checked
  sanitize [address|thread|all]  lib and integration tests under ASan/TSan (default all)
  miri                      the crates' lib tests under Miri (skipped, exit 0, without nightly miri)
  numa-vm [--nodes 2|4] [--cpus N] [--timeout SECS]
                            the NUMA tests in an emulated multi-node Linux guest (QEMU TCG; default 2 nodes, 4 CPUs)
  lox-bench [--runs N] [--concurrent] [--build release|lto|static]
                            hotmem-lox against clox on examples/lox/bench: median times, ratios, peak RSS, GC share (default 5 runs);
                            --concurrent adds lox --collector concurrent-generational against lox's default, interleaved;
                            --build lto builds lox with fat LTO and one codegen unit (in target/lto);
                            --build static links lox and clox static-pie (lox in target/static)
  lox-layout [--check]      rewrite examples/lox/start.ld, the layout of the code a Lox run starts with, from callgrind
                            runs of lox on a one-line script and the programs in examples/lox/layout (installs valgrind);
                            --check: fail if it does not name every function the one-line script runs in this build
  package                   pack the library crates and build each from its package, as `cargo publish` checks
  deps                      only check/install the system packages
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::FAILURE;
    };
    let rest = &args[1..];
    if matches!(cmd.as_str(), "help" | "-h" | "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let mut runner = Runner::new();
    let result = system::ensure_system_packages().and_then(|()| match cmd.as_str() {
        "deps" => Ok(()),
        "demo" => steps::demo(&mut runner, rest),
        "test" => steps::test(&mut runner, steps::Browser::IfInstalled),
        "ci" => steps::ci(&mut runner),
        "bench" => steps::bench(&mut runner, rest.first().map(String::as_str)),
        "fuzz" => fuzz::cmd(&mut runner, rest),
        "loom" => steps::loom_cmd(&mut runner, rest),
        "soak" => steps::soak_cmd(&mut runner, rest),
        "sanitize" => sanitize::cmd(&mut runner, rest),
        "miri" => miri::cmd(&mut runner),
        "numa-vm" => numa_vm::cmd(&mut runner, rest),
        "package" => package::package(&mut runner),
        "lox-bench" => lox_bench::cmd(&mut runner, rest),
        "lox-layout" => lox_layout::cmd(&mut runner, rest),
        other => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    });
    runner.summary();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\nxtask {cmd}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
