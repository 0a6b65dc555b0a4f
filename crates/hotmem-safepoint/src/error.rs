//! Typed errors. A failed call changes nothing and hands back what it took.

use crate::guard::SafepointTicket;
use crate::ids::{MutatorId, SafepointId};
use std::fmt;
use thiserror::Error;

/// Why a thread could not register.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The calling thread is already registered with this coordinator (two
    /// handles on one thread could disagree about its state and hang a
    /// safepoint).
    #[error("this thread is already registered as {0}")]
    AlreadyRegistered(MutatorId),
    /// The calling thread owns the safepoint in progress: registering would
    /// stop it in its own safepoint. End the safepoint first.
    #[error(fmt = owns_safepoint)]
    OwnsSafepoint(Option<SafepointId>),
    /// The calling thread is running a handshake operation.
    #[error("a handshake operation cannot register its thread")]
    InsideHandshake,
}

/// [`RegisterError::OwnsSafepoint`]'s message, by whether the safepoint
/// has an id yet.
fn owns_safepoint(id: &Option<SafepointId>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match id {
        Some(id) => write!(
            f,
            "this thread owns safepoint {id}: registering would stop it in its own safepoint"
        ),
        None => f.write_str("this thread is beginning a safepoint"),
    }
}

/// Why a safepoint could not begin.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BeginError {
    /// The calling thread already owns the safepoint in progress: safepoints
    /// do not nest.
    #[error(fmt = nested)]
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
    #[error("the caller is {0}: begin through its MutatorHandle or SafeRegion")]
    CallerIsMutator(MutatorId),
    /// The calling thread is running a handshake operation: the safepoint
    /// would wait for that handshake to finish.
    #[error("a handshake operation cannot begin a safepoint: it would wait for its own handshake")]
    InsideHandshake,
    /// The calling thread runs managed code as this mutator of another
    /// coordinator: that coordinator's safepoints would wait for it while
    /// it waits here (two threads doing this on two coordinators wait for
    /// each other forever). Enter a safe region there first.
    #[error(
        "the caller runs managed code as {0} of another coordinator, whose safepoints would wait for it: enter a safe region there first"
    )]
    ManagedElsewhere(MutatorId),
    /// `mutator` runs managed code here and is stopped in safepoint
    /// `owned`, which the calling thread owns on another coordinator: it
    /// reaches no poll here until that safepoint ends. End it first.
    #[error(
        "{mutator} runs managed code here and is stopped in safepoint {owned}, which the caller owns on another coordinator: end that one first"
    )]
    StoppedInCallersSafepoint {
        /// The thread's registration with this coordinator.
        mutator: MutatorId,
        /// The caller's safepoint on the other coordinator.
        owned: SafepointId,
    },
    /// The safepoint counter is used up (after 2^60 safepoints).
    #[error("the safepoint counter is used up")]
    Exhausted,
}

/// [`BeginError::Nested`]'s message, by whether the safepoint in progress
/// has an id yet.
fn nested(current: &Option<SafepointId>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match current {
        Some(id) => write!(
            f,
            "safepoint {id} is in progress and owned by this thread: safepoints do not nest"
        ),
        None => f.write_str("this thread is already beginning a safepoint: safepoints do not nest"),
    }
}

/// Why a safepoint could not end. The ticket comes back, still owning its
/// safepoint.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EndError {
    /// The ticket belongs to another coordinator.
    #[error("the ticket of safepoint {} belongs to another coordinator", .0.id())]
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

/// Why a handshake failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// No thread with this id is registered.
    #[error("no registered mutator {0}")]
    NoSuchMutator(MutatorId),
    /// The calling thread is a registered mutator in managed code and would
    /// block a safepoint while it waits. Use
    /// [`MutatorHandle::handshake`](crate::MutatorHandle::handshake).
    #[error(
        "the caller is {0}, running managed code: request handshakes through its MutatorHandle"
    )]
    CallerIsManaged(MutatorId),
    /// The calling thread runs managed code as this mutator of another
    /// coordinator, whose safepoints would wait for it while it waits
    /// here. Enter a safe region there first.
    #[error(
        "the caller runs managed code as {0} of another coordinator, whose safepoints would wait for it: enter a safe region there first"
    )]
    ManagedElsewhere(MutatorId),
    /// The calling thread owns the safepoint in progress: every thread is
    /// stopped already, so do the work directly.
    #[error(fmt = inside_safepoint)]
    InsideSafepoint(Option<SafepointId>),
    /// The calling thread is running a handshake operation: handshakes do
    /// not nest.
    #[error("a handshake operation cannot request handshakes")]
    InsideHandshake,
    /// The operation panicked on the target thread (the panic continued
    /// there).
    #[error("the handshake operation panicked on {0}")]
    OperationPanicked(MutatorId),
}

/// [`HandshakeError::InsideSafepoint`]'s message, by whether the safepoint
/// has an id yet.
fn inside_safepoint(id: &Option<SafepointId>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match id {
        Some(id) => write!(
            f,
            "the caller owns safepoint {id}: all threads are stopped already"
        ),
        None => f.write_str("the caller is beginning a safepoint"),
    }
}
