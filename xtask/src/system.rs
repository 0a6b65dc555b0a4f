//! System packages the build needs: hwloc (for hotmem-numa), udev (hwloc's
//! optional dependency that its pkg-config file requires) and pkg-config.

use std::process::{Command, Stdio};

const APT_PACKAGES: &[&str] = &["libhwloc-dev", "libudev-dev", "pkg-config"];

fn pkg_config_has(lib: &str) -> bool {
    Command::new("pkg-config")
        .args(["--exists", lib])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn missing() -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !pkg_config_has("hwloc") {
        missing.push("hwloc (libhwloc-dev)");
    }
    if !pkg_config_has("libudev") {
        missing.push("udev (libudev-dev)");
    }
    missing
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn is_debian_like() -> bool {
    std::path::Path::new("/etc/debian_version").exists()
}

fn run_apt(args: &[&str]) -> Result<(), String> {
    eprintln!("xtask: running apt-get {}", args.join(" "));
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("cannot run apt-get: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("apt-get {} failed: {status}", args.join(" ")))
    }
}

/// Checks for the system libraries and installs them on Debian when running
/// as root; otherwise returns an error with the exact command to run.
pub(crate) fn ensure_system_packages() -> Result<(), String> {
    let missing = missing();
    if missing.is_empty() {
        return Ok(());
    }
    let install = format!("apt-get install -y {}", APT_PACKAGES.join(" "));
    if !is_debian_like() {
        return Err(format!(
            "missing system libraries: {}. Install hwloc >= 2.8 development files, \
             libudev development files and pkg-config with your package manager \
             (on Debian/Ubuntu: sudo {install}).",
            missing.join(", ")
        ));
    }
    if !is_root() {
        return Err(format!(
            "missing system libraries: {}. Run:\n    sudo apt-get update && sudo {install}",
            missing.join(", ")
        ));
    }
    eprintln!(
        "xtask: missing {}; installing with apt-get",
        missing.join(", ")
    );
    apt_install(&["install", "-y", "-q"], APT_PACKAGES)?;
    let still = self::missing();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!("still missing after apt-get: {}", still.join(", ")))
    }
}

/// `apt-get update`, then `apt-get INSTALL... PACKAGES...`.
fn apt_install(install: &[&str], packages: &[&str]) -> Result<(), String> {
    run_apt(&["update", "-q"])?;
    let mut args = install.to_vec();
    args.extend_from_slice(packages);
    run_apt(&args)
}

/// Installs `packages` the way the build's own are: with apt-get when
/// running as root on Debian; otherwise an error with the exact command.
/// Recommended packages are left out (the NUMA guest needs none of
/// QEMU's or the kernel's: no firmware, no graphics).
pub(crate) fn install_apt_packages(packages: &[&str]) -> Result<(), String> {
    let install = format!(
        "apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    );
    if !is_debian_like() {
        return Err(format!(
            "not a Debian-like system: install the equivalents of `{}` with your package manager",
            packages.join(" ")
        ));
    }
    if !is_root() {
        return Err(format!(
            "not root. Run:\n    sudo apt-get update && sudo {install}"
        ));
    }
    apt_install(
        &["install", "-y", "-q", "--no-install-recommends"],
        packages,
    )
}
