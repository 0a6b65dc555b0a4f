//! `cargo xtask lox-layout`: rewrites `examples/lox/start.ld`, the linker
//! script that lays out together the code a Lox run starts with.
//!
//! A one-line script touches about 330 KiB of the binary's code, in some
//! 400 functions that the compiler scatters over 1.7 MB of text (each
//! crate's code where its codegen units fall). The kernel maps text in
//! 64 KiB windows around each page a process touches, so nearly the whole
//! text became resident. `start.ld` puts those functions first in
//! `.text`; `examples/lox/build.rs` passes it to
//! the linker for the `lox` binary.
//!
//! The command builds `lox` in release, runs it under callgrind on a
//! one-line script and on `examples/lox/layout/train.lox`, and writes one
//! pattern per function that ran, the one-line script's first. A pattern
//! is the function's section name with its hashes made wildcards: the
//! crate disambiguators of v0 names (`Cs…_`) and the `17h…E` of legacy
//! ones, which change with the toolchain, the features and the profile.
//! The layout then holds for any build of `lox`, and a function renamed
//! since only falls back to where the compiler put it. Generic functions
//! match all their copies; that costs a few windows, not correctness.

use crate::steps::{Runner, cargo, root};
use std::path::Path;
use std::process::Command;

/// The script, beside the crate's manifest.
const SCRIPT: &str = "examples/lox/start.ld";

/// The training program after the one-line script.
const TRAIN: &str = "examples/lox/layout/train.lox";

/// The one-line script the layout serves first (#36's goal is its RSS).
const ONE_LINE: &str = "print \"hi\";\n";

pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!("lox-layout takes no arguments, not `{arg}`"));
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        crate::system::install_apt_packages(&["valgrind"])
            .map_err(|e| format!("lox-layout profiles with callgrind: {e}"))?;
    }
    r.step(
        "build lox (release)",
        &mut cargo(&["build", "--release", "-p", "hotmem-lox", "--bin", "lox"]),
    )?;
    let lox = root().join("target/release/lox");
    let dir = root().join("target/lox-layout");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let one_line = dir.join("one_line.lox");
    std::fs::write(&one_line, ONE_LINE).map_err(|e| format!("{}: {e}", one_line.display()))?;

    let mut patterns = Vec::new();
    for (name, program) in [("one_line", one_line), ("train", root().join(TRAIN))] {
        let out = dir.join(format!("callgrind.{name}"));
        r.step(
            &format!("callgrind: lox {}", program.display()),
            Command::new("valgrind")
                .args(["--tool=callgrind", "--demangle=no"])
                .arg(format!("--callgrind-out-file={}", out.display()))
                .arg(&lox)
                .arg(&program)
                .stdout(std::process::Stdio::null()),
        )?;
        let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let mut ran: Vec<String> = executed_functions(&text, "lox")
            .iter()
            .filter_map(|f| pattern(f))
            .collect();
        ran.sort();
        ran.dedup();
        let before = patterns.len();
        for p in ran {
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
        eprintln!(
            "{name}: {} more functions (patterns)",
            patterns.len() - before
        );
    }
    let script = root().join(SCRIPT);
    std::fs::write(&script, linker_script(&patterns))
        .map_err(|e| format!("{}: {e}", script.display()))?;
    eprintln!(
        "wrote {} ({} patterns); rebuild lox to use it",
        script.display(),
        patterns.len()
    );
    Ok(())
}

