//! `cargo xtask sanitize [address|thread|all]`: the workspace's tests (lib
//! and integration tests; no doc tests, benches or examples) under
//! AddressSanitizer and ThreadSanitizer, on the stable toolchain.
//!
//! - `RUSTC_BOOTSTRAP=1` lets stable accept `-Zsanitizer`.
//! - `-Cunsafe-allow-abi-mismatch=sanitizer`: the std is the prebuilt one, not
//!   rebuilt with the sanitizer (that needs `-Zbuild-std` and the rust-src
//!   component), so the std's own code is not instrumented: ASan does not
//!   see its accesses and TSan does not see its synchronization
//!   (`xtask/sanitizer/tsan.supp` says which reports that causes and why
//!   each is suppressed).
//! - `--target x86_64-unknown-linux-gnu` keeps RUSTFLAGS away from build
//!   scripts and proc-macros, which run on the host uninstrumented.
//! - `CARGO_TARGET_DIR=target/sanitize-<kind>`, so the normal build stays warm.
//! - `HOTMEM_SANITIZER=<kind>` tells the one test whose check cannot hold
//!   under a sanitizer to skip it with a message: under TSan, the runtime's
//!   own mappings can land in the ranges the facade just released
//!   (`crates/hotmem/tests/drop_releases.rs`; grep for `HOTMEM_SANITIZER`).
//! - Every report fails the run; `--no-fail-fast` and TSan's
//!   `halt_on_error=0` make one run show all of them.

use crate::steps::{Runner, cargo, root};
use std::process::Command;

/// The host triple the sanitizer runtimes exist for.
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Packages that are not libraries: their tests are benches and examples.
const EXCLUDED: &[&str] = &["xtask", "hotmem-benches", "hotmem-examples"];

/// What `ci` runs under ASan: the lib tests of the crates whose tests take
/// seconds, not minutes, and build without hwloc.
const CI_PACKAGES: &[&str] = &["hotmem-os", "hotmem-nmt", "hotmem-chunk", "hotmem-page"];

/// The environment variable the gated tests read.
const ENV: &str = "HOTMEM_SANITIZER";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sanitizer {
    Address,
    Thread,
}

impl Sanitizer {
    fn name(self) -> &'static str {
        match self {
            Sanitizer::Address => "address",
            Sanitizer::Thread => "thread",
        }
    }

    fn rustflags(self) -> String {
        // Under TSan, hotmem-os maps through the C library's intercepted
        // mmap/munmap (see its `sys.rs`), so that TSan forgets the accesses
        // of a range that is unmapped before its addresses are reused.
        let extra = match self {
            Sanitizer::Address => "",
            Sanitizer::Thread => " --cfg hotmem_tsan",
        };
        format!(
            "-Zsanitizer={} -Cunsafe-allow-abi-mismatch=sanitizer{extra}",
            self.name()
        )
    }

    /// The sanitizer runtime's options.
    fn runtime_env(self, c: &mut Command) {
        match self {
            Sanitizer::Address => {
                // LeakSanitizer too. It tracks malloc only (our mmap'd
                // reservations are neither reported nor scanned) and reports
                // no leak in our tests, so there is no lsan.supp.
                c.env("ASAN_OPTIONS", "detect_leaks=1");
            }
            Sanitizer::Thread => {
                let dir = root().join("xtask/sanitizer");
                c.env(
                    "TSAN_OPTIONS",
                    format!(
                        "suppressions={}:halt_on_error=0:second_deadlock_stack=1",
                        dir.join("tsan.supp").display()
                    ),
                );
            }
        }
    }

    fn parse(arg: &str) -> Result<Vec<Sanitizer>, String> {
        match arg {
            "address" | "asan" => Ok(vec![Sanitizer::Address]),
            "thread" | "tsan" => Ok(vec![Sanitizer::Thread]),
            "all" => Ok(vec![Sanitizer::Address, Sanitizer::Thread]),
            other => Err(format!(
                "unknown sanitizer `{other}` (address, thread or all)"
            )),
        }
    }
}

/// `cargo test` of `packages` (the workspace when empty) under `s`; `args`
/// go to cargo after the package selection.
fn test_command(s: Sanitizer, packages: &[&str], args: &[&str]) -> Command {
    let mut c = cargo(&["test", "--target", TARGET]);
    if packages.is_empty() {
        c.arg("--workspace");
        for p in EXCLUDED {
            c.args(["--exclude", p]);
        }
    } else {
        for p in packages {
            c.args(["-p", p]);
        }
    }
    c.args(args);
    c.env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", s.rustflags())
        .env(
            "CARGO_TARGET_DIR",
            root().join(format!("target/sanitize-{}", s.name())),
        )
        .env(ENV, s.name());
    s.runtime_env(&mut c);
    c
}

fn run(r: &mut Runner, s: Sanitizer) -> Result<(), String> {
    // Lib and integration tests (`--tests`), not doc tests, benches or examples.
    // `--no-fail-fast`: one run reports every finding, not just the first.
    let mut c = test_command(s, &[], &["--tests", "--no-fail-fast"]);
    r.step(&format!("sanitize {}", s.name()), &mut c)
}

/// `cargo xtask sanitize [address|thread|all]`.
pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let which = Sanitizer::parse(args.first().map_or("all", String::as_str))?;
    for s in which {
        run(r, s)?;
    }
    Ok(())
}

/// The short sanitizer step of `ci`: the fast crates' lib tests under ASan.
pub(crate) fn ci(r: &mut Runner) -> Result<(), String> {
    let s = Sanitizer::Address;
    let mut c = test_command(s, CI_PACKAGES, &["--lib"]);
    r.step("sanitize address (fast crates, lib tests)", &mut c)
}
