//! Setup shared by the integration tests: finding the suite and clox's
//! sources, building clox with `cc`, and listing the suite's tests.
#![allow(dead_code)] // Each test binary uses a different part.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hotmem_lox::suite::{self, Expectations, TestFile};

/// The suite directory, or `None` (with a note on stderr) when it is absent.
pub(crate) fn suite_dir() -> Option<PathBuf> {
    let dir = suite::default_suite_dir();
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: no Lox suite at {} (set LOX_TESTS)", dir.display());
        None
    }
}

/// clox's C sources, beside the workspace.
fn clox_sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/clox")
}

/// Which clox to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CloxBuild {
    /// clox's release configuration, as its README builds it.
    Release,
    /// With `DEBUG_PRINT_CODE`: prints every function's bytecode after
    /// compiling it (and before running the script).
    PrintCode,
}

/// clox built with `cc` into this test binary's scratch directory, once per
/// binary; `None` (with a note) when `cc` or the sources are missing.
pub(crate) fn clox(build: CloxBuild) -> Option<PathBuf> {
    static RELEASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    static PRINT_CODE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = match build {
        CloxBuild::Release => &RELEASE,
        CloxBuild::PrintCode => &PRINT_CODE,
    };
    cell.get_or_init(|| build_clox(build)).clone()
}

fn build_clox(build: CloxBuild) -> Option<PathBuf> {
    let sources = clox_sources();
    let Ok(entries) = std::fs::read_dir(&sources) else {
        eprintln!("skipped: no clox sources at {}", sources.display());
        return None;
    };
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("clox-{build:?}"));
    std::fs::create_dir_all(&scratch).ok()?;
    let mut c_files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name() else {
            continue;
        };
        let copy = scratch.join(name);
        let mut text = std::fs::read_to_string(&path).ok()?;
        if build == CloxBuild::PrintCode && name == "common.h" {
            // clox defines its debug flags for the book, then undefines
            // them; keep DEBUG_PRINT_CODE.
            text = text.replace("#undef DEBUG_PRINT_CODE", "");
        }
        std::fs::write(&copy, text).ok()?;
        if copy.extension().is_some_and(|ext| ext == "c") {
            c_files.push(copy);
        }
    }
    let binary = scratch.join("clox");
    let status = Command::new("cc")
        .args(["-O3", "-flto", "-std=c99", "-w"])
        .args(&c_files)
        .arg("-o")
        .arg(&binary)
        .status();
    match status {
        Ok(status) if status.success() => Some(binary),
        Ok(status) => panic!("building clox failed: {status}"),
        Err(error) => {
            eprintln!("skipped: cannot run cc ({error})");
            None
        }
    }
}

/// Every test of the suite with its expectations (`nontest` files left out).
pub(crate) fn suite_tests(dir: &Path) -> Vec<(PathBuf, String, Expectations)> {
    suite::discover(dir)
        .expect("the suite directory is readable")
        .into_iter()
        .filter_map(|path| {
            let source = std::fs::read_to_string(&path).expect("test files are UTF-8");
            match suite::parse_test_file(&source).expect("the suite's tests are consistent") {
                TestFile::NonTest => None,
                TestFile::Test(expectations) => Some((path, source, expectations)),
            }
        })
        .collect()
}

/// A source file of the calling test's own, in the scratch directory.
pub(crate) fn source_file(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("the scratch directory is writable");
    path
}

/// What `lox ARGS FILE` did with `source` (written to a scratch file
/// called `name`).
pub(crate) fn run_lox(name: &str, source: &str, args: &[&str]) -> std::process::Output {
    let path = source_file(name, source);
    Command::new(env!("CARGO_BIN_EXE_lox"))
        .args(args)
        .arg(&path)
        .output()
        .expect("lox runs")
}

/// Bytes as text, for assertions.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
