//! `lox`: compiles and runs Lox programs on the hotmem heap; no path: a
//! read-eval-print loop.
//!
//! Exit statuses are clox's: 64 bad usage, 65 compile error, 70 runtime
//! error, 74 unreadable file.
//!
//! # Start
//!
//! `lox` has its own C `main` (`#![no_main]`), to start as small as clox
//! does (#36). Rust's usual start finds the main thread's stack guard by
//! reading `/proc/self/maps` through libc's `sscanf`, installs
//! stack-overflow handlers and ignores `SIGPIPE`. In `lox`, whose
//! compiler stops at [`MAX_NESTING`](hotmem_lox::compiler::MAX_NESTING)
//! instead of overflowing, that start cost about 130 KiB of the one-line
//! script's resident set. What differs:
//! a stack overflow is a plain `SIGSEGV` without Rust's message, and a
//! write to a closed pipe ends the process with `SIGPIPE`, as it ends
//! clox. Arguments still come through [`std::env::args_os`], which glibc
//! hands to Rust before `main`, and [`std::process::exit`] still flushes
//! standard output.
//!
//! The interpreter runs on the main thread when its stack limit covers
//! [`STACK_BYTES`] (8 MiB, Linux's default, in a release build); otherwise
//! on a thread with that stack. A second thread costs its stack, its
//! malloc arena and `pthread_create`'s code, about 110 KiB.

#![no_main]
// Only `main`, which the C runtime calls, is unsafe to declare.
#![deny(unsafe_code)]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
#[cfg(feature = "report")]
use std::time::Duration;

#[cfg(feature = "report")]
use hotmem_examples::report::{Recorder, Sampling};

use hotmem_lox::bytecode::disassemble;
use hotmem_lox::cli::{self, Exit, Mode, Options, USAGE};
use hotmem_lox::vm::{Vm, VmOptions};
use hotmem_lox::{FunctionProto, compile};

/// The stack the compiler needs: it recurses once per nesting level, up
/// to `MAX_NESTING`. In a release build the deepest program it accepts
/// runs in 2 MiB (and not in 1 MiB); a debug build's frames take about
/// 1 KiB per level. Reserved, not resident: only what a program's nesting
/// touches is.
const STACK_BYTES: usize = if cfg!(debug_assertions) {
    64 << 20
} else {
    8 << 20
};

/// The process's entry point, called by the C runtime.
#[allow(unsafe_code)]
// SAFETY: no other `main` is linked (`#![no_main]`), and the signature is
// the C runtime's `int main(int, char **)`.
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    let exit = if main_stack_fits() {
        std::panic::catch_unwind(lox).unwrap_or(Exit::RuntimeError)
    } else {
        on_a_thread()
    };
    // `exit` flushes standard output, and no thread is joined: a thread
    // that returns runs libc's per-thread teardown, whose code (freeing
    // resolver and RPC state) faulted three more 64 KiB windows of libc's
    // text in at the very end of every run (`perf record -e page-faults
    // -d`).
    std::process::exit(exit as i32)
}

/// Whether the main thread's stack may grow to [`STACK_BYTES`].
fn main_stack_fits() -> bool {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Stack);
    limit
        .current
        .is_none_or(|bytes| bytes >= STACK_BYTES as u64)
}

/// Runs [`lox`] on a thread with a [`STACK_BYTES`] stack; the thread ends
/// the process.
fn on_a_thread() -> Exit {
    let worker = std::thread::Builder::new()
        .name("lox".into())
        .stack_size(STACK_BYTES)
        .spawn(|| std::process::exit(lox() as i32));
    match worker {
        Ok(worker) => {
            // Only a panic comes back: `exit` does not return.
            let _ = worker.join();
            Exit::RuntimeError
        }
        Err(error) => {
            eprintln!("lox: cannot start the interpreter's thread: {error}");
            Exit::RuntimeError
        }
    }
}

