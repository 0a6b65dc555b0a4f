//! Typed errors. A failed call changes nothing and hands back what it took.

use crate::guard::SafepointTicket;
use crate::ids::{MutatorId, SafepointId};
use std::fmt;

/// Why a thread could not register.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// The calling thread is already registered with this coordinator (two
    /// handles on one thread could disagree about its state and hang a
    /// safepoint).
    AlreadyRegistered(MutatorId),
    /// The calling thread owns the safepoint in progress: registering would
    /// stop it in its own safepoint. End the safepoint first.
    OwnsSafepoint(Option<SafepointId>),
    /// The calling thread is running a handshake operation.
    InsideHandshake,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::AlreadyRegistered(id) => {
                write!(f, "this thread is already registered as {id}")
            }
            RegisterError::OwnsSafepoint(Some(id)) => write!(
                f,
                "this thread owns safepoint {id}: registering would stop it in its own safepoint"
            ),
            RegisterError::OwnsSafepoint(None) => {
                write!(f, "this thread is beginning a safepoint")
            }
            RegisterError::InsideHandshake => {
                write!(f, "a handshake operation cannot register its thread")
            }
        }
    }
}

impl std::error::Error for RegisterError {}

/// Why a safepoint could not begin.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BeginError {
    /// The calling thread already owns the safepoint in progress: safepoints
    /// do not nest.
    Nested {
        /// The safepoint in progress (`None` if it is still synchronizing).
        current: Option<SafepointId>,
    },
    /// The calling thread is a registered mutator of this coordinator. It
    /// could return to managed code while the safepoint lives and wait for
    /// itself; begin through [`MutatorHandle::safepoint`] or
    /// [`SafeRegion::safepoint`], which keep it safe until the end.
    ///
    /// [`MutatorHandle::safepoint`]: crate::MutatorHandle::safepoint
    /// [`SafeRegion::safepoint`]: crate::SafeRegion::safepoint
    CallerIsMutator(MutatorId),
    /// The calling thread is running a handshake operation: the safepoint
    /// would wait for that handshake to finish.
    InsideHandshake,
    /// The safepoint counter is used up (after 2^62 safepoints).
    Exhausted,
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
            BeginError::CallerIsMutator(id) => write!(
                f,
                "the caller is {id}: begin through its MutatorHandle or SafeRegion"
            ),
            BeginError::InsideHandshake => write!(
                f,
                "a handshake operation cannot begin a safepoint: it would wait for its own handshake"
            ),
            BeginError::Exhausted => write!(f, "the safepoint counter is used up"),
        }
    }
}

impl std::error::Error for BeginError {}

/// Why a safepoint could not end. The ticket comes back, still owning its
/// safepoint.
#[non_exhaustive]
pub enum EndError {
    /// The ticket belongs to another coordinator.
    ForeignTicket(SafepointTicket),
}

impl EndError {
    /// The ticket that was given, still owning its safepoint.
    pub fn into_ticket(self) -> SafepointTicket {
        match self {
            EndError::ForeignTicket(ticket) => ticket,
        }
    }
}

impl fmt::Debug for EndError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndError::ForeignTicket(t) => f.debug_tuple("ForeignTicket").field(t).finish(),
        }
    }
}

impl fmt::Display for EndError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndError::ForeignTicket(t) => write!(
                f,
                "the ticket of safepoint {} belongs to another coordinator",
                t.id()
            ),
        }
    }
}

impl std::error::Error for EndError {}

/// Why a handshake failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The calling thread is running a handshake operation: handshakes do
    /// not nest.
    InsideHandshake,
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
            HandshakeError::InsideHandshake => {
                write!(f, "a handshake operation cannot request handshakes")
            }
            HandshakeError::OperationPanicked(id) => {
                write!(f, "the handshake operation panicked on {id}")
            }
        }
    }
}

impl std::error::Error for HandshakeError {}
