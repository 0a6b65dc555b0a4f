//! The class-space experiment from the JDK-8198423 review, buddy allocator vs
//! the no-coalescing baseline in one run.
//!
//! A 10 MiB class space: 3000 short-lived small loaders each load one small
//! class and die, then large loaders each load one large class until the
//! space is exhausted. Without coalescing the small loaders' chunks stay on
//! the free list, too small for a large class; with it they merge back into
//! root chunks and the space fills up.
//!
//! ```text
//! cargo run --release -p hotmem-examples --example class_space_oom -- \
//!     [--space-mib 10] [--small-loaders 3000] [--small-class 512] [--large-class 4000]
//! ```

use hotmem_chunk::experiment::{ClassSpaceExperiment, ExperimentOutcome};
use hotmem_chunk::{Bytes, Coalescing};
use hotmem_os::Memory;
use std::process::ExitCode;

fn parse_args() -> Result<(usize, usize, usize, usize), String> {
    let mut space_mib = 10;
    let mut small_loaders = 3000;
    let mut small_class = 512;
    let mut large_class = 4000;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .parse::<usize>()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--space-mib" => space_mib = value,
            "--small-loaders" => small_loaders = value,
            "--small-class" => small_class = value,
            "--large-class" => large_class = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok((space_mib, small_loaders, small_class, large_class))
}

fn row(name: &str, o: &ExperimentOutcome) {
    println!(
        "{:<26} {:>13} {:>14} {:>12} {:>12} {:>7.1}%  {:>6} {:>6} {:>7}",
        name,
        o.small_loaders,
        o.large_classes,
        Bytes(o.used).to_string(),
        Bytes(o.capacity).to_string(),
        o.use_ratio() * 100.0,
        o.stats.free_chunks,
        o.stats.counters.merges,
        o.stats.counters.splits,
    );
}

fn main() -> ExitCode {
    let (space_mib, small_loaders, small_class, large_class) = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("class_space_oom: {e}");
            return ExitCode::FAILURE;
        }
    };
    let memory = Memory::new();
    let setup = |coalescing| {
        let mut e = ClassSpaceExperiment::review(coalescing);
        e.space.size = space_mib << 20;
        e.small_loaders = small_loaders;
        e.small_class = small_class;
        e.large_class = large_class;
        e
    };
    let mut outcomes = Vec::new();
    for coalescing in [Coalescing::Buddy, Coalescing::None] {
        let e = setup(coalescing);
        for run in [e, e.without_small_loaders()] {
            match run.run(&memory) {
                Ok(o) => outcomes.push(o),
                Err(err) => {
                    eprintln!("class_space_oom: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }

    println!(
        "Class space {space_mib} MiB; {small_loaders} small loaders x {small_class} B class \
         (standard growth policy: first chunk 2 KiB), then large loaders x {large_class} B \
         class until exhausted.\n"
    );
    println!(
        "{:<26} {:>13} {:>14} {:>12} {:>12} {:>8}  {:>6} {:>6} {:>7}",
        "allocator",
        "small loaders",
        "large classes",
        "used",
        "capacity",
        "use",
        "free",
        "merges",
        "splits"
    );
    let names = [
        "buddy (coalescing)",
        "buddy, no small loaders",
        "baseline (no coalescing)",
        "baseline, no small loaders",
    ];
    for (name, o) in names.iter().zip(&outcomes) {
        row(name, o);
    }
    println!();
    let (buddy, base) = (&outcomes[0], &outcomes[2]);
    println!(
        "buddy loads {} large classes after the small loaders ({} without them); the baseline \
         loads {} ({:.1}% use): the review saw ~2900 vs ~800 (40% use); elastic metaspace in \
         JDK 17 reaches 89.7% use.",
        buddy.large_classes,
        outcomes[1].large_classes,
        base.large_classes,
        base.use_ratio() * 100.0
    );
    println!("space exhausted by: {}\n", buddy.oom);

    for (name, o) in [
        ("buddy (coalescing)", buddy),
        ("baseline (no coalescing)", base),
    ] {
        println!("=== {name}: at exhaustion ===");
        println!("{}", o.map);
        println!("{}\n", o.stats);
    }
    ExitCode::SUCCESS
}
