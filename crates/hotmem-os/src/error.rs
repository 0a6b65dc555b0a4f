//! Typed errors. A failed operation leaves every mapping as it was.

use crate::{Address, MemRange};
use std::fmt;

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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let io = std::io::Error::from_raw_os_error(self.errno);
        write!(f, "{:?} failed: {io}", self.op)
    }
}

impl std::error::Error for OsError {}

impl From<OsError> for std::io::Error {
    fn from(e: OsError) -> Self {
        std::io::Error::from_raw_os_error(e.errno)
    }
}

/// A range argument that cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RangeError {
    /// The range has no bytes.
    Empty,
    /// `start + len` overflows the address space.
    Wraps {
        /// Requested start.
        start: Address,
        /// Requested length.
        len: usize,
    },
    /// Start or length is not a multiple of the required alignment.
    Misaligned {
        /// The range.
        range: MemRange,
        /// The alignment it needed.
        align: usize,
    },
    /// The range is not inside the range it must lie in.
    OutOfRange {
        /// The range.
        range: MemRange,
        /// Where it had to be.
        within: MemRange,
    },
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeError::Empty => f.write_str("empty range"),
            RangeError::Wraps { start, len } => {
                write!(
                    f,
                    "range of {len} bytes at {start} wraps around the address space"
                )
            }
            RangeError::Misaligned { range, align } => {
                write!(f, "range {range} is not aligned to {align} bytes")
            }
            RangeError::OutOfRange { range, within } => {
                write!(f, "range {range} is outside {within}")
            }
        }
    }
}

impl std::error::Error for RangeError {}

/// Why a reservation could not be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReserveError {
    /// Zero bytes were asked for.
    ZeroSize,
    /// The size is not a multiple of the page size.
    Misaligned {
        /// Requested size.
        size: usize,
        /// Page size.
        page_size: usize,
    },
    /// The alignment is not a power of two, or is smaller than a page.
    BadAlignment {
        /// Requested alignment.
        align: usize,
    },
    /// Size plus alignment padding overflows.
    Overflow {
        /// Requested size.
        size: usize,
        /// Requested alignment.
        align: usize,
    },
    /// The OS refused.
    Os(OsError),
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReserveError::ZeroSize => f.write_str("cannot reserve zero bytes"),
            ReserveError::Misaligned { size, page_size } => {
                write!(
                    f,
                    "size {size} is not a multiple of the page size {page_size}"
                )
            }
            ReserveError::BadAlignment { align } => write!(
                f,
                "alignment {align} is not a power of two of at least a page"
            ),
            ReserveError::Overflow { size, align } => {
                write!(f, "size {size} with alignment {align} overflows")
            }
            ReserveError::Os(e) => write!(f, "reserve: {e}"),
        }
    }
}

impl std::error::Error for ReserveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReserveError::Os(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a commit, uncommit or unmap of part of a reservation failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitError {
    /// The range is empty, misaligned or not inside the reservation.
    Range(RangeError),
    /// The OS refused (for a commit, usually: out of memory).
    Os(OsError),
    /// Called from a [`MemoryObserver`](crate::MemoryObserver) while it is
    /// notified of a commit, uncommit, map or unmap: that notification holds
    /// a reservation's operation lock, and waiting for one from inside it
    /// could deadlock. Nothing was done.
    Reentrant,
}

const REENTRANT: &str =
    "a memory observer cannot commit, uncommit, map or unmap while it is notified of one";

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitError::Range(e) => e.fmt(f),
            CommitError::Os(e) => e.fmt(f),
            CommitError::Reentrant => f.write_str(REENTRANT),
        }
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommitError::Range(e) => Some(e),
            CommitError::Os(e) => Some(e),
            CommitError::Reentrant => None,
        }
    }
}

impl From<RangeError> for CommitError {
    fn from(e: RangeError) -> Self {
        CommitError::Range(e)
    }
}

/// Why a segment of physical memory could not be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PhysicalError {
    /// Zero bytes were asked for.
    ZeroSize,
    /// Offset or length is not a multiple of the page size.
    Misaligned {
        /// Requested offset.
        offset: usize,
        /// Requested length.
        len: usize,
    },
    /// The segment does not fit in the physical memory's capacity.
    OutOfRange {
        /// Requested offset.
        offset: usize,
        /// Requested length.
        len: usize,
        /// The capacity.
        capacity: usize,
    },
    /// The OS refused (for a commit, usually: out of memory).
    Os(OsError),
}

impl fmt::Display for PhysicalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysicalError::ZeroSize => f.write_str("empty physical segment"),
            PhysicalError::Misaligned { offset, len } => write!(
                f,
                "physical segment at offset {offset} of {len} bytes is not page aligned"
            ),
            PhysicalError::OutOfRange {
                offset,
                len,
                capacity,
            } => write!(
                f,
                "physical segment at offset {offset} of {len} bytes exceeds capacity {capacity}"
            ),
            PhysicalError::Os(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PhysicalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PhysicalError::Os(e) => Some(e),
            _ => None,
        }
    }
}

/// Why physical memory could not be mapped into a reservation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MapError {
    /// The target range is empty, misaligned or not inside the reservation.
    Range(RangeError),
    /// The physical segment is misaligned or beyond the capacity.
    Physical(PhysicalError),
    /// The OS refused.
    Os(OsError),
    /// Called from a [`MemoryObserver`](crate::MemoryObserver)'s
    /// notification, as [`CommitError::Reentrant`]. Nothing was done.
    Reentrant,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::Range(e) => e.fmt(f),
            MapError::Physical(e) => e.fmt(f),
            MapError::Os(e) => e.fmt(f),
            MapError::Reentrant => f.write_str(REENTRANT),
        }
    }
}

impl std::error::Error for MapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MapError::Range(e) => Some(e),
            MapError::Physical(e) => Some(e),
            MapError::Os(e) => Some(e),
            MapError::Reentrant => None,
        }
    }
}