/// The functions of the object whose file name is `object` that have a
/// cost in a callgrind profile (written with `--demangle=no`), in the
/// order the profile names them.
fn executed_functions(profile: &str, object: &str) -> Vec<String> {
    use std::collections::HashMap;
    // Callgrind compresses names: the first `fn=(N) name` (or `cfn=`,
    // `ob=`, `cob=`) defines N, later ones say only `fn=(N)`.
    let mut objects: HashMap<&str, &str> = HashMap::new();
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut in_object = false;
    let mut ran: Vec<&str> = Vec::new();
    for line in profile.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (id, name) = match value.split_once(' ') {
            Some((id, name)) => (id, Some(name)),
            None => (value, None),
        };
        match key {
            "ob" | "cob" => {
                if let Some(name) = name {
                    objects.insert(id, name);
                }
                if key == "ob" {
                    in_object = objects
                        .get(id)
                        .and_then(|path| Path::new(path).file_name())
                        .is_some_and(|file| file == object);
                }
            }
            "fn" | "cfn" => {
                if let Some(name) = name {
                    names.insert(id, name);
                }
                if key == "fn" && in_object {
                    ran.push(id);
                }
            }
            _ => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    ran.into_iter()
        .filter_map(|id| names.get(id).copied())
        .filter(|name| seen.insert(*name))
        .map(str::to_owned)
        .collect()
}

/// The section-name pattern for the function `symbol`, hashes made
/// wildcards; `None` for a name a linker-script pattern cannot spell.
fn pattern(symbol: &str) -> Option<String> {
    // `.llvm.N`: LLVM's suffix on a function made local; it changes too.
    let symbol = match symbol.find(".llvm.") {
        Some(at) => &symbol[..at],
        None => symbol,
    };
    // Code without a symbol (the PLT) is named by its address.
    if symbol.is_empty()
        || symbol.starts_with("0x")
        || !symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
    {
        return None;
    }
    if symbol.starts_with("_ZN") {
        // Legacy: `..17h<16 hex digits>E`.
        let bytes = symbol.as_bytes();
        let n = bytes.len();
        let hashed = n > 20
            && symbol.ends_with('E')
            && &symbol[n - 20..n - 17] == "17h"
            && bytes[n - 17..n - 1].iter().all(u8::is_ascii_hexdigit);
        return Some(if hashed {
            format!("{}17h*E*", &symbol[..n - 20])
        } else {
            format!("{symbol}*")
        });
    }
    if symbol.starts_with("_R") {
        // v0: every crate root `Cs<base-62>_` carries its disambiguator.
        let mut out = String::with_capacity(symbol.len());
        let mut rest = symbol;
        while let Some(at) = rest.find("Cs") {
            out.push_str(&rest[..at + 2]);
            let after = &rest[at + 2..];
            let digits = after.bytes().take_while(u8::is_ascii_alphanumeric).count();
            if digits > 0 && after.as_bytes().get(digits) == Some(&b'_') {
                out.push('*');
                rest = &after[digits..];
            } else {
                rest = after;
            }
        }
        out.push_str(rest);
        out.push('*');
        return Some(out);
    }
    Some(symbol.to_owned())
}

/// The linker script: `.text` with the sections the patterns name first
/// (cold functions' too, which LLVM prefixes `.text.unlikely.`), then the
/// rest as the linker would have laid it out. One `.text`, as tools that
/// read symbols expect (valgrind reads none outside it); placed before
/// `.init`, which rust-lld lays out after `.text` and GNU ld before it.
/// Aligned to 64 KiB, the kernel's fault-around window: the executable
/// segment's alignment becomes 64 KiB, the kernel then loads the binary
/// at a 64 KiB-aligned address, and the windows fall at the same places
/// in the layout in every run instead of wherever the randomized base
/// puts them (the one-line script's median peak: 2.86 MiB aligned,
/// 3.20 MiB not, 30 runs each).
fn linker_script(patterns: &[String]) -> String {
    let mut s = String::from(
        "/* The code a Lox run starts with, laid out together (#36): one\n \
         * pattern per function that ran in `cargo xtask lox-layout`'s\n \
         * training, which wrote this file; see xtask/src/lox_layout.rs.\n \
         * examples/lox/build.rs passes it to the linker for `lox`. */\n\
         SECTIONS\n{\n  .text : ALIGN(0x10000)\n  {\n",
    );
    // The C start files' code (`_start`, the init and exit hooks) runs in
    // every process; the linker would put it after the Rust objects.
    s.push_str("    *crt1.o(.text .text.*)\n    *crtbegin*.o(.text .text.*)\n");
    for p in patterns {
        s.push_str(&format!("    *(.text.{p} .text.unlikely.{p})\n"));
    }
    s.push_str("    *(.text .text.*)\n  }\n}\nINSERT BEFORE .init;\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_hashes_become_wildcards() {
        assert_eq!(
            pattern("_ZN10hotmem_lox2vm3Vm3new17h0dc92ce588fa2092E").as_deref(),
            Some("_ZN10hotmem_lox2vm3Vm3new17h*E*")
        );
        assert_eq!(
            pattern("_ZN5alloc7raw_vec11finish_grow17hbf2e9cf69c163d42E.llvm.16904490090993486975")
                .as_deref(),
            Some("_ZN5alloc7raw_vec11finish_grow17h*E*")
        );
    }

    #[test]
    fn v0_crate_disambiguators_become_wildcards() {
        assert_eq!(
            pattern("_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCsjrHSEGnQ3l9_3std")
                .as_deref(),
            Some("_RNvMs4_NtCs*_5alloc7raw_vecNtB5_11RawVecInner11finish_growCs*_3std*")
        );
    }

    #[test]
    fn names_a_script_cannot_spell_are_left_out() {
        assert_eq!(pattern("0x0000000000012345 (weird)"), None);
        assert_eq!(pattern(""), None);
        assert_eq!(pattern("0x0000000000067910"), None);
        assert_eq!(pattern("main").as_deref(), Some("main"));
    }

    #[test]
    fn only_the_named_objects_functions_with_cost_are_read() {
        let profile = "\
version: 1
positions: line
events: Ir
ob=(1) /usr/lib/libc.so.6
fl=(1) x.c
fn=(1) memcpy
1 5
cob=(2) /work/target/release/lox
cfn=(2) _ZN3lox4main17h0123456789abcdefE
calls=1 0
1 9
ob=(2)
fn=(2)
1 4
fn=(3) _RNvCs1a2B_3std4exit
1 1
ob=(1)
fn=(1)
1 2
ob=(2)
fn=(2)
1 1
";
        assert_eq!(
            executed_functions(profile, "lox"),
            ["_ZN3lox4main17h0123456789abcdefE", "_RNvCs1a2B_3std4exit"]
        );
    }

    #[test]
    fn the_script_puts_the_patterns_first_in_text() {
        let s = linker_script(&["_ZN3lox4main17h*E*".to_owned()]);
        assert!(s.contains("*(.text._ZN3lox4main17h*E* .text.unlikely._ZN3lox4main17h*E*)"));
        assert!(
            s.trim_end()
                .ends_with("*(.text .text.*)\n  }\n}\nINSERT BEFORE .init;")
        );
    }
}
