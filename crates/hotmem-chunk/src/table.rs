//! `LazyTable`: a per-unit side table of a space that costs nothing until
//! used. Its address space is reserved through the same
//! [`hotmem_os::Memory`] as the space (tagged [`TABLE_TAG`], so a tracker
//! sees it) and committed from the front, in steps of [`TABLE_STEP`] bytes,
//! as the carved part of the space grows. Creating a 1 TiB space therefore
//! costs three reservations, not gigabytes of zeroed memory.
//!
//! Fresh memory reads zero and zero means "untouched" in every table, so
//! growing a table needs no initialisation. Only the committed prefix is
//! ever reachable: [`LazyTable::as_slice`] covers exactly that, so an index
//! beyond it panics instead of touching inaccessible memory.

use crate::sync::{CounterU32, CounterUsize, LeafMutex, Ordering};
use hotmem_os::{CommitError, MemRange, MemTag, Memory, Reservation, ReserveError, page_size};
use std::marker::PhantomData;
use std::mem::size_of;

/// The tag of every side table's reservation: the runtime's own
/// bookkeeping, apart from the class and non-class spaces themselves.
pub(crate) const TABLE_TAG: MemTag = MemTag::INTERNAL;

/// Bytes committed at a time (at least a page).
pub(crate) const TABLE_STEP: usize = 64 << 10;

/// Types whose all-zero bit pattern is a valid value.
///
/// # Safety
/// Implement only for types for which every byte being zero is a valid,
/// initialised value (plain integers, arrays of them, std atomics of them).
pub(crate) unsafe trait Zeroed: Sized {}

// SAFETY: any bit pattern, zero included, is a valid `u8`.
unsafe impl Zeroed for u8 {}
// SAFETY: any bit pattern, zero included, is a valid `[u32; 3]`.
unsafe impl Zeroed for [u32; 3] {}
// SAFETY: `AtomicU32` has the same in-memory representation as `u32`
// (documented by std), so zero bytes are `AtomicU32::new(0)`.
unsafe impl Zeroed for CounterU32 {}

/// A table of `T`, one per index, reserved for `len` entries and committed
/// from the front as needed.
pub(crate) struct LazyTable<T> {
    reservation: Reservation,
    /// Entries reserved.
    len: usize,
    /// Entries accessible: written only under `grow`, read without it.
    committed: CounterUsize,
    /// Bytes committed, serialising growth. Growth happens under the space
    /// lock anyway; this lock makes the table sound on its own.
    grow: LeafMutex<usize>,
    _marker: PhantomData<T>,
}

impl<T: Zeroed> LazyTable<T> {
    /// Reserves room for `len` entries (at least one), nothing committed.
    pub(crate) fn new(memory: &Memory, len: usize) -> Result<LazyTable<T>, ReserveError> {
        let bytes = len
            .max(1)
            .checked_mul(size_of::<T>())
            .and_then(hotmem_os::round_to_pages)
            .ok_or(ReserveError::ZeroSize)?;
        let reservation = memory.reserve(bytes, TABLE_TAG)?;
        debug_assert!(reservation.start().is_aligned(std::mem::align_of::<T>()));
        Ok(LazyTable {
            reservation,
            len,
            committed: CounterUsize::new(0),
            grow: LeafMutex::new(0),
            _marker: PhantomData,
        })
    }

    /// Entries reserved.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The reserved range.
    pub(crate) fn range(&self) -> MemRange {
        self.reservation.range()
    }

    /// Bytes committed.
    pub(crate) fn committed_bytes(&self) -> usize {
        *self.grow.lock()
    }

    /// Entries accessible now.
    #[inline]
    pub(crate) fn committed_len(&self) -> usize {
        self.committed.load(Ordering::Acquire)
    }

