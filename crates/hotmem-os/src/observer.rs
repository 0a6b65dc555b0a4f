//! The hook a tracker attaches to see every virtual memory operation.

use crate::{MemRange, MemTag};

/// One virtual memory operation, reported to a [`MemoryObserver`].
///
/// Applying the events in the order they arrive gives exactly what the
/// kernel has: operations on one reservation are reported in the order the
/// kernel applied them (see [`Reservation`](crate::Reservation)), and a
/// release that the kernel refused is followed by events that restore it
/// (see [`MemoryEvent::Release`]).
///
/// Non-exhaustive: a later version may report more kinds of operation, so
/// an observer matches with a wildcard arm:
///
/// ```
/// # use hotmem_os::MemoryEvent;
/// fn kind(e: &MemoryEvent) -> &'static str {
///     match e {
///         MemoryEvent::Reserve { .. } => "reserve",
///         MemoryEvent::Commit { .. } => "commit",
///         MemoryEvent::Uncommit { .. } => "uncommit",
///         MemoryEvent::Release { .. } => "release",
///         _ => "other",
///     }
/// }
/// ```
///
/// and without one, does not compile:
///
/// ```compile_fail,E0004
/// # use hotmem_os::MemoryEvent;
/// fn kind(e: &MemoryEvent) -> &'static str {
///     match e {
///         MemoryEvent::Reserve { .. } => "reserve",
///         MemoryEvent::Commit { .. } => "commit",
///         MemoryEvent::Uncommit { .. } => "uncommit",
///         MemoryEvent::Release { .. } => "release",
///     }
/// }
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryEvent {
    /// Address space was reserved (no backing yet). Reported after it succeeded.
    Reserve {
        /// The reserved range.
        range: MemRange,
        /// The reservation's tag.
        tag: MemTag,
    },
    /// Part of a reservation was made accessible and backed: anonymous commit,
    /// or physical memory mapped into it. Reported after it succeeded.
    Commit {
        /// The committed range.
        range: MemRange,
        /// The reservation's tag.
        tag: MemTag,
    },
    /// Backing was returned and the range made inaccessible again (the
    /// reservation stays). Reported after it succeeded.
    Uncommit {
        /// The uncommitted range.
        range: MemRange,
        /// The reservation's tag.
        tag: MemTag,
    },
    /// A reservation was given back to the OS. Reported *before* the unmap, so
    /// that a tracker never sees the address reused before it is released.
    ///
    /// If the `munmap` then fails (the kernel keeps the mapping), the
    /// release is undone by the events that describe what the kernel still
    /// has: a [`MemoryEvent::Reserve`] of the range (of each run of it still
    /// mapped) with the same tag, then a [`MemoryEvent::Commit`] of each
    /// part that is accessible. The address space cannot be reused in
    /// between, since it was never unmapped.
    Release {
        /// The released range.
        range: MemRange,
        /// The reservation's tag.
        tag: MemTag,
    },
}

impl MemoryEvent {
    /// The range the operation touched.
    pub const fn range(&self) -> MemRange {
        match *self {
            MemoryEvent::Reserve { range, .. }
            | MemoryEvent::Commit { range, .. }
            | MemoryEvent::Uncommit { range, .. }
            | MemoryEvent::Release { range, .. } => range,
        }
    }

    /// The tag of the reservation the operation touched.
    pub const fn tag(&self) -> MemTag {
        match *self {
            MemoryEvent::Reserve { tag, .. }
            | MemoryEvent::Commit { tag, .. }
            | MemoryEvent::Uncommit { tag, .. }
            | MemoryEvent::Release { tag, .. } => tag,
        }
    }
}

/// Sees every reserve, commit, uncommit and release made through a
/// [`Memory`](crate::Memory) it is attached to.
///
/// Called on the thread that made the operation, possibly from many threads
/// at once. Commit, uncommit, map and unmap are reported while the
/// reservation's operation lock is held, so that the observer sees the
/// operations of one reservation in the kernel's order; the observer should
/// therefore be quick, and a commit, uncommit, map or unmap that it makes
/// from such a notification fails with
/// [`CommitError::Reentrant`](crate::CommitError::Reentrant) (it could
/// otherwise deadlock). Reserving and releasing from an observer work.
pub trait MemoryObserver: Send + Sync {
    /// One operation happened (or, for a release, is about to).
    fn observe(&self, event: &MemoryEvent);
}
