//! What the `lox` binary is built from, as Cargo resolves it for this
//! package alone (`cargo build -p hotmem-lox`, what `cargo xtask
//! lox-bench` measures): no hwloc. The VM uses no NUMA placement, and
//! libhwloc with libudev cost its one-line script 0.5-0.6 MiB of resident
//! memory. In a workspace build the other members turn the runtime's
//! `numa` feature on for every package; this asks Cargo about this one.

use std::process::Command;

#[test]
fn the_vm_alone_is_built_without_hwloc() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--manifest-path", manifest])
        .args(["-p", "hotmem-lox", "-e", "normal", "--prefix", "none"])
        .args(["-f", "{p}"])
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("hotmem ")),
        "the tree names the runtime:\n{stdout}"
    );
    let hwloc: Vec<&str> = (stdout.lines())
        .filter(|l| l.starts_with("hwlocality") || l.starts_with("hotmem-numa"))
        .collect();
    assert!(
        hwloc.is_empty(),
        "the VM depends on hwloc through {hwloc:?}"
    );
}
