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
//! one-line script and on the programs in `examples/lox/layout/`:
//! `basics.lox` (the language's core), `young.lox` (garbage that dies
//! young) and `train.lox` (objects that survive, full collections). It
//! writes the patterns of the functions that ran, each program's new ones
//! after the one before, in two passes:
//!
//! - **exact**: the section names of this build, hashes kept (only LLVM's
//!   `.llvm.N` suffix is a wildcard). A generic function's pattern then
//!   names the one instance that ran, not all of them: the one-line
//!   script's code fills 5 windows (318 KiB), against 8 when the
//!   wildcard patterns alone placed it.
//! - **wildcards**: the same names with their hashes made wildcards (the
//!   crate disambiguators of v0 names, `Cs…_`, and the `17h…E` of legacy
//!   ones), which change with the toolchain, the features and the
//!   profile. In another build of `lox` the exact patterns match nothing
//!   and these lay it out as before: generic functions with all their
//!   copies, which costs a few windows, not correctness.
//!
//! A function renamed or added since only falls back to where the
//! compiler puts it, which may cost a window: `--check` profiles the
//! one-line script alone and fails if the script does not name one of the
//! functions it runs.

use crate::steps::{Runner, cargo, root};
use std::path::Path;
use std::process::Command;

/// The script, beside the crate's manifest.
const SCRIPT: &str = "examples/lox/start.ld";

/// The training program after the one-line script: the language's core,
/// no collection.
const BASICS: &str = "examples/lox/layout/basics.lox";

/// The third: garbage that dies young, young collections that find
/// little alive.
const YOUNG: &str = "examples/lox/layout/young.lox";

/// The last training program: objects that survive, promotion and full
/// collections.
const TRAIN: &str = "examples/lox/layout/train.lox";

/// Code that runs natively at start but not under valgrind, which the
/// profile therefore misses: rustix's lookup of `clock_gettime` in the
/// vDSO (valgrind's vDSO lacks it). Without it, the lookup's functions
/// faulted in a 64 KiB window of their own (`perf record -e page-faults
/// -d` on the one-line script). Laid out right after the one-line
/// script's functions.
const NATIVE_ONLY: [&str; 2] = [
    "_ZN6rustix7backend4vdso*",
    "_ZN6rustix7backend13vdso_wrappers*",
];

/// The one-line script the layout serves first (#36's goal is its RSS),
/// which `lox-bench` measures too.
pub(crate) const ONE_LINE: &str = "print \"hi\";\n";

/// What the command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Train and rewrite the script.
    Write,
    /// Check that the script names every function the one-line script
    /// runs in this build, as a function the start path gained since the
    /// last training falls wherever the compiler puts it, often in a
    /// window of its own.
    Check,
}

pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let mode = match args {
        [] => Mode::Write,
        [flag] if flag == "--check" => Mode::Check,
        [arg, ..] => return Err(format!("lox-layout takes only --check, not `{arg}`")),
    };
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
    if mode == Mode::Check {
        return check(r, &lox, &dir, &one_line);
    }

    // Exact names first (this build's hashes), then the same functions
    // with their hashes as wildcards, for builds whose hashes differ.
    let mut exact = Vec::new();
    let mut patterns = Vec::new();
    let programs = [
        ("one_line", one_line),
        ("basics", root().join(BASICS)),
        ("young", root().join(YOUNG)),
        ("train", root().join(TRAIN)),
    ];
    for (name, program) in programs {
        let ran = profile(r, &lox, &dir, name, &program)?;
        let before = (exact.len(), patterns.len());
        add_new(
            &mut exact,
            ran.iter().filter_map(|f| pattern(f, Hashes::Kept)),
        );
        add_new(
            &mut patterns,
            ran.iter().filter_map(|f| pattern(f, Hashes::Wildcards)),
        );
        eprintln!(
            "{name}: {} more functions ({} more patterns with wildcards)",
            exact.len() - before.0,
            patterns.len() - before.1
        );
        if name == "one_line" {
            add_new(&mut exact, NATIVE_ONLY.iter().map(|p| p.to_string()));
        }
    }
    let patterns: Vec<String> = exact.into_iter().chain(patterns).collect();
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

