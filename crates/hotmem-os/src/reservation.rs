//! `Reservation`: a range of address space owned by its holder.

use crate::error::{CommitError, MapError, OsError, OsOp, PhysicalError, RangeError};
use crate::sync::{Mutex, MutexGuard};
use crate::{Address, MemRange, MemTag, Memory, MemoryEvent, PhysicalMemory};
use crate::{page_size, procfs, sys};
use std::cell::Cell;
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
///
/// # The observer sees what the kernel did, in the kernel's order
/// A `Reservation` is `Sync`: threads sharing one may commit, uncommit, map
/// and unmap its ranges at the same time. Each of those operations holds the
/// reservation's operation lock across the system call *and* the
/// [`MemoryObserver`](crate::MemoryObserver)'s notification, so two
/// operations on overlapping ranges reach the observer in the order the
/// kernel applied them, and a tracker's view of the range equals the
/// kernel's after any interleaving. The lock is per reservation and
/// uncontended unless threads really operate on the same reservation at
/// once; they then serialise on `mmap`, which takes the process's
/// `mmap_lock` for writing anyway. The observer runs under it, so an
/// observer that commits, uncommits, maps or unmaps (any reservation) from
/// its notification gets [`CommitError::Reentrant`] /
/// [`MapError::Reentrant`] instead of a deadlock.
pub struct Reservation {
    memory: Memory,
    range: MemRange,
    tag: MemTag,
    /// Orders commit, uncommit, map and unmap: held across the system call
    /// and the notification (see the type's docs).
    ops: Mutex<()>,
}

thread_local! {
    /// Whether this thread is running an observer's notification of a
    /// commit, uncommit, map or unmap, under that reservation's lock.
    static IN_OBSERVER: Cell<bool> = const { Cell::new(false) };
}

/// An operation called from inside an observer's notification.
struct Reentrant;

impl From<Reentrant> for CommitError {
    fn from(_: Reentrant) -> Self {
        CommitError::Reentrant
    }
}

impl From<Reentrant> for MapError {
    fn from(_: Reentrant) -> Self {
        MapError::Reentrant
    }
}

/// A reservation's operation lock, held for one operation.
struct Ordered<'a> {
    _lock: MutexGuard<'a, ()>,
    memory: &'a Memory,
}

