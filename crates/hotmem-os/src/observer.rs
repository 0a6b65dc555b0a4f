//! The hook a tracker attaches to see every virtual memory operation.

use crate::{MemRange, MemTag};

/// One virtual memory operation, reported to a [`MemoryObserver`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
/// at once. It must not call back into the same `Memory`.
pub trait MemoryObserver: Send + Sync {
    /// One operation happened (or, for a release, is about to).
    fn observe(&self, event: &MemoryEvent);
}
