//! `Reservation`: a range of address space owned by its holder.

use crate::error::{CommitError, MapError, OsError, OsOp, RangeError};
use crate::{Address, MemRange, MemTag, Memory, MemoryEvent, PhysicalMemory};
use crate::{page_size, sys};
use std::fmt;

/// A reserved range of address space. Parts of it are made usable with
/// [`commit`](Reservation::commit) (anonymous memory) or
/// [`map`](Reservation::map) (physical memory from a memfd), and made
/// unusable again with [`uncommit`](Reservation::uncommit) /
/// [`unmap`](Reservation::unmap). Dropping it releases the whole range.
///
/// Releasing twice cannot happen: [`release`](Reservation::release) consumes
/// the reservation.
///
/// ```compile_fail
/// # use hotmem_os::{Memory, MemTag, page_size};
/// let r = Memory::new().reserve(page_size(), MemTag::TEST).unwrap();
/// r.release().unwrap();
/// r.release().unwrap(); // error: use of moved value
/// ```
///
/// Reading or writing the memory goes through raw pointers
/// ([`MemRange::start`] + [`Address::as_ptr`]); that is sound while the bytes
/// are committed or mapped and stays the caller's responsibility.
pub struct Reservation {
    memory: Memory,
    range: MemRange,
    tag: MemTag,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("range", &self.range)
            .field("tag", &self.tag)
            .finish()
    }
}

impl Reservation {
    pub(crate) fn new(memory: Memory, range: MemRange, tag: MemTag) -> Self {
        Reservation { memory, range, tag }
    }

    /// The reserved range.
    #[inline]
    pub fn range(&self) -> MemRange {
        self.range
    }

    /// The first address.
    #[inline]
    pub fn start(&self) -> Address {
        self.range.start()
    }

    /// The size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Always false: reservations are never empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The tag given at reservation.
    #[inline]
    pub fn tag(&self) -> MemTag {
        self.tag
    }

    /// The memory this reservation was made through.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Checks that `range` is non-empty, page aligned and inside.
    fn check(&self, range: MemRange) -> Result<(), RangeError> {
        if range.is_empty() {
            return Err(RangeError::Empty);
        }
        if !range.is_aligned(page_size()) {
            return Err(RangeError::Misaligned {
                range,
                align: page_size(),
            });
        }
        if !self.range.contains_range(range) {
            return Err(RangeError::OutOfRange {
                range,
                within: self.range,
            });
        }
        Ok(())
    }

    /// The sub-range at `offset` of `len` bytes, checked like every operation.
    ///
    /// # Errors
    /// [`RangeError`] if it is empty, misaligned or not inside.
    pub fn subrange(&self, offset: usize, len: usize) -> Result<MemRange, RangeError> {
        let r = self.range.subrange(offset, len)?;
        self.check(r)?;
        Ok(r)
    }

    /// Makes `range` readable and writable, backed by zero-filled anonymous
    /// memory charged against the commit limit. Committing a range that is
    /// already committed discards its contents (it reads zero again).
    ///
    /// # Errors
    /// [`CommitError::Range`] if `range` is empty, not page aligned or not
    /// inside the reservation; [`CommitError::Os`] if the kernel refuses
    /// (typically `ENOMEM`). Nothing changes in either case.
    pub fn commit(&self, range: MemRange) -> Result<(), CommitError> {
        self.check(range)?;
        // SAFETY: `check` put `range` inside this reservation, which we own;
        // the caller asked for fresh memory there.
        unsafe { sys::commit(range) }
            .map_err(|e| CommitError::Os(OsError::new(OsOp::Commit, e)))?;
        self.memory.notify(MemoryEvent::Commit {
            range,
            tag: self.tag,
        });
        Ok(())
    }

    /// Returns the backing of `range` to the OS and makes it inaccessible;
    /// the address space stays reserved. Resident memory drops at once, and a
    /// later commit reads zero.
    ///
    /// # Errors
    /// As [`Reservation::commit`]. Nothing changes on error.
    pub fn uncommit(&self, range: MemRange) -> Result<(), CommitError> {
        self.check(range)?;
        // SAFETY: `range` is inside our reservation; the caller no longer uses it.
        unsafe { sys::uncommit(range) }
            .map_err(|e| CommitError::Os(OsError::new(OsOp::Uncommit, e)))?;
        self.memory.notify(MemoryEvent::Uncommit {
            range,
            tag: self.tag,
        });
        Ok(())
    }

    /// Maps `len` bytes of `physical` starting at `offset` at address `at`,
    /// readable and writable and shared: a write through one mapping of a
    /// segment is seen through every other. Returns the mapped range.
    ///
    /// Only the mapping is made here; the physical memory is allocated by
    /// [`PhysicalMemory::commit`] (or on first touch).
    ///
    /// # Errors
    /// [`MapError::Range`] for a bad target range, [`MapError::Physical`] for a
    /// segment that is misaligned or beyond the capacity, [`MapError::Os`].
    pub fn map(
        &self,
        at: Address,
        physical: &PhysicalMemory,
        offset: usize,
        len: usize,
    ) -> Result<MemRange, MapError> {
        let range = MemRange::new(at, len).map_err(MapError::Range)?;
        self.check(range).map_err(MapError::Range)?;
        physical.check(offset, len).map_err(MapError::Physical)?;
        // SAFETY: `range` is inside our reservation; the caller gives up its
        // previous contents; the segment is inside the memfd.
        unsafe { sys::map_shared(range, physical.fd(), offset as u64) }
            .map_err(|e| MapError::Os(OsError::new(OsOp::Map, e)))?;
        self.memory.notify(MemoryEvent::Commit {
            range,
            tag: self.tag,
        });
        Ok(range)
    }

    /// Removes a mapping made by [`Reservation::map`] (or any commit) from
    /// `range`, leaving the range reserved and inaccessible. The physical
    /// memory itself stays committed in its [`PhysicalMemory`].
    ///
    /// # Errors
    /// As [`Reservation::uncommit`].
    pub fn unmap(&self, range: MemRange) -> Result<(), CommitError> {
        self.uncommit(range)
    }

    /// Gives the whole range back to the OS.
    ///
    /// # Errors
    /// [`OsError`] if `munmap` fails; the range is then still reserved and
    /// this value is dropped without retrying.
    pub fn release(mut self) -> Result<(), OsError> {
        let result = self.release_now();
        // Nothing left for Drop to do.
        self.range = MemRange::default();
        result
    }

    fn release_now(&mut self) -> Result<(), OsError> {
        if self.range.is_empty() {
            return Ok(());
        }
        self.memory.notify(MemoryEvent::Release {
            range: self.range,
            tag: self.tag,
        });
        // SAFETY: we own the whole range, and this is its last use: `release`
        // and `drop` both consume the reservation.
        unsafe { sys::release(self.range) }.map_err(|e| OsError::new(OsOp::Release, e))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // A failed munmap of our own range cannot be reported from Drop; the
        // address space stays mapped (nothing unsafe follows from that).
        let _ = self.release_now();
    }
}
