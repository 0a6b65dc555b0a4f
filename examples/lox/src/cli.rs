//! The `lox` command line: options, modes, exit statuses and reading the
//! source file, kept apart from `main` so that they can be tested.
//!
//! ```text
//! lox [--gc-stress | --gc-concurrent | --gc-concurrent-generational
//!      | --collector concurrent-generational] [--heap-max MIB] [--report DIR]
//!     [--compile-only | --disassemble] [path]
//! ```

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The usage line printed (on stderr) for a bad command line.
pub const USAGE: &str = "Usage: lox [--gc-stress | --gc-concurrent | --gc-concurrent-generational \
                         | --collector concurrent-generational] \
                         [--heap-max MIB] [--report DIR] \
                         [--compile-only | --disassemble] [path]";

/// What `lox` is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No path: read-eval-print loop on stdin.
    Repl,
    /// Run the program in the file.
    Run(PathBuf),
    /// Compile the file, print compile errors, run nothing.
    CompileOnly(PathBuf),
    /// Compile the file and print its bytecode listing.
    Disassemble(PathBuf),
}

/// How the collector is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GcMode {
    /// Collect when the runtime's heap sizing says so.
    #[default]
    Normal,
    /// Collect at every allocation (finds missing roots).
    Stress,
    /// The concurrent collector (single-generation, moving), with a cycle
    /// always running: a thread asks for the next one as soon as one ends
    /// (finds missing barriers).
    Concurrent,
    /// The concurrent collector with young and old cycles, always running:
    /// three young cycles, then a full one, back to back.
    ConcurrentGenerational,
    /// The concurrent collector with young and old cycles, started by the
    /// runtime's pacing (`--collector concurrent-generational`): the mode
    /// to measure against the default.
    ConcurrentGenerationalPaced,
}

/// The parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// What to do.
    pub mode: Mode,
    /// How the collector is driven.
    pub gc: GcMode,
    /// The heap's maximum size in MiB, if limited.
    pub heap_max_mib: Option<u64>,
    /// Where to write the run's report, if anywhere.
    pub report_dir: Option<PathBuf>,
}

/// A command line that `lox` does not accept.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageError {
    /// An option `lox` does not know.
    UnknownOption(String),
    /// An option that takes a value came last.
    MissingValue(&'static str),
    /// `--heap-max` with something other than a positive whole number.
    BadHeapMax(String),
    /// `--collector` with something other than `stop-the-world` or
    /// `concurrent-generational`.
    BadCollector(String),
    /// More than one path.
    ExtraArgument(String),
    /// `--compile-only` or `--disassemble` without a path.
    MissingPath(&'static str),
    /// `--compile-only` and `--disassemble` together.
    ConflictingModes,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownOption(option) => write!(f, "unknown option '{option}'"),
            Self::MissingValue(option) => write!(f, "{option} needs a value"),
            Self::BadHeapMax(value) => {
                write!(
                    f,
                    "--heap-max takes a positive number of MiB, not '{value}'"
                )
            }
            Self::BadCollector(value) => write!(
                f,
                "--collector takes stop-the-world or concurrent-generational, not '{value}'"
            ),
            Self::ExtraArgument(argument) => write!(f, "unexpected argument '{argument}'"),
            Self::MissingPath(option) => write!(f, "{option} needs a path"),
            Self::ConflictingModes => {
                f.write_str("--compile-only and --disassemble exclude each other")
            }
        }
    }
}

impl std::error::Error for UsageError {}

/// The statuses `lox` exits with (the BSD `sysexits.h` values clox uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success.
    Success = 0,
    /// Bad command line (`EX_USAGE`).
    Usage = 64,
    /// A compile error (`EX_DATAERR`).
    CompileError = 65,
    /// A feature this build does not have yet (`EX_UNAVAILABLE`).
    Unavailable = 69,
    /// A runtime error (`EX_SOFTWARE`).
    RuntimeError = 70,
    /// The source file could not be read (`EX_IOERR`).
    IoError = 74,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit as u8)
    }
}

/// Which of the two compile-time modes was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrontEndFlag {
    CompileOnly,
    Disassemble,
}

