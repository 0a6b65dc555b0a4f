//! The hostile-embedder suite for a while: random cases (every collector,
//! a panic planted in a binding callback in half of them) until `--secs`
//! have passed, each under a deadline; a summary per collector. What a
//! case does and what must hold: `hotmem_examples::hostile`.
//!
//! `cargo run --release -p hotmem-examples --example hostile -- --secs 600
//! [--mode all|stw|generational|concurrent|nonmoving|concurrent-generational] [--threads M,O]`
//! (`cargo xtask soak` runs it after the runtime soak).

use hotmem_examples::hostile::{self, Callback, Case, Mode, PanicPlan};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: hostile [--secs N] [--mode all|stw|generational|concurrent|nonmoving|concurrent-generational] [--threads MUTATORS,OUTSIDERS] [--seed N] [--case SEED:CALLBACK:NTH]";

/// A case that has not ended after this long has hung.
const DEADLINE: Duration = Duration::from_secs(120);

struct Args {
    secs: u64,
    modes: Vec<Mode>,
    mutators: usize,
    outsiders: usize,
    seed: u64,
    /// `--case SEED:CALLBACK:NTH` (CALLBACK `none` for no panic): every
    /// case is this one, to reproduce a failure the suite printed.
    case: Option<(u64, Option<PanicPlan>)>,
}

/// A callback by its name in a failure's `PanicPlan` (`MutatorRoots`).
fn callback(name: &str) -> Option<Callback> {
    Callback::ALL.into_iter().find(|c| format!("{c:?}") == name)
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        secs: 60,
        modes: Mode::ALL.to_vec(),
        mutators: 2,
        outsiders: 1,
        seed: std::process::id() as u64,
        case: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--secs" => a.secs = value()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--mode" => {
                a.modes = match value()?.as_str() {
                    "all" => Mode::ALL.to_vec(),
                    "stw" => vec![Mode::StopTheWorld],
                    "generational" => vec![Mode::Generational],
                    "concurrent" => vec![Mode::Concurrent],
                    "nonmoving" => vec![Mode::ConcurrentNonMoving],
                    "concurrent-generational" => vec![Mode::ConcurrentGenerational],
                    other => return Err(format!("--mode {other}")),
                }
            }
            "--threads" => {
                let v = value()?;
                let (m, o) = v.split_once(',').ok_or("--threads M,O")?;
                a.mutators = m.parse().map_err(|e| format!("--threads: {e}"))?;
                a.outsiders = o.parse().map_err(|e| format!("--threads: {e}"))?;
            }
            "--case" => {
                let v = value()?;
                let parts: Vec<&str> = v.split(':').collect();
                let [seed, cb, nth] = parts[..] else {
                    return Err("--case SEED:CALLBACK:NTH".into());
                };
                let seed = seed.parse().map_err(|e| format!("--case: {e}"))?;
                let plan = match cb {
                    "none" => None,
                    name => Some(PanicPlan {
                        callback: callback(name).ok_or(format!("--case: no callback {name}"))?,
                        nth: nth.parse().map_err(|e| format!("--case: {e}"))?,
                    }),
                };
                a.case = Some((seed, plan));
            }
            _ => return Err(USAGE.into()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // The planted panics are caught by the runtime: their messages are
    // noise here (any other panic still prints).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let planted = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.contains("the hostile binding panics"));
        if !planted {
            default_hook(info);
        }
    }));
    println!(
        "hostile-embedder suite: {} s, {} mutator(s) and {} outsider(s) per case, seed {}",
        args.secs, args.mutators, args.outsiders, args.seed
    );
    let started = Instant::now();
    let mut per_mode: BTreeMap<String, [u64; 5]> = BTreeMap::new();
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(args.secs) {
        let seed = args.seed.wrapping_mul(6364136223846793005).wrapping_add(n);
        let mode = args.modes[(n as usize) % args.modes.len()];
        // Every mode runs with and without a planted panic in turn.
        let planted = (n / args.modes.len() as u64) % 2 == 1;
        let panic = planted.then(|| PanicPlan {
            callback: Callback::ALL[(seed >> 8) as usize % Callback::ALL.len()],
            nth: 1 + (seed >> 16) % 40,
        });
        let (seed, panic) = args.case.unwrap_or((seed, panic));
        let case = Case {
            mode,
            seed,
            ops: 400,
            mutators: args.mutators,
            outsiders: args.outsiders,
            panic,
        };
        n += 1;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(hostile::run(&case));
        });
        let outcome = match rx.recv_timeout(DEADLINE) {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => {
                eprintln!("FAILED: {case:?}: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => {
                eprintln!("FAILED: {case:?} hung for {DEADLINE:?}");
                return ExitCode::FAILURE;
            }
        };
        let row = per_mode.entry(format!("{mode:?}")).or_default();
        row[0] += 1;
        row[1] += outcome.collections_ok + outcome.collections_failed;
        row[2] += u64::from(outcome.panicked);
        row[3] += u64::from(outcome.poisoned);
        row[4] += outcome.leaked_regions;
    }
    println!(
        "{:<22} {:>7} {:>12} {:>9} {:>9} {:>14}",
        "mode", "cases", "collections", "panicked", "poisoned", "leaked regions"
    );
    for (mode, r) in &per_mode {
        println!(
            "{mode:<22} {:>7} {:>12} {:>9} {:>9} {:>14}",
            r[0], r[1], r[2], r[3], r[4]
        );
    }
    println!(
        "clean: {n} cases in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