    /// The accessible entries.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        let n = self.committed_len();
        // SAFETY: the first `n` entries lie in the committed front of our
        // reservation (the count is published with Release after the
        // commit), which stays committed, readable and writable for as long
        // as `self` lives; the start is page aligned, so aligned for `T`;
        // fresh memory is zero, a valid `T` (`T: Zeroed`), and later writes
        // only store `T`s. Mutable access needs `&mut self`.
        unsafe { std::slice::from_raw_parts(self.reservation.start().as_ptr::<T>(), n) }
    }

    /// The first `n` entries, without reading the published length.
    ///
    /// # Safety
    /// `n` is at most a length this table published to the caller's thread
    /// ([`committed_len`](Self::committed_len) returned it, or more, earlier
    /// on this thread or before a lock handed the table over): entries never
    /// stop being accessible, so those stay valid.
    #[inline]
    pub(crate) unsafe fn prefix(&self, n: usize) -> &[T] {
        debug_assert!(n <= self.committed_len());
        // SAFETY: `n` entries are accessible by the caller's contract; the
        // rest is as in `as_slice`.
        unsafe { std::slice::from_raw_parts(self.reservation.start().as_ptr::<T>(), n) }
    }

    /// [`prefix`](Self::prefix), mutably.
    ///
    /// # Safety
    /// As for [`prefix`](Self::prefix).
    #[inline]
    pub(crate) unsafe fn prefix_mut(&mut self, n: usize) -> &mut [T] {
        debug_assert!(n <= self.committed_len());
        // SAFETY: as in `prefix`; `&mut self` excludes any other reference
        // into the table.
        unsafe { std::slice::from_raw_parts_mut(self.reservation.start().as_ptr::<T>(), n) }
    }

    /// Makes at least the first `entries` entries (at most `len`)
    /// accessible, committing whole steps. Entries already accessible keep
    /// their values. On failure nothing changes.
    pub(crate) fn grow(&self, entries: usize) -> Result<(), CommitError> {
        let entries = entries.min(self.len);
        if entries <= self.committed_len() {
            return Ok(());
        }
        let mut committed = self.grow.lock();
        let want = entries * size_of::<T>(); // <= reserved bytes: no overflow
        if want > *committed {
            let step = TABLE_STEP.max(page_size());
            let end = want
                .checked_next_multiple_of(step)
                .unwrap_or(usize::MAX)
                .min(self.reservation.len());
            let range = self.reservation.subrange(*committed, end - *committed)?;
            // Only the uncommitted tail is committed: committing discards
            // contents, and the front holds live entries.
            self.reservation.commit(range)?;
            *committed = end;
            self.committed
                .store((end / size_of::<T>()).min(self.len), Ordering::Release);
        }
        Ok(())
    }
}

/// A [`LazyTable`] with one owner that reaches it only through the space
/// lock (the chunk headers, the commit map): the owner keeps the accessible
/// length as of its last `grow`, so that reading an entry takes no atomic
/// load of the published length.
pub(crate) struct OwnedTable<T> {
    table: LazyTable<T>,
    /// What the table's `committed_len` said after our last `grow`: only we
    /// grow it, so it is the published length.
    accessible: usize,
}

impl<T: Zeroed> OwnedTable<T> {
    /// As [`LazyTable::new`].
    pub(crate) fn new(memory: &Memory, len: usize) -> Result<OwnedTable<T>, ReserveError> {
        Ok(OwnedTable {
            table: LazyTable::new(memory, len)?,
            accessible: 0,
        })
    }

    /// The table (its reservation, its committed bytes).
    pub(crate) fn table(&self) -> &LazyTable<T> {
        &self.table
    }

    /// As [`LazyTable::grow`].
    pub(crate) fn grow(&mut self, entries: usize) -> Result<(), CommitError> {
        let grown = self.table.grow(entries);
        self.accessible = self.table.committed_len();
        grown
    }

    /// Entries accessible.
    #[inline]
    pub(crate) fn accessible(&self) -> usize {
        self.accessible
    }

    /// The accessible entries.
    #[inline]
    pub(crate) fn entries(&self) -> &[T] {
        // SAFETY: `accessible` is a length the table returned to this owner
        // (in `grow`), and whoever hands the owner to another thread (the
        // space lock) orders that call before this one.
        unsafe { self.table.prefix(self.accessible) }
    }

    /// The accessible entries, mutably.
    #[inline]
    pub(crate) fn entries_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `entries`.
        unsafe { self.table.prefix_mut(self.accessible) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotmem_os::procfs;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri"
    )]
    fn grows_from_the_front_and_keeps_entries() {
        let t: LazyTable<[u32; 3]> = LazyTable::new(&Memory::new(), 100_000).unwrap();
        assert_eq!(t.as_slice().len(), 0);
        assert_eq!(procfs::resident_bytes(t.range()).unwrap(), 0);
        t.grow(10).unwrap();
        let n = t.committed_len();
        assert!((10..100_000).contains(&n));
        assert_eq!(t.committed_bytes(), TABLE_STEP.max(page_size()));
        let mut t = t;
        // SAFETY: the grow above published at least 10 entries to this
        // thread.
        let entries = unsafe { t.prefix_mut(10) };
        entries[9] = [1, 2, 3];
        t.grow(100_000).unwrap();
        assert_eq!(t.committed_len(), 100_000);
        assert_eq!(t.as_slice()[9], [1, 2, 3]);
        assert!(t.as_slice()[10..].iter().all(|e| *e == [0; 3]));
        // Beyond the reservation: capped, not an error.
        t.grow(usize::MAX).unwrap();
        assert_eq!(t.committed_len(), 100_000);
    }
}
