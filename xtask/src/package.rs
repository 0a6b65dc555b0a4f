//! The `cargo package` step: each library crate packed and built from its
//! package alone, against the packages of the crates it depends on, as
//! `cargo publish` checks.

use std::path::PathBuf;

use crate::steps::{Runner, cargo};

/// The library crates, in dependency order: what `cargo package` packs.
pub(crate) const LIBRARY_CRATES: &[&str] = &[
    "hotmem-sync",
    "hotmem-os",
    "hotmem-nmt",
    "hotmem-chunk",
    "hotmem-page",
    "hotmem-safepoint",
    "hotmem-numa",
    "hotmem",
];

/// Packs and verifies the library crates.
pub(crate) fn package(r: &mut Runner) -> Result<(), String> {
    forget_unpacked_packages()?;
    // Cargo does not check a registry crate's sources for changes: what the
    // last verification built of our packages (same name, version and
    // registry) would be reused. `clean -p` removes every build of a crate
    // by that name in the dev profile, the workspace's own included.
    let mut clean = cargo(&["clean", "--profile", "dev"]);
    for c in LIBRARY_CRATES {
        clean.args(["-p", c]);
    }
    r.step("forget the last packages' builds", &mut clean)?;
    let mut package = cargo(&["package", "--allow-dirty"]);
    for c in LIBRARY_CRATES {
        package.args(["-p", c]);
    }
    r.step("package the library crates", &mut package)
}

/// Cargo's home: `CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// Removes what earlier `cargo package` runs unpacked of our crates, so
/// that the verification builds this checkout's packages.
///
/// To verify several packages of one workspace, cargo serves them from a
/// local registry under `target/package/tmp-registry` and unpacks each into
/// `$CARGO_HOME/registry/src/-<hash of that path>/<crate>-<version>`. It
/// unpacks a crate only once per name and version: a later run from the
/// same checkout path, with the same version but new code, builds against
/// the old unpacked sources (the project's CI, which always packs from the
/// same path, failed so: the facade did not find a method added to
/// `hotmem-page`). Local registries' folders are the ones whose name starts
/// with `-` (no host); only our crates' folders in them are removed.
fn forget_unpacked_packages() -> Result<(), String> {
    let Some(src) = cargo_home().map(|h| h.join("registry").join("src")) else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(unpacked) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for dir in unpacked.flatten() {
            if is_library_package(&dir.file_name().to_string_lossy()) {
                std::fs::remove_dir_all(dir.path()).map_err(|e| {
                    format!(
                        "removing {} (stale package sources): {e}",
                        dir.path().display()
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// Whether `name` is `<one of LIBRARY_CRATES>-<version>`.
fn is_library_package(name: &str) -> bool {
    LIBRARY_CRATES.iter().any(|c| {
        name.strip_prefix(c)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::is_library_package;

    #[test]
    fn only_our_crates_unpacked_folders_are_named() {
        assert!(is_library_package("hotmem-0.1.0"));
        assert!(is_library_package("hotmem-page-0.1.0"));
        assert!(is_library_package("hotmem-sync-12.0.3"));
        assert!(!is_library_package("hotmem-lox-0.1.0"));
        assert!(!is_library_package("hotmem-examples-0.1.0"));
        assert!(!is_library_package("hotmemory-0.1.0"));
        assert!(!is_library_package("itoa-1.0.15"));
    }
}
