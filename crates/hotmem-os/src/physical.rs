//! `PhysicalMemory`: memfd-backed memory that can be mapped anywhere, and at
//! several addresses at once.

use crate::error::{OsError, OsOp, PhysicalError};
use crate::page_size;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FallocateFlags, MemfdFlags};
use std::fmt;

/// Physical memory for heaps that remap instead of copying: a memfd of a
/// fixed capacity whose page-aligned segments are committed with
/// `fallocate`, uncommitted by punching holes, and mapped into
/// [`Reservation`](crate::Reservation)s with
/// [`Reservation::map`](crate::Reservation::map).
pub struct PhysicalMemory {
    fd: OwnedFd,
    capacity: usize,
}

impl fmt::Debug for PhysicalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhysicalMemory")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl PhysicalMemory {
    pub(crate) fn create(capacity: usize) -> Result<Self, PhysicalError> {
        if capacity == 0 {
            return Err(PhysicalError::ZeroSize);
        }
        if capacity % page_size() != 0 {
            return Err(PhysicalError::Misaligned {
                offset: 0,
                len: capacity,
            });
        }
        let fd = rustix::fs::memfd_create("hotmem", MemfdFlags::CLOEXEC)
            .map_err(|e| PhysicalError::Os(OsError::new(OsOp::CreatePhysical, e)))?;
        rustix::fs::ftruncate(&fd, capacity as u64)
            .map_err(|e| PhysicalError::Os(OsError::new(OsOp::CreatePhysical, e)))?;
        Ok(PhysicalMemory { fd, capacity })
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Checks that a segment is non-empty, page aligned and inside.
    pub(crate) fn check(&self, offset: usize, len: usize) -> Result<(), PhysicalError> {
        if len == 0 {
            return Err(PhysicalError::ZeroSize);
        }
        let page = page_size();
        if offset % page != 0 || len % page != 0 {
            return Err(PhysicalError::Misaligned { offset, len });
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.capacity => Ok(()),
            _ => Err(PhysicalError::OutOfRange {
                offset,
                len,
                capacity: self.capacity,
            }),
        }
    }

    /// Allocates the memory of a segment (`fallocate`), so that mapping and
    /// touching it cannot fail later for lack of memory.
    ///
    /// # Errors
    /// A misaligned or out-of-capacity segment, or the OS error (`ENOSPC`
    /// when the system is out of memory). Nothing changes on error.
    pub fn commit(&self, offset: usize, len: usize) -> Result<(), PhysicalError> {
        self.check(offset, len)?;
        rustix::fs::fallocate(&self.fd, FallocateFlags::empty(), offset as u64, len as u64)
            .map_err(|e| PhysicalError::Os(OsError::new(OsOp::CommitPhysical, e)))
    }

    /// Returns a segment's memory to the OS (punches a hole): every mapping of
    /// it reads zero afterwards and resident memory drops.
    ///
    /// # Errors
    /// As [`PhysicalMemory::commit`].
    pub fn uncommit(&self, offset: usize, len: usize) -> Result<(), PhysicalError> {
        self.check(offset, len)?;
        rustix::fs::fallocate(
            &self.fd,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset as u64,
            len as u64,
        )
        .map_err(|e| PhysicalError::Os(OsError::new(OsOp::UncommitPhysical, e)))
    }

    /// Bytes of memory the memfd holds right now (as the kernel counts them).
    ///
    /// # Errors
    /// The OS error of `fstat`.
    pub fn committed_bytes(&self) -> Result<usize, OsError> {
        let st = rustix::fs::fstat(&self.fd).map_err(|e| OsError::new(OsOp::Stat, e))?;
        // Saturating: a count the address space cannot hold is no count.
        let blocks = usize::try_from(st.st_blocks).unwrap_or(usize::MAX);
        Ok(blocks.saturating_mul(512))
    }
}
