//! `lox-suite`: runs the Lox conformance suite against an interpreter.
//!
//! ```text
//! lox-suite [--suite DIR] [--compile-errors] [--filter PREFIX] [--jobs N]
//!           [--timeout SECS] [--quiet] [--] INTERPRETER [ARGS...]
//! ```
//!
//! The suite directory defaults to `$LOX_TESTS`, else `../shared/lox-tests`
//! beside the workspace. Everything from `INTERPRETER` on is the command
//! each test file is appended to. Exits 0 when every test passed (or there
//! was no suite: skipped), 1 when some failed, 64 on a bad command line.
//! Every test is listed as PASS or FAIL (with its first mismatches and a
//! stdout diff); `--quiet` lists only the failures. The last line is the
//! total, e.g. `246/246 passed`.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Duration;

use hotmem_lox::suite::{Interpreter, Selection, SuiteConfig, SuiteRun, run_suite};

const USAGE: &str = "Usage: lox-suite [--suite DIR] [--compile-errors] [--filter PREFIX] \
                     [--jobs N] [--timeout SECS] [--quiet] [--] INTERPRETER [ARGS...]";

/// Which tests are listed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verbosity {
    FailuresOnly,
    EveryTest,
}

fn main() -> ExitCode {
    let (config, verbosity) = match parse(std::env::args_os().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("lox-suite: {message}");
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    println!(
        "suite {} with {}{}",
        config.suite_dir.display(),
        config.interpreter.program.display(),
        config
            .interpreter
            .args
            .iter()
            .map(|arg| format!(" {}", arg.to_string_lossy()))
            .collect::<String>()
    );
    match run_suite(&config) {
        SuiteRun::Skipped(reason) => {
            println!("skipped: {reason}");
            ExitCode::SUCCESS
        }
        SuiteRun::Completed(report) => {
            match verbosity {
                Verbosity::EveryTest => {
                    for result in report.results() {
                        print!("{result}");
                    }
                    println!("{}", report.summary());
                }
                Verbosity::FailuresOnly => print!("{report}"),
            }
            if report.all_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<(SuiteConfig, Verbosity), String> {
    let mut args = args.into_iter();
    let mut suite_dir = None;
    let mut selection = Selection::All;
    let mut filter = None;
    let mut jobs = None;
    let mut timeout = None;
    let mut verbosity = Verbosity::EveryTest;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.to_string_lossy().as_ref() {
            "--suite" => suite_dir = Some(value("--suite")?.into()),
            "--compile-errors" => selection = Selection::CompileErrors,
            "--filter" => filter = Some(value("--filter")?.to_string_lossy().into_owned()),
            "--jobs" => {
                let text = value("--jobs")?;
                jobs = Some(
                    text.to_string_lossy()
                        .parse::<NonZeroUsize>()
                        .map_err(|_| format!("--jobs takes a positive number, not {text:?}"))?,
                );
            }
            "--timeout" => {
                let text = value("--timeout")?;
                let seconds = text
                    .to_string_lossy()
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--timeout takes positive seconds, not {text:?}"))?;
                timeout = Some(Duration::from_secs_f64(seconds));
            }
            "--quiet" => verbosity = Verbosity::FailuresOnly,
            "--" => {
                command.extend(args.by_ref());
            }
            option if option.starts_with("--") => return Err(format!("unknown option {option}")),
            _ => {
                command.push(arg);
                command.extend(args.by_ref());
            }
        }
    }
    let mut command = command.into_iter();
    let program = command.next().ok_or("no interpreter given")?;
    let mut config = SuiteConfig::new(Interpreter {
        program: program.into(),
        args: command.collect(),
    });
    config.selection = selection;
    config.filter = filter;
    if let Some(dir) = suite_dir {
        config.suite_dir = dir;
    }
    if let Some(jobs) = jobs {
        config.jobs = jobs;
    }
    if let Some(timeout) = timeout {
        config.timeout = timeout;
    }
    Ok((config, verbosity))
}