/// Parses the arguments after the program name.
///
/// # Errors
///
/// [`UsageError`] for anything `lox` does not accept; the caller prints it
/// with [`USAGE`] and exits with [`Exit::Usage`].
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Options, UsageError> {
    let mut args = args.into_iter();
    let mut gc = GcMode::Normal;
    let mut heap_max_mib = None;
    let mut report_dir = None;
    let mut front_end = None;
    let mut path: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        match text.as_ref() {
            "--gc-stress" => gc = GcMode::Stress,
            "--gc-concurrent" => gc = GcMode::Concurrent,
            "--gc-concurrent-generational" => gc = GcMode::ConcurrentGenerational,
            "--collector" => {
                let value = args.next().ok_or(UsageError::MissingValue("--collector"))?;
                match value.to_string_lossy().as_ref() {
                    "concurrent-generational" => gc = GcMode::ConcurrentGenerationalPaced,
                    "stop-the-world" => gc = GcMode::Normal,
                    other => return Err(UsageError::BadCollector(other.to_string())),
                }
            }
            "--heap-max" => {
                let value = args.next().ok_or(UsageError::MissingValue("--heap-max"))?;
                let value = value.to_string_lossy();
                let mib = value
                    .parse::<u64>()
                    .ok()
                    .filter(|&mib| mib > 0)
                    .ok_or_else(|| UsageError::BadHeapMax(value.to_string()))?;
                heap_max_mib = Some(mib);
            }
            "--report" => {
                let dir = args.next().ok_or(UsageError::MissingValue("--report"))?;
                report_dir = Some(PathBuf::from(dir));
            }
            "--compile-only" | "--disassemble" => {
                let flag = if text == "--compile-only" {
                    FrontEndFlag::CompileOnly
                } else {
                    FrontEndFlag::Disassemble
                };
                if front_end.is_some_and(|known| known != flag) {
                    return Err(UsageError::ConflictingModes);
                }
                front_end = Some(flag);
            }
            option if option.starts_with('-') && option.len() > 1 => {
                return Err(UsageError::UnknownOption(option.to_owned()));
            }
            _ if path.is_some() => return Err(UsageError::ExtraArgument(text.into_owned())),
            _ => path = Some(PathBuf::from(arg)),
        }
    }
    let mode = match (front_end, path) {
        (None, None) => Mode::Repl,
        (None, Some(path)) => Mode::Run(path),
        (Some(FrontEndFlag::CompileOnly), Some(path)) => Mode::CompileOnly(path),
        (Some(FrontEndFlag::Disassemble), Some(path)) => Mode::Disassemble(path),
        (Some(FrontEndFlag::CompileOnly), None) => {
            return Err(UsageError::MissingPath("--compile-only"));
        }
        (Some(FrontEndFlag::Disassemble), None) => {
            return Err(UsageError::MissingPath("--disassemble"));
        }
    };
    Ok(Options {
        mode,
        gc,
        heap_max_mib,
        report_dir,
    })
}

/// A source file that could not be read; `Display` is clox's message.
#[derive(Debug)]
pub struct SourceError {
    path: PathBuf,
    error: std::io::Error,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Could not open file \"{}\".", self.path.display())
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Reads a program's source. Bytes that are not UTF-8 are replaced by
/// U+FFFD (clox would keep them; only string literals could tell).
///
/// # Errors
///
/// [`SourceError`] when the file cannot be read; exit with [`Exit::IoError`].
pub fn read_source(path: &Path) -> Result<String, SourceError> {
    let bytes = std::fs::read(path).map_err(|error| SourceError {
        path: path.to_owned(),
        error,
    })?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, UsageError> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn no_arguments_is_the_repl() {
        let options = parse(&[]).unwrap();
        assert_eq!(options.mode, Mode::Repl);
        assert_eq!(options.gc, GcMode::Normal);
        assert_eq!(options.heap_max_mib, None);
    }

    #[test]
    fn a_path_runs_it() {
        assert_eq!(parse(&["a.lox"]).unwrap().mode, Mode::Run("a.lox".into()));
        assert_eq!(parse(&["-"]).unwrap().mode, Mode::Run("-".into()));
    }

    #[test]
    fn every_option() {
        let options = parse(&[
            "--gc-stress",
            "--heap-max",
            "64",
            "--report",
            "out",
            "x.lox",
        ])
        .unwrap();
        assert_eq!(
            options,
            Options {
                mode: Mode::Run("x.lox".into()),
                gc: GcMode::Stress,
                heap_max_mib: Some(64),
                report_dir: Some("out".into()),
            }
        );
        assert_eq!(
            parse(&["--collector", "concurrent-generational", "x.lox"])
                .unwrap()
                .gc,
            GcMode::ConcurrentGenerationalPaced
        );
        assert_eq!(
            parse(&["--gc-concurrent-generational", "x.lox"])
                .unwrap()
                .gc,
            GcMode::ConcurrentGenerational
        );
        assert_eq!(
            parse(&["--collector", "fast", "x.lox"]),
            Err(UsageError::BadCollector("fast".into()))
        );
        assert_eq!(
            parse(&["--compile-only", "x.lox"]).unwrap().mode,
            Mode::CompileOnly("x.lox".into())
        );
        assert_eq!(
            parse(&["x.lox", "--disassemble"]).unwrap().mode,
            Mode::Disassemble("x.lox".into())
        );
    }

    #[test]
    fn bad_command_lines() {
        assert_eq!(
            parse(&["--fast"]),
            Err(UsageError::UnknownOption("--fast".into()))
        );
        assert_eq!(
            parse(&["a", "b"]),
            Err(UsageError::ExtraArgument("b".into()))
        );
        assert_eq!(
            parse(&["--heap-max"]),
            Err(UsageError::MissingValue("--heap-max"))
        );
        assert_eq!(
            parse(&["--heap-max", "0", "a"]),
            Err(UsageError::BadHeapMax("0".into()))
        );
        assert_eq!(
            parse(&["--heap-max", "lots"]),
            Err(UsageError::BadHeapMax("lots".into()))
        );
        assert_eq!(
            parse(&["--report"]),
            Err(UsageError::MissingValue("--report"))
        );
        assert_eq!(
            parse(&["--compile-only"]),
            Err(UsageError::MissingPath("--compile-only"))
        );
        assert_eq!(
            parse(&["--compile-only", "--disassemble", "a"]),
            Err(UsageError::ConflictingModes)
        );
    }

    #[test]
    fn unreadable_source_has_clox_message() {
        let error = read_source(Path::new("/nonexistent/x.lox")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Could not open file \"/nonexistent/x.lox\"."
        );
    }
}
