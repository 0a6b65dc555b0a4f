//! `lox`: compiles and (once the VM lands) runs Lox programs.
//!
//! Exit statuses are clox's: 64 bad usage, 65 compile error, 70 runtime
//! error, 74 unreadable file.

#![forbid(unsafe_code)]

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use hotmem_lox::bytecode::disassemble;
use hotmem_lox::cli::{self, Exit, Mode, Options, USAGE};
use hotmem_lox::{FunctionProto, compile};

fn main() -> ExitCode {
    let options = match cli::parse_args(std::env::args_os().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("lox: {error}");
            eprintln!("{USAGE}");
            return Exit::Usage.into();
        }
    };
    let exit = match &options.mode {
        Mode::CompileOnly(path) => front_end(path, |_| Exit::Success),
        Mode::Disassemble(path) => front_end(path, print_listing),
        Mode::Run(path) => front_end(path, |script| run(script, &options)),
        Mode::Repl => repl(&options),
    };
    exit.into()
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

/// Runs a compiled script. The VM is not part of this build yet.
fn run(_script: &FunctionProto, _options: &Options) -> Exit {
    eprintln!("lox: this build has no VM yet; use --compile-only or --disassemble");
    Exit::Unavailable
}

/// The read-eval-print loop. The VM is not part of this build yet.
fn repl(_options: &Options) -> Exit {
    eprintln!("lox: this build has no VM yet, so no REPL");
    Exit::Unavailable
}
