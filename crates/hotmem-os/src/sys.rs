//! The system calls, each wrapped once. Everything unsafe about mappings is here.

use crate::{Address, MemRange};
use rustix::fd::BorrowedFd;
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};

/// Maps `len` bytes of inaccessible, unbacked address space where the kernel
/// chooses. Cannot disturb any existing mapping.
pub(crate) fn reserve(len: usize) -> Result<Address, Errno> {
    // SAFETY: a null hint without MAP_FIXED makes the kernel choose an unused
    // range, so no existing mapping (and no Rust object) is replaced.
    let ptr = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )
    }?;
    Ok(Address::from_ptr(ptr))
}

/// Replaces `range` with fresh zero-filled read/write anonymous memory that is
/// charged against the system's commit limit.
///
/// # Safety
/// `range` must lie in a reservation the caller owns, and nothing may rely on
/// the current contents of `range` (they are discarded).
pub(crate) unsafe fn commit(range: MemRange) -> Result<(), Errno> {
    // SAFETY: the caller owns `range` and gives up its contents; MAP_FIXED
    // therefore replaces only memory that belongs to the caller.
    unsafe {
        rustix::mm::mmap_anonymous(
            range.start().as_ptr(),
            range.len(),
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE | MapFlags::FIXED,
        )
    }?;
    Ok(())
}

/// Replaces `range` with inaccessible, unbacked address space: the backing is
/// returned to the OS (or the shared mapping dropped) and the address range
/// stays reserved.
///
/// # Safety
/// `range` must lie in a reservation the caller owns, and no one may access
/// `range` until it is committed or mapped again.
pub(crate) unsafe fn uncommit(range: MemRange) -> Result<(), Errno> {
    // SAFETY: the caller owns `range` and no one accesses it; MAP_FIXED
    // replaces only the caller's memory with an inaccessible mapping.
    unsafe {
        rustix::mm::mmap_anonymous(
            range.start().as_ptr(),
            range.len(),
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
        )
    }?;
    Ok(())
}

/// Maps `range.len()` bytes of the file `fd` at `offset` over `range`, shared
/// and read/write.
///
/// # Safety
/// `range` must lie in a reservation the caller owns, and nothing may rely on
/// its current contents.
pub(crate) unsafe fn map_shared(
    range: MemRange,
    fd: BorrowedFd<'_>,
    offset: u64,
) -> Result<(), Errno> {
    // SAFETY: as for `commit`: MAP_FIXED replaces only memory the caller owns
    // and has given up.
    unsafe {
        rustix::mm::mmap(
            range.start().as_ptr(),
            range.len(),
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED | MapFlags::FIXED,
            fd,
            offset,
        )
    }?;
    Ok(())
}

/// Unmaps `range`, giving the address space back.
///
/// # Safety
/// The caller owns every mapping in `range` and no one uses it afterwards.
pub(crate) unsafe fn release(range: MemRange) -> Result<(), Errno> {
    #[cfg(test)]
    if let Some(errno) = fail_next_release::take() {
        return Err(errno);
    }
    // SAFETY: the caller owns the range and will not touch it again.
    unsafe { rustix::mm::munmap(range.start().as_ptr(), range.len()) }
}

/// Fault injection for the unit tests: makes the next [`release`] on this
/// thread fail without unmapping anything, as a `munmap` refused by the
/// kernel does (`ENOMEM` at the mapping count limit, `EPERM` on a sealed
/// mapping), so that the recovery path is tested deterministically.
#[cfg(test)]
pub(crate) mod fail_next_release {
    use rustix::io::Errno;
    use std::cell::Cell;

    thread_local! {
        static NEXT: Cell<Option<Errno>> = const { Cell::new(None) };
    }

    /// The next `release` on this thread fails with `errno`.
    pub(crate) fn set(errno: Errno) {
        NEXT.with(|n| n.set(Some(errno)));
    }

    pub(super) fn take() -> Option<Errno> {
        NEXT.with(Cell::take)
    }
}
