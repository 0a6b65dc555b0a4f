//! Running the interpreter on one file, with a deadline: a test that hangs
//! is killed and reported, never waited on forever.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Output kept per stream; the rest is read and dropped, so that a runaway
/// program cannot exhaust memory before its deadline.
const OUTPUT_LIMIT: usize = 16 << 20;

/// How long the pipes may stay open once the interpreter has ended.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The program that runs tests, and the arguments that go before the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    /// The executable.
    pub program: PathBuf,
    /// Arguments placed before the test file's path (e.g. `--gc-stress`).
    pub args: Vec<OsString>,
}

impl Interpreter {
    /// `program` with no extra arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Adds an argument that goes before the test file's path.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }
}

/// How the interpreter ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
    /// It ran past the deadline and was killed.
    TimedOut(Duration),
}

/// What one run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutput {
    /// How it ended.
    pub termination: Termination,
    /// stdout (invalid UTF-8 replaced).
    pub stdout: String,
    /// stderr (invalid UTF-8 replaced).
    pub stderr: String,
}

/// Runs `interpreter` on `file`, with stdin empty.
///
/// # Errors
///
/// The I/O error of starting the process or waiting for it.
pub fn run_file(
    interpreter: &Interpreter,
    file: &Path,
    timeout: Duration,
) -> io::Result<RunOutput> {
    let mut child = Command::new(&interpreter.program)
        .args(&interpreter.args)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().map(spawn_reader);
    let stderr = child.stderr.take().map(spawn_reader);
    let termination = wait_with_deadline(&mut child, timeout)?;
    Ok(RunOutput {
        termination,
        stdout: join_reader(stdout),
        stderr: join_reader(stderr),
    })
}

/// Reads a stream to its end on a thread of its own; the result comes
/// through the returned channel.
fn spawn_reader(mut stream: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buffer[..n.min(room)]);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The receiver may have given up waiting.
        let _ = sender.send(kept);
    });
    receiver
}

/// The stream's text once the process has ended. A grandchild that kept
/// the pipe open would keep the reader waiting: after [`DRAIN_GRACE`] the
/// reader is abandoned and the text is lost.
fn join_reader(reader: Option<mpsc::Receiver<Vec<u8>>>) -> String {
    let bytes = reader
        .and_then(|reader| reader.recv_timeout(DRAIN_GRACE).ok())
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Polls the child until it exits or the deadline passes (then kills it).
fn wait_with_deadline(child: &mut Child, timeout: Duration) -> io::Result<Termination> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(termination(status));
        }
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            // It may exit between the poll and the kill; either way wait.
            let _ = child.kill();
            child.wait()?;
            return Ok(Termination::TimedOut(elapsed));
        }
        thread::sleep(pause.min(timeout - elapsed));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

fn termination(status: ExitStatus) -> Termination {
    if let Some(code) = status.code() {
        return Termination::Exited(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Termination::Signaled(signal);
        }
    }
    Termination::Exited(-1)
}
