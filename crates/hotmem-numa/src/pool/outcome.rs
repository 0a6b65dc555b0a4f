//! What starting a pool and running a phase give back.

use crate::stats::PhaseStats;
use std::any::Any;
use std::fmt;

/// Why a pool could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolError {
    /// A pool needs at least one worker.
    NoWorkers,
    /// The OS would not start a thread.
    Spawn(std::io::Error),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::NoWorkers => f.write_str("a worker pool needs at least one worker"),
            PoolError::Spawn(e) => write!(f, "cannot start a worker thread: {e}"),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Spawn(e) => Some(e),
            PoolError::NoWorkers => None,
        }
    }
}

/// A finished phase: the closure's results (in no particular order) and the
/// statistics.
#[derive(Debug)]
pub struct PhaseOutcome<R> {
    /// One result per item.
    pub results: Vec<R>,
    /// What the phase did.
    pub stats: PhaseStats,
}

/// A phase in which at least one item's closure panicked. Every other item
/// was processed and every worker's binding restored; the results of the
/// items that did not panic are handed back.
pub struct PhasePanicked<R> {
    /// Results of the items that did not panic.
    pub results: Vec<R>,
    /// What the phase did.
    pub stats: PhaseStats,
    /// The first panic's payload (for `std::panic::resume_unwind`).
    pub payload: Box<dyn Any + Send>,
}

impl<R> PhasePanicked<R> {
    /// The panic message, if the payload is a string.
    pub fn message(&self) -> Option<&str> {
        self.payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| self.payload.downcast_ref::<String>().map(String::as_str))
    }
}

impl<R> fmt::Debug for PhasePanicked<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhasePanicked")
            .field("message", &self.message())
            .field("panicked_items", &self.stats.panicked_items())
            .finish_non_exhaustive()
    }
}

impl<R> fmt::Display for PhasePanicked<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} item(s) of phase {} panicked: {}",
            self.stats.panicked_items(),
            self.stats.phase,
            self.message().unwrap_or("(non-string payload)")
        )
    }
}

impl<R> std::error::Error for PhasePanicked<R> {}
