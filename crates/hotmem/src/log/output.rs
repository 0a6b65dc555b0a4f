//! [`LogOutput`] and [`LogConfig`]: where the lines go, and which lines go
//! where.

use super::event::LogRecord;
use super::selection::{LogSelection, SelectorError};
use parking_lot::Mutex;
use std::fmt;
use std::fs::File;
use std::io::{self, LineWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A function that receives every record its selection lets through, on
/// the thread that logs it (the collecting thread, inside the pause: keep
/// it short, and never collect or request a safepoint from it). A panic in
/// it is caught: that record is lost, the collection goes on.
pub type LogCallback = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// Where selected lines go.
#[derive(Clone)]
#[non_exhaustive]
pub enum LogOutput {
    /// Text lines on standard output (HotSpot's default).
    Stdout,
    /// Text lines on standard error.
    Stderr,
    /// Text lines appended to a file opened by [`LogOutput::file`].
    File(LogFile),
    /// Each [`LogRecord`] handed to a function, for tools (structured) or
    /// to forward to the `log` or `tracing` facade of the application.
    Callback(LogCallback),
}

/// A log file, opened (and truncated) when the output is made.
#[derive(Clone)]
pub struct LogFile {
    path: PathBuf,
    writer: Arc<Mutex<LineWriter<File>>>,
}

impl LogFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl LogOutput {
    /// Text lines into `path`, created or truncated now.
    ///
    /// # Errors
    /// The error of creating the file.
    pub fn file(path: impl Into<PathBuf>) -> io::Result<LogOutput> {
        let path = path.into();
        let file = File::create(&path)?;
        Ok(LogOutput::File(LogFile {
            path,
            writer: Arc::new(Mutex::new(LineWriter::new(file))),
        }))
    }

    /// Records handed to `f`.
    pub fn callback(f: impl Fn(&LogRecord) + Send + Sync + 'static) -> LogOutput {
        LogOutput::Callback(Arc::new(f))
    }

    /// Writes `record`; a failed write of a text line is dropped (logging
    /// never fails the collection it describes).
    pub(crate) fn write(&self, record: &LogRecord) {
        match self {
            LogOutput::Stdout => {
                let _ = writeln!(io::stdout().lock(), "{record}");
            }
            LogOutput::Stderr => {
                let _ = writeln!(io::stderr().lock(), "{record}");
            }
            LogOutput::File(f) => {
                let _ = writeln!(f.writer.lock(), "{record}");
            }
            LogOutput::Callback(f) => {
                // A panicking callback loses its record, not the collection.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(record)));
            }
        }
    }

    pub(crate) fn flush(&self) {
        match self {
            LogOutput::Stdout => {
                let _ = io::stdout().flush();
            }
            LogOutput::Stderr => {}
            LogOutput::File(f) => {
                let _ = f.writer.lock().flush();
            }
            LogOutput::Callback(_) => {}
        }
    }
}

impl fmt::Debug for LogOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogOutput::Stdout => f.write_str("Stdout"),
            LogOutput::Stderr => f.write_str("Stderr"),
            LogOutput::File(file) => f.debug_tuple("File").field(&file.path).finish(),
            LogOutput::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}

/// Why an `-Xlog`-style specification was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum LogSpecError {
    /// The selectors before the first `:`.
    Selector(SelectorError),
    /// The output after it is none of `stdout`, `stderr`, `file=PATH`.
    UnknownOutput(String),
    /// The log file could not be created.
    File(PathBuf, io::Error),
}

impl fmt::Display for LogSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogSpecError::Selector(e) => write!(f, "{e}"),
            LogSpecError::UnknownOutput(o) => {
                write!(f, "unknown log output {o:?} (stdout, stderr or file=PATH)")
            }
            LogSpecError::File(p, e) => write!(f, "cannot create log file {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for LogSpecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogSpecError::Selector(e) => Some(e),
            LogSpecError::UnknownOutput(_) => None,
            LogSpecError::File(_, e) => Some(e),
        }
    }
}

/// The runtime's log: outputs, each with its own selection, as HotSpot's
/// `-Xlog` takes one selection per output. Empty by default: the runtime
/// logs nothing unless asked.
///
/// ```
/// use hotmem::log::{LogConfig, LogOutput, LogSelection};
/// use std::sync::{Arc, Mutex};
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let log = LogConfig::new()
///     .output("gc=info".parse()?, LogOutput::callback(move |r| {
///         sink.lock().unwrap().push(r.to_string())
///     }));
/// let rt = hotmem::Runtime::builder()
///     .numa(hotmem::NumaConfig::Off)
///     .heap_max(16 << 20)
///     .log(log)
///     .binding(hotmem::objects::SimpleObjects::new())
///     .build()?;
/// rt.collect()?;
/// let lines = seen.lock().unwrap();
/// assert!(lines[0].contains("[info][gc] GC(1) Major Collection (Explicit)"), "{lines:?}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LogConfig {
    pub(crate) outputs: Vec<(LogSelection, LogOutput)>,
}

impl LogConfig {
    /// No output.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same configuration, with the lines `selection` lets through
    /// also going to `output`.
    pub fn output(mut self, selection: LogSelection, output: LogOutput) -> Self {
        if !selection.is_none() {
            self.outputs.push((selection, output));
        }
        self
    }

    /// The outputs of both configurations.
    pub fn and(mut self, other: LogConfig) -> Self {
        self.outputs.extend(other.outputs);
        self
    }

    /// Parses `SELECTORS[:OUTPUT]` (HotSpot's `-Xlog:` argument without
    /// decorators), e.g. `gc*=info,safepoint=debug` (to standard output)
    /// or `gc*:file=gc.log`; an empty string is no output. The grammar is
    /// in the [module docs](crate::log).
    ///
    /// # Errors
    /// [`LogSpecError`]: a bad selector or output, or a file that cannot be
    /// created.
    pub fn parse(spec: &str) -> Result<Self, LogSpecError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Ok(LogConfig::new());
        }
        let (selectors, output) = match spec.split_once(':') {
            Some((s, o)) => (s, Some(o.trim())),
            None => (spec, None),
        };
        let selection = LogSelection::parse(selectors).map_err(LogSpecError::Selector)?;
        let output = match output {
            None | Some("stdout") => LogOutput::Stdout,
            Some("stderr") => LogOutput::Stderr,
            Some(o) => match o.strip_prefix("file=") {
                Some(path) if !path.is_empty() => {
                    LogOutput::file(path).map_err(|e| LogSpecError::File(path.into(), e))?
                }
                _ => return Err(LogSpecError::UnknownOutput(o.to_string())),
            },
        };
        Ok(LogConfig::new().output(selection, output))
    }

    /// Whether no line goes anywhere.
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }
}
