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
    run_apt(&["update", "-q"])?;
    let mut args = vec!["install", "-y", "-q"];
    args.extend_from_slice(APT_PACKAGES);
    run_apt(&args)?;
    let still = self::missing();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!("still missing after apt-get: {}", still.join(", ")))
    }
}
