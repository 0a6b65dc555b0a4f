//! The VM's errors: what a Lox program did wrong at run time (with clox's
//! message and stack trace), what the heap could not do, and why a VM
//! could not be made.

use std::fmt;

use thiserror::Error;

/// What the heap could not do.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HeapError {
    /// The live objects and the new one do not fit the heap's maximum.
    #[error("Out of memory: {bytes} bytes requested, the heap holds at most {} MiB.", heap_max >> 20)]
    OutOfMemory {
        /// The size of the object asked for.
        bytes: usize,
        /// The heap's maximum.
        heap_max: usize,
    },
    /// Any other failure of the allocator.
    #[error("Out of memory: {0}")]
    Allocator(hotmem::AllocError),
    /// Metaspace (where code lives) is exhausted.
    #[error("Out of memory: metaspace: {0}")]
    Metaspace(hotmem::chunk::AllocError),
    /// A collection failed: a bug of the VM (its binding answered wrong).
    #[error("internal error: collection failed: {0}")]
    Collector(hotmem::GcError),
    /// The intern table refused: a bug of the VM (a string outside the
    /// heap, or interning from inside a collection).
    #[error("internal error: intern table: {0}")]
    Strings(#[from] hotmem::WeakSetError),
}

/// One line of a runtime error's stack trace: a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFrame {
    /// The source line the frame was executing.
    pub line: u32,
    /// The function's name; `None` for the script.
    pub function: Option<String>,
}

/// A runtime error: clox's message and the stack trace, innermost frame
/// first. `Display` prints both as clox does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    /// The message, e.g. `Undefined variable 'x'.`
    pub message: String,
    /// The frames, innermost first.
    pub trace: Vec<TraceFrame>,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        for frame in &self.trace {
            write!(f, "\n[line {}] in ", frame.line)?;
            match &frame.function {
                Some(name) => write!(f, "{name}()")?,
                None => f.write_str("script")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}

/// Why a [`Vm`](super::Vm) could not be made.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VmError {
    /// The runtime refused its configuration.
    #[error("cannot build the runtime: {0}")]
    Build(#[from] hotmem::BuildError),
    /// The thread could not attach.
    #[error("cannot attach the VM's thread: {0}")]
    Attach(#[from] hotmem::AttachError),
    /// The runtime's collector takes barriers this VM was not compiled
    /// for.
    #[error("{0}")]
    Barriers(#[from] hotmem::BarrierSetError),
    /// A shadow stack could not be made.
    #[error("cannot make a shadow stack: {0}")]
    ShadowStack(#[from] hotmem::ShadowStackError),
    /// The first objects did not fit.
    #[error("{0}")]
    Heap(#[from] HeapError),
    /// The `HOTMEM_LOG` variable does not parse.
    #[error("{0}")]
    Log(String),
}