impl Ordered<'_> {
    /// Reports `event` while the lock is held, marking the thread as inside
    /// an observer until the observer returns (or unwinds).
    fn notify(&self, event: MemoryEvent) {
        if self.memory.observer().is_none() {
            return;
        }
        struct Leave;
        impl Drop for Leave {
            fn drop(&mut self) {
                IN_OBSERVER.with(|f| f.set(false));
            }
        }
        IN_OBSERVER.with(|f| f.set(true));
        let _leave = Leave;
        self.memory.notify(event);
    }
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
        Reservation {
            memory,
            range,
            tag,
            ops: Mutex::new(()),
        }
    }

    /// Takes the operation lock, for one system call and its notification.
    /// It guards no data (the kernel holds the state), so a panic under it
    /// (in an observer) leaves nothing inconsistent, and poisoning is
    /// ignored.
    ///
    /// Refused on a thread that is inside an observer's notification of an
    /// operation: the observer would wait for a lock its own thread holds
    /// (this reservation's), or for one held by a thread that waits for its
    /// lock (two reservations whose observers operate on each other).
    #[inline]
    fn lock_ops(&self) -> Result<Ordered<'_>, Reentrant> {
        if IN_OBSERVER.with(Cell::get) {
            return Err(Reentrant);
        }
        Ok(Ordered {
            _lock: self.ops.lock(),
            memory: &self.memory,
        })
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
    /// The range gets a new mapping (`mmap` with `MAP_FIXED`, as
    /// [`uncommit`](Reservation::uncommit) does), and what the kernel keeps
    /// per mapping stays with the old one: a NUMA memory policy set on the
    /// range (`mbind`, e.g. `hotmem_numa::Topology::bind_memory`) is gone,
    /// and new pages follow the thread that touches them first. Bind the
    /// range again after committing it. (Memory [`map`](Reservation::map)ped
    /// from a [`PhysicalMemory`] keeps a policy bound to it: Linux keeps it
    /// with the memfd, across [`PhysicalMemory::uncommit`], commit and
    /// remapping.) This crate knows no NUMA policy to put back, and the
    /// replacement is what returns the commit charge on uncommit.
    ///
    /// # Errors
    /// [`CommitError::Range`] if `range` is empty, not page aligned or not
    /// inside the reservation; [`CommitError::Os`] if the kernel refuses
    /// (typically `ENOMEM`); [`CommitError::Reentrant`] if called from a
    /// [`MemoryObserver`](crate::MemoryObserver)'s notification of a commit,
    /// uncommit, map or unmap. Nothing changes in any case.
    pub fn commit(&self, range: MemRange) -> Result<(), CommitError> {
        self.check(range)?;
        let ordered = self.lock_ops()?;
        // SAFETY: `check` put `range` inside this reservation, which we own;
        // the caller asked for fresh memory there.
        unsafe { sys::commit(range) }
            .map_err(|e| CommitError::Os(OsError::new(OsOp::Commit, e)))?;
        ordered.notify(MemoryEvent::Commit {
            range,
            tag: self.tag,
        });
        Ok(())
    }

    /// Returns the backing of `range` to the OS and makes it inaccessible;
    /// the address space stays reserved. Resident memory drops at once, and a
    /// later commit reads zero and has no NUMA policy (see
    /// [`Reservation::commit`]).
    ///
    /// # Errors
    /// As [`Reservation::commit`]. Nothing changes on error.
    pub fn uncommit(&self, range: MemRange) -> Result<(), CommitError> {
        self.check(range)?;
        let ordered = self.lock_ops()?;
        // SAFETY: `range` is inside our reservation; the caller no longer uses it.
        unsafe { sys::uncommit(range) }
            .map_err(|e| CommitError::Os(OsError::new(OsOp::Uncommit, e)))?;
        ordered.notify(MemoryEvent::Uncommit {
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
    /// segment that is misaligned or beyond the capacity, [`MapError::Os`],
    /// [`MapError::Reentrant`] as for [`Reservation::commit`].
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
        let offset = u64::try_from(offset).map_err(|_| {
            MapError::Physical(PhysicalError::OutOfRange {
                offset,
                len,
                capacity: physical.capacity(),
            })
        })?;
        let ordered = self.lock_ops()?;
        // SAFETY: `range` is inside our reservation; the caller gives up its
        // previous contents; the segment is inside the memfd.
        unsafe { sys::map_shared(range, physical.fd(), offset) }
            .map_err(|e| MapError::Os(OsError::new(OsOp::Map, e)))?;
        ordered.notify(MemoryEvent::Commit {
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
    /// The observer sees [`MemoryEvent::Release`] *before* the `munmap`, so
    /// that it never sees the address space reused by another reservation
    /// before it saw it released. If the `munmap` then fails, the observer
    /// is told what the kernel still has (see [`MemoryEvent::Release`]), so
    /// that its view matches the kernel's again.
    ///
    /// # Errors
    /// [`OsError`] if `munmap` fails; the range is then still mapped (and
    /// reported to the observer again) and this value is dropped without
    /// retrying.
    pub fn release(mut self) -> Result<(), OsError> {
        self.release_now()
    }

    /// Releases the range once: a second call (from `Drop` after `release`)
    /// finds it empty and does nothing.
    fn release_now(&mut self) -> Result<(), OsError> {
        let range = std::mem::take(&mut self.range);
        if range.is_empty() {
            return Ok(());
        }
        let tag = self.tag;
        self.memory.notify(MemoryEvent::Release { range, tag });
        // SAFETY: we own the whole range, and this is its last use: `release`
        // and `drop` both consume the reservation, and `self.range` is empty
        // from now on.
        match unsafe { sys::release(range) } {
            Ok(()) => Ok(()),
            Err(e) => {
                report_still_mapped(&self.memory, range, tag);
                Err(OsError::new(OsOp::Release, e))
            }
        }
    }
}

/// After a failed `munmap` of `range`, whose release the observer has
/// already seen: reports what the kernel still maps there, as
/// [`MemoryEvent::Reserve`] of every run of mapped pages and
/// [`MemoryEvent::Commit`] of every accessible part, so that the observer
/// matches the kernel again. Reads `/proc/self/smaps` (a failed `munmap` is
/// rare and this is its cold path); if that fails too, reports the whole
/// range reserved, which is what Linux keeps after a failed `munmap`.
#[cold]
#[inline(never)]
fn report_still_mapped(memory: &Memory, range: MemRange, tag: MemTag) {
    if memory.observer().is_none() {
        return;
    }
    let Ok(pieces) = procfs::mappings_within(range) else {
        memory.notify(MemoryEvent::Reserve { range, tag });
        return;
    };
    // Maximal runs of mapped address space, then the accessible pieces.
    let mut run: Option<MemRange> = None;
    for p in &pieces {
        run = match run {
            Some(r) if r.end() == p.range.start() => {
                MemRange::from_bounds(r.start(), p.range.end())
            }
            Some(r) => {
                memory.notify(MemoryEvent::Reserve { range: r, tag });
                Some(p.range)
            }
            None => Some(p.range),
        };
    }
    if let Some(r) = run {
        memory.notify(MemoryEvent::Reserve { range: r, tag });
    }
    for p in pieces.iter().filter(|p| p.is_accessible()) {
        memory.notify(MemoryEvent::Commit {
            range: p.range,
            tag,
        });
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // A failed munmap of our own range cannot be returned from Drop; the
        // address space stays mapped (nothing unsafe follows from that) and
        // the observer has been told so by `release_now`.
        let _ = self.release_now();
    }
}