/// The `lox` command.
fn lox() -> Exit {
    let options = match cli::parse_args(std::env::args_os().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("lox: {error}");
            eprintln!("{USAGE}");
            return Exit::Usage;
        }
    };
    match &options.mode {
        Mode::CompileOnly(path) => front_end(path, |_| Exit::Success),
        Mode::Disassemble(path) => front_end(path, print_listing),
        Mode::Run(path) => front_end(path, |script| run(script, &options)),
        Mode::Repl => repl(&options),
    }
}

/// Reads and compiles `path`, printing compile errors as clox does, then
/// hands the script to `then`.
fn front_end(path: &Path, then: impl FnOnce(&FunctionProto) -> Exit) -> Exit {
    let source = match cli::read_source(path) {
        Ok(source) => source,
        Err(error) => {
            eprintln!("{error}");
            return Exit::IoError;
        }
    };
    match compile(&source) {
        Ok(script) => then(&script),
        Err(errors) => {
            let mut stderr = std::io::stderr().lock();
            for error in &errors {
                let _ = writeln!(stderr, "{error}");
            }
            Exit::CompileError
        }
    }
}

fn print_listing(script: &FunctionProto) -> Exit {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`lox --disassemble f | head`) is not an error.
    let _ = write!(stdout, "{}", disassemble(script));
    Exit::Success
}

/// Runs a compiled script on a new VM.
fn run(script: &FunctionProto, options: &Options) -> Exit {
    let session = match Session::start(options, "lox script") {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    let Session { mut vm, recorder } = session;
    let result = vm.interpret(script);
    vm.flush();
    recorder.finish(&vm);
    gc_stats(&vm);
    leave(vm);
    match result {
        Ok(()) => Exit::Success,
        Err(error) => {
            eprintln!("{error}");
            Exit::RuntimeError
        }
    }
}

/// Leaves `vm`, whose output the caller flushed, to the process's exit,
/// which follows: the runtime's log is flushed, and nothing else of its
/// teardown matters to a process that ends. Dropped, the runtime stops and joins its threads
/// (the uncommitter, from the first collection on; the concurrent
/// collector's), and each thread that ends runs libc's per-thread
/// teardown, whose code faulted three 64 KiB windows of libc's text in at
/// the end of every run that collected (methods.lox's peak RSS: 4.73 MiB
/// against 4.56 without the uncommitter, five runs each).
fn leave(vm: Vm) {
    vm.runtime().flush_log();
    std::mem::forget(vm);
}

/// The read-eval-print loop: each line is compiled and run on the same VM
/// (its globals stay); errors are printed and the loop goes on. Ends at
/// the end of the input.
fn repl(options: &Options) -> Exit {
    let session = match Session::start(options, "lox REPL") {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    let Session { mut vm, recorder } = session;
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        line.clear();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                break;
            }
            Ok(_) => {}
        }
        match compile(&line) {
            Ok(script) => {
                if let Err(error) = vm.interpret(&script) {
                    eprintln!("{error}");
                }
            }
            Err(errors) => {
                for error in &errors {
                    eprintln!("{error}");
                }
            }
        }
    }
    vm.flush();
    recorder.finish(&vm);
    gc_stats(&vm);
    leave(vm);
    Exit::Success
}

/// A VM with the command line's settings, and its report recorder.
struct Session {
    vm: Vm,
    recorder: Report,
}

impl Session {
    fn start(options: &Options, title: &str) -> Result<Session, Exit> {
        let fail = |message: String| {
            eprintln!("lox: {message}");
            Exit::Usage
        };
        let (log, recorder) = Report::log(options, title).map_err(fail)?;
        let mut vm_options = VmOptions::new(options.gc).log(log);
        if let Some(mib) = options.heap_max_mib {
            let bytes = usize::try_from(mib)
                .ok()
                .and_then(|mib| mib.checked_mul(1 << 20))
                .filter(|&bytes| bytes >= hotmem::MIN_HEAP)
                .ok_or_else(|| {
                    fail(format!(
                        "--heap-max {mib}: the heap needs at least {} MiB",
                        hotmem::MIN_HEAP >> 20
                    ))
                })?;
            vm_options = vm_options.heap_max(bytes);
        }
        let vm = Vm::new(vm_options, Box::new(std::io::stdout())).map_err(|error| {
            eprintln!("lox: {error}");
            Exit::RuntimeError
        })?;
        let recorder = Report::start(recorder, options.report_dir.clone(), &vm);
        Ok(Session { vm, recorder })
    }
}

