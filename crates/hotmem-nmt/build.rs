//! Detects whether this build forces frame pointers
//! (`-C force-frame-pointers=yes` in `RUSTFLAGS` or in a Cargo config's
//! `rustflags`): only then does [`CallStack::capture`] walk the
//! frame-pointer chain instead of unwinding through DWARF tables.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hotmem_frame_pointers)");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo::rerun-if-changed=build.rs");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // Flags are separated by 0x1f; `-C` and its value may be one flag or two.
    let mut forced = false;
    for flag in flags.split('\x1f') {
        let value = flag.strip_prefix("-C").unwrap_or(flag);
        if let Some(v) = value.strip_prefix("force-frame-pointers") {
            // The last occurrence wins, as for rustc.
            forced = matches!(v, "" | "=yes" | "=y" | "=on" | "=true" | "=always");
        }
    }
    if forced {
        println!("cargo::rustc-cfg=hotmem_frame_pointers");
    }
}