/// `--check`: profiles the one-line script alone and fails, naming them,
/// if the script lacks the exact pattern of a function it ran.
fn check(r: &mut Runner, lox: &Path, dir: &Path, one_line: &Path) -> Result<(), String> {
    let ran = profile(r, lox, dir, "one_line", one_line)?;
    let path = root().join(SCRIPT);
    let script = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let missing = unnamed(&script, &ran);
    if missing.is_empty() {
        eprintln!(
            "{SCRIPT} names all {} functions the one-line script runs",
            ran.len()
        );
        return Ok(());
    }
    Err(format!(
        "{SCRIPT} does not name {} of the {} functions the one-line script runs in this build \
         (each may cost a 64 KiB window of resident text): run `cargo xtask lox-layout`; \
         the first: {}",
        missing.len(),
        ran.len(),
        missing
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Runs `lox` on `program` under callgrind (the profile in `dir`, named
/// after `name`); the functions of the binary that ran.
fn profile(
    r: &mut Runner,
    lox: &Path,
    dir: &Path,
    name: &str,
    program: &Path,
) -> Result<Vec<String>, String> {
    let out = dir.join(format!("callgrind.{name}"));
    r.step(
        &format!("callgrind: lox {}", program.display()),
        Command::new("valgrind")
            .args(["--tool=callgrind", "--demangle=no"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(lox)
            .arg(program)
            .stdout(std::process::Stdio::null()),
    )?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(executed_functions(&text, "lox"))
}

/// The functions of `ran` whose exact pattern `script` (a linker script
/// [`linker_script`] wrote) lacks.
fn unnamed(script: &str, ran: &[String]) -> Vec<String> {
    let named: std::collections::HashSet<&str> = script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("*(.text."))
        .filter_map(|rest| rest.split_once(' ').map(|(p, _)| p))
        .collect();
    ran.iter()
        .filter(|f| pattern(f, Hashes::Kept).is_some_and(|p| !named.contains(p.as_str())))
        .cloned()
        .collect()
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

/// Appends the patterns of `new` that `list` lacks, sorted, so that a
/// retraining changes the file only where the functions changed.
fn add_new(list: &mut Vec<String>, new: impl Iterator<Item = String>) {
    let have: std::collections::HashSet<String> = list.iter().cloned().collect();
    let mut new: Vec<String> = new.filter(|p| !have.contains(p)).collect();
    new.sort();
    new.dedup();
    list.extend(new);
}

/// What a pattern does with a symbol's hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hashes {
    /// Kept: the pattern names this build's copy of the function and no
    /// other instance of a generic one. Only `.llvm.N` becomes a wildcard.
    Kept,
    /// Made wildcards: the pattern matches the function in any build, and
    /// every instance of a generic function.
    Wildcards,
}

/// The section-name pattern for the function `symbol`; `None` for a name
/// a linker-script pattern cannot spell.
fn pattern(symbol: &str, hashes: Hashes) -> Option<String> {
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
    let mangled = symbol.starts_with("_ZN") || symbol.starts_with("_R");
    if hashes == Hashes::Kept && mangled {
        return Some(format!("{symbol}*"));
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
            pattern(
                "_ZN10hotmem_lox2vm3Vm3new17h0dc92ce588fa2092E",
                Hashes::Wildcards
            )
            .as_deref(),
            Some("_ZN10hotmem_lox2vm3Vm3new17h*E*")
        );
        assert_eq!(
            pattern(
                "_ZN5alloc7raw_vec11finish_grow17hbf2e9cf69c163d42E.llvm.16904490090993486975",
                Hashes::Wildcards
            )
            .as_deref(),
            Some("_ZN5alloc7raw_vec11finish_grow17h*E*")
        );
    }

    #[test]
    fn kept_hashes_name_one_instance() {
        assert_eq!(
            pattern(
                "_ZN5alloc7raw_vec11finish_grow17hbf2e9cf69c163d42E.llvm.16904490090993486975",
                Hashes::Kept
            )
            .as_deref(),
            Some("_ZN5alloc7raw_vec11finish_grow17hbf2e9cf69c163d42E*")
        );
        assert_eq!(
            pattern("_RNvCs1a2B_3std4exit", Hashes::Kept).as_deref(),
            Some("_RNvCs1a2B_3std4exit*")
        );
        assert_eq!(pattern("main", Hashes::Kept).as_deref(), Some("main"));
    }

    #[test]
    fn v0_crate_disambiguators_become_wildcards() {
        assert_eq!(
            pattern(
                "_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCsjrHSEGnQ3l9_3std",
                Hashes::Wildcards
            )
                .as_deref(),
            Some("_RNvMs4_NtCs*_5alloc7raw_vecNtB5_11RawVecInner11finish_growCs*_3std*")
        );
    }

    #[test]
    fn names_a_script_cannot_spell_are_left_out() {
        assert_eq!(
            pattern("0x0000000000012345 (weird)", Hashes::Wildcards),
            None
        );
        assert_eq!(pattern("", Hashes::Kept), None);
        assert_eq!(pattern("0x0000000000067910", Hashes::Kept), None);
        assert_eq!(pattern("main", Hashes::Wildcards).as_deref(), Some("main"));
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
    fn the_check_finds_the_functions_the_script_does_not_name() {
        let named = "_ZN3lox4main17h0123456789abcdefE*".to_owned();
        let script = linker_script(&[named, "_ZN3lox4main17h*E*".to_owned()]);
        let ran = [
            "_ZN3lox4main17h0123456789abcdefE".to_owned(),
            "_ZN3lox4main17hfedcba9876543210E".to_owned(),
            "0x0000000000012345".to_owned(),
        ];
        // The second instance matches only the wildcard pattern: it is
        // not named, so it falls after all the exact names.
        assert_eq!(unnamed(&script, &ran), ["_ZN3lox4main17hfedcba9876543210E"]);
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