/// The `--report DIR` page: the recorder and its sampling thread.
#[cfg(feature = "report")]
struct Report {
    recording: Option<(Recorder, Sampling, PathBuf)>,
}

#[cfg(feature = "report")]
impl Report {
    /// The runtime's log (`HOTMEM_LOG`), and the page's recorder when
    /// `--report` asks for one.
    fn log(
        options: &Options,
        title: &str,
    ) -> Result<(hotmem::log::LogConfig, Option<Recorder>), String> {
        hotmem_examples::log_and_recorder(options.report_dir.is_some(), || title.to_owned())
    }

    fn start(recorder: Option<Recorder>, dir: Option<PathBuf>, vm: &Vm) -> Report {
        let recording = match (recorder, dir) {
            (Some(recorder), Some(dir)) => {
                match recorder.sample(vm.runtime(), Duration::from_millis(100)) {
                    Ok(sampling) => Some((recorder, sampling, dir)),
                    Err(error) => {
                        eprintln!("lox: --report: cannot start sampling: {error}");
                        None
                    }
                }
            }
            _ => None,
        };
        Report { recording }
    }

    fn finish(self, vm: &Vm) {
        if let Some((recorder, sampling, dir)) = self.recording {
            drop(sampling);
            recorder.snapshot_spaces(vm.runtime(), "at the end (the program's code)");
            match recorder.finish(vm.runtime(), &dir) {
                Ok(page) => eprintln!("lox: report written to {}", page.display()),
                Err(error) => eprintln!("lox: --report: {error}"),
            }
        }
    }
}

/// Without the `report` feature: the charting library, and the libm it
/// loads, stay out of the binary (#36's start-up memory).
#[cfg(not(feature = "report"))]
struct Report;

#[cfg(not(feature = "report"))]
impl Report {
    /// The runtime's log (`HOTMEM_LOG`); `--report` is refused.
    fn log(
        options: &Options,
        _title: &str,
    ) -> Result<(hotmem::log::LogConfig, Option<()>), String> {
        if options.report_dir.is_some() {
            return Err("--report needs a lox built with the report feature \
                 (cargo build --release -p hotmem-lox --features report)"
                .to_owned());
        }
        Ok((hotmem_examples::log_from_env()?, None))
    }

    fn start(_recorder: Option<()>, _dir: Option<PathBuf>, _vm: &Vm) -> Report {
        Report
    }

    fn finish(self, _vm: &Vm) {}
}

/// With `LOX_GC_STATS=1`, the collector's totals on one line of stderr
/// (`cargo xtask lox-bench` reads it).
fn gc_stats(vm: &Vm) {
    if std::env::var_os("LOX_GC_STATS").is_none_or(|v| v == "0") {
        return;
    }
    let runtime = vm.runtime();
    let totals = runtime.gc_totals();
    eprintln!(
        "lox-gc-stats cycles={} young={} pause_ns={} max_pause_ns={} mark_ns={} relocation_ns={} update_ns={} uptime_ns={} heap_committed={} heap_max={}",
        totals.cycles,
        totals.young_collections,
        totals.pause_ns,
        totals.max_pause_ns,
        totals.mark_ns,
        totals.relocation_ns,
        totals.update_ns,
        runtime.uptime().as_nanos(),
        runtime.heap().committed_bytes(),
        runtime.config().heap_max(),
    );
}
