//! Typed errors. A failed call changes nothing.

use crate::ids::{MutatorId, SafepointId};
use std::fmt;

/// Why a thread could not register.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// The calling thread is already registered with this coordinator (two
    /// handles on one thread could disagree about its state and hang a
    /// safepoint).
    AlreadyRegistered(MutatorId),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::AlreadyRegistered(id) => {
                write!(f, "this thread is already registered as {id}")
            }
        }
    }
}

impl std::error::Error for RegisterError {}

/// Why a safepoint could not begin.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BeginError {
    /// The calling thread already owns the safepoint in progress: safepoints
    /// do not nest.
    Nested {
        /// The safepoint in progress (`None` if it is still synchronizing).
        current: Option<SafepointId>,
    },
    /// The calling thread is a registered mutator in managed code: the
    /// safepoint would wait for the caller forever. Enter a safe state first
    /// (or use [`MutatorHandle::safepoint`](crate::MutatorHandle::safepoint)).
    CallerIsManaged(MutatorId),
}

impl fmt::Display for BeginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeginError::Nested { current: Some(id) } => {
                write!(
                    f,
                    "safepoint {id} is in progress and owned by this thread: safepoints do not nest"
                )
            }
            BeginError::Nested { current: None } => {
                write!(
                    f,
                    "this thread is already beginning a safepoint: safepoints do not nest"
                )
            }
            BeginError::CallerIsManaged(id) => write!(
                f,
                "the caller is {id}, running managed code: a safepoint would wait for it forever"
            ),
        }
    }
}

impl std::error::Error for BeginError {}

/// Why a safepoint could not end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EndError {
    /// No safepoint is in progress.
    NotInProgress {
        /// The id the caller tried to end.
        given: SafepointId,
    },
    /// Another safepoint than the one given is in progress.
    Mismatch {
        /// The safepoint in progress.
        in_progress: SafepointId,
        /// The id the caller tried to end.
        given: SafepointId,
    },
}

impl fmt::Display for EndError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndError::NotInProgress { given } => {
                write!(
                    f,
                    "cannot end safepoint {given}: no safepoint is in progress"
                )
            }
            EndError::Mismatch { in_progress, given } => write!(
                f,
                "cannot end safepoint {given}: safepoint {in_progress} is in progress"
            ),
        }
    }
}

impl std::error::Error for EndError {}

/// Why a handshake failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HandshakeError {
    /// No thread with this id is registered.
    NoSuchMutator(MutatorId),
    /// The calling thread is a registered mutator in managed code and would
    /// block a safepoint while it waits. Use
    /// [`MutatorHandle::handshake`](crate::MutatorHandle::handshake).
    CallerIsManaged(MutatorId),
    /// The calling thread owns the safepoint in progress: every thread is
    /// stopped already, so do the work directly.
    InsideSafepoint(Option<SafepointId>),
    /// The operation panicked on the target thread (the panic continued
    /// there).
    OperationPanicked(MutatorId),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::NoSuchMutator(id) => write!(f, "no registered mutator {id}"),
            HandshakeError::CallerIsManaged(id) => write!(
                f,
                "the caller is {id}, running managed code: request handshakes through its MutatorHandle"
            ),
            HandshakeError::InsideSafepoint(Some(id)) => {
                write!(
                    f,
                    "the caller owns safepoint {id}: all threads are stopped already"
                )
            }
            HandshakeError::InsideSafepoint(None) => {
                write!(f, "the caller is beginning a safepoint")
            }
            HandshakeError::OperationPanicked(id) => {
                write!(f, "the handshake operation panicked on {id}")
            }
        }
    }
}

impl std::error::Error for HandshakeError {}
