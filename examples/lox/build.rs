//! Links `lox` with `start.ld`, which lays out together the code a run
//! starts with (#36): without it that code is spread over the whole text,
//! and the kernel's 64 KiB fault-around windows make nearly all of the
//! text resident. `cargo xtask lox-layout` rewrites the script.
//!
//! Linux only (a GNU-style linker: rust-lld or GNU ld, which know
//! `INSERT`). `HOTMEM_LOX_LAYOUT=off` links without it, for a linker that
//! does not take the script (mold) or to measure what it gains.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=start.ld");
    println!("cargo:rerun-if-env-changed=HOTMEM_LOX_LAYOUT");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let off = env::var("HOTMEM_LOX_LAYOUT").is_ok_and(|v| v == "off");
    if !linux || off {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = Path::new(&dir).join("start.ld");
    // `-Xlinker` passes its argument whole: a `-Wl,` list would split a
    // path with a comma in it.
    for arg in ["-Xlinker", "-T", "-Xlinker"] {
        println!("cargo:rustc-link-arg-bin=lox={arg}");
    }
    println!("cargo:rustc-link-arg-bin=lox={}", script.display());
}
