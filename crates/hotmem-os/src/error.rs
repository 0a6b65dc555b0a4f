//! Typed errors. A failed operation leaves every mapping as it was.

use thiserror::Error;

// Defined next to MemRange, whose constructors return it.
pub use crate::address::RangeError;

/// Which system call failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OsOp {
    /// `mmap` reserving address space.
    Reserve,
    /// `mmap` committing anonymous memory.
    Commit,
    /// `mmap` replacing a range with an inaccessible one.
    Uncommit,
    /// `munmap` releasing a reservation.
    Release,
    /// `mmap` of a memfd segment.
    Map,
    /// `memfd_create` or `ftruncate`.
    CreatePhysical,
    /// `fallocate` allocating physical memory.
    CommitPhysical,
    /// `fallocate` punching a hole.
    UncommitPhysical,
    /// `fstat` of a memfd.
    Stat,
}

/// A system call failed; carries the errno.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[error("{op:?} failed: {}", std::io::Error::from_raw_os_error(*.errno))]
pub struct OsError {
    op: OsOp,
    errno: i32,
}

impl OsError {
    pub(crate) fn new(op: OsOp, errno: rustix::io::Errno) -> Self {
        OsError {
            op,
            errno: errno.raw_os_error(),
        }
    }

    /// The operation that failed.
    pub fn op(&self) -> OsOp {
        self.op
    }

    /// The raw errno value.
    pub fn raw_os_error(&self) -> i32 {
        self.errno
    }
}

impl From<OsError> for std::io::Error {
    fn from(e: OsError) -> Self {
        std::io::Error::from_raw_os_error(e.errno)
    }
}

/// Why a reservation could not be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ReserveError {
    /// Zero bytes were asked for.
    #[error("cannot reserve zero bytes")]
    ZeroSize,
    /// The size is not a multiple of the page size.
    #[error("size {size} is not a multiple of the page size {page_size}")]
    Misaligned {
        /// Requested size.
        size: usize,
        /// Page size.
        page_size: usize,
    },
    /// The alignment is not a power of two, or is smaller than a page.
    #[error("alignment {align} is not a power of two of at least a page")]
    BadAlignment {
        /// Requested alignment.
        align: usize,
    },
    /// Size plus alignment padding overflows.
    #[error("size {size} with alignment {align} overflows")]
    Overflow {
        /// Requested size.
        size: usize,
        /// Requested alignment.
        align: usize,
    },
    /// The OS refused.
    #[error("reserve: {0}")]
    Os(#[source] OsError),
}

/// What [`CommitError::Reentrant`] and [`MapError::Reentrant`] say.
const REENTRANT: &str =
    "a memory observer cannot commit, uncommit, map or unmap while it is notified of one";

/// Why a commit, uncommit or unmap of part of a reservation failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The range is empty, misaligned or not inside the reservation.
    #[error("{0}")]
    Range(#[from] RangeError),
    /// The OS refused (for a commit, usually: out of memory).
    #[error("{0}")]
    Os(#[source] OsError),
    /// Called from a [`MemoryObserver`](crate::MemoryObserver) while it is
    /// notified of a commit, uncommit, map or unmap: that notification holds
    /// a reservation's operation lock, and waiting for one from inside it
    /// could deadlock. Nothing was done.
    #[error("{REENTRANT}")]
    Reentrant,
}

/// Why a segment of physical memory could not be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PhysicalError {
    /// Zero bytes were asked for.
    #[error("empty physical segment")]
    ZeroSize,
    /// Offset or length is not a multiple of the page size.
    #[error("physical segment at offset {offset} of {len} bytes is not page aligned")]
    Misaligned {
        /// Requested offset.
        offset: usize,
        /// Requested length.
        len: usize,
    },
    /// The segment does not fit in the physical memory's capacity.
    #[error("physical segment at offset {offset} of {len} bytes exceeds capacity {capacity}")]
    OutOfRange {
        /// Requested offset.
        offset: usize,
        /// Requested length.
        len: usize,
        /// The capacity.
        capacity: usize,
    },
    /// The OS refused (for a commit, usually: out of memory).
    #[error("{0}")]
    Os(#[source] OsError),
}

/// Why physical memory could not be mapped into a reservation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MapError {
    /// The target range is empty, misaligned or not inside the reservation.
    #[error("{0}")]
    Range(#[source] RangeError),
    /// The physical segment is misaligned or beyond the capacity.
    #[error("{0}")]
    Physical(#[source] PhysicalError),
    /// The OS refused.
    #[error("{0}")]
    Os(#[source] OsError),
    /// Called from a [`MemoryObserver`](crate::MemoryObserver)'s
    /// notification, as [`CommitError::Reentrant`]. Nothing was done.
    #[error("{REENTRANT}")]
    Reentrant,
}
