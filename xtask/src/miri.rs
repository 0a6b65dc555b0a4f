//! `cargo xtask miri`: the crates' lib tests under Miri, when the nightly
//! toolchain has the miri component; otherwise it says so and succeeds.
//!
//! Miri runs the pure logic: chunk levels, free blocks and growth, the NMT
//! region states, interning, deltas, scales and tags, page types, sizes,
//! blocks, cache, virtual space and the statistics sampler, NUMA heuristics
//! and cpu sets, the safepoint histogram, the facade's report folding. Tests
//! that need what Miri cannot interpret (mmap, memfd, /proc, hwloc's C code,
//! symbolizing a real stack) are `#[cfg_attr(miri, ignore = "...")]` with
//! the reason, which the test output prints. Integration tests are all about
//! real memory and real threads, so only `--lib` runs.
//!
//! Isolation stays on, so every run is the same run: Miri's clock is
//! virtual and its random numbers (proptest's seeds) come from
//! `-Zmiri-seed`, 0 by default.

use crate::package::LIBRARY_CRATES;
use crate::steps::{Runner, root};
use std::process::Command;

/// `cargo miri ARGS` of the nightly toolchain. Through `rustup run`, not
/// `$CARGO +nightly`: `$CARGO` is the stable cargo binary that runs xtask,
/// which knows no `+toolchain`, and cargo-miri would call it back through
/// `$CARGO`, so that variable is removed.
fn miri(args: &[&str]) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", "nightly", "cargo", "miri"])
        .args(args)
        .current_dir(root())
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN");
    c
}

/// Isolation stays on (a deterministic run), but an isolated call returns an
/// error instead of stopping the run: proptest asks for the working
/// directory to find its regression files and copes with the error.
const MIRIFLAGS: &str = "-Zmiri-isolation-error=warn-nobacktrace";

/// Whether `cargo +nightly miri` works here; its version if so.
fn available() -> Option<String> {
    let out = miri(&["--version"]).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `cargo xtask miri`.
pub(crate) fn cmd(r: &mut Runner) -> Result<(), String> {
    let Some(version) = available() else {
        eprintln!(
            "xtask miri: Miri is NOT available (`cargo +nightly miri --version` failed), \
             so nothing was checked. Install it with \
             `rustup toolchain install nightly --component miri rust-src`."
        );
        return Ok(());
    };
    eprintln!("xtask miri: using {version}");
    r.step("miri setup", &mut miri(&["setup"]))?;
    // Each library crate's lib tests in one step of its own; hotmem-sync
    // only re-exports std's or loom's types and has none.
    for krate in LIBRARY_CRATES.iter().filter(|c| **c != "hotmem-sync") {
        let mut c = miri(&["test", "-p", krate, "--lib"]);
        // Property tests that run here take a few cases under `cfg(miri)`
        // in their own config (`with_cases` overrides PROPTEST_CASES).
        c.env("MIRIFLAGS", MIRIFLAGS);
        r.step(&format!("miri {krate}"), &mut c)?;
    }
    Ok(())
}
