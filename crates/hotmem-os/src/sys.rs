//! The system calls, each wrapped once. Everything unsafe about mappings is here.

use crate::{Address, MemRange};
use rustix::fd::BorrowedFd;
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};

/// Under ThreadSanitizer (`cargo xtask sanitize thread` sets
/// `--cfg hotmem_tsan`), mappings go through the C library's `mmap` and
/// `munmap`, which TSan intercepts: it then forgets what was written to a
/// range that is unmapped or replaced. rustix issues the system calls
/// directly, unseen, so TSan kept the old accesses of a released range and
/// reported the next owner of the same addresses (another test's thread, a
/// later reservation) as racing with them.
#[cfg(hotmem_tsan)]
mod tsan {
    use rustix::io::Errno;
    use std::ffi::{c_int, c_long, c_void};

    // SAFETY: these are the C library's `mmap` and `munmap` with the
    // prototypes of <sys/mman.h> on Linux x86-64/aarch64 (`off_t` is 64-bit,
    // `c_long`); calling them is unsafe and wrapped once below.
    unsafe extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: c_long,
        ) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
    }

    fn last_errno() -> Errno {
        Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// `mmap` through the C library.
    ///
    /// # Safety
    /// As `mmap(2)`: with `MAP_FIXED`, the range must belong to the caller.
    pub(super) unsafe fn map(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: u64,
    ) -> Result<*mut c_void, Errno> {
        let off = c_long::try_from(off).map_err(|_| Errno::INVAL)?;
        // SAFETY: the caller's contract is mmap's own.
        let p = unsafe { mmap(addr, len, prot, flags, fd, off) };
        if p as isize == -1 {
            Err(last_errno())
        } else {
            Ok(p)
        }
    }

    /// `munmap` through the C library.
    ///
    /// # Safety
    /// As `munmap(2)`: the range must belong to the caller.
    pub(super) unsafe fn unmap(addr: *mut c_void, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract is munmap's own.
        match unsafe { munmap(addr, len) } {
            0 => Ok(()),
            _ => Err(last_errno()),
        }
    }
}

/// Anonymous `mmap` with rustix, or through the C library under TSan.
///
/// # Safety
/// As `mmap(2)`.
unsafe fn map_anonymous(
    addr: *mut std::ffi::c_void,
    len: usize,
    prot: ProtFlags,
    flags: MapFlags,
) -> Result<*mut std::ffi::c_void, Errno> {
    #[cfg(hotmem_tsan)]
    {
        let flags = flags.bits() as i32 | libc_map_anonymous();
        // SAFETY: the caller's contract is mmap's own.
        unsafe { tsan::map(addr, len, prot.bits() as i32, flags, -1, 0) }
    }
    #[cfg(not(hotmem_tsan))]
    {
        // SAFETY: the caller's contract is mmap's own.
        unsafe { rustix::mm::mmap_anonymous(addr, len, prot, flags) }
    }
}

/// `MAP_ANONYMOUS` on Linux (rustix adds it itself in `mmap_anonymous`).
#[cfg(hotmem_tsan)]
const fn libc_map_anonymous() -> i32 {
    0x20
}

/// Maps `len` bytes of inaccessible, unbacked address space where the kernel
/// chooses. Cannot disturb any existing mapping.
pub(crate) fn reserve(len: usize) -> Result<Address, Errno> {
    // SAFETY: a null hint without MAP_FIXED makes the kernel choose an unused
    // range, so no existing mapping (and no Rust object) is replaced.
    let ptr = unsafe {
        map_anonymous(
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
        map_anonymous(
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
        map_anonymous(
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
    #[cfg(hotmem_tsan)]
    unsafe {
        use std::os::fd::AsRawFd;
        tsan::map(
            range.start().as_ptr(),
            range.len(),
            (ProtFlags::READ | ProtFlags::WRITE).bits() as i32,
            (MapFlags::SHARED | MapFlags::FIXED).bits() as i32,
            fd.as_raw_fd(),
            offset,
        )
    }?;
    // SAFETY: as for `commit`: MAP_FIXED replaces only memory the caller owns
    // and has given up.
    #[cfg(not(hotmem_tsan))]
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
    #[cfg(hotmem_tsan)]
    return unsafe { tsan::unmap(range.start().as_ptr(), range.len()) };
    // SAFETY: the caller owns the range and will not touch it again.
    #[cfg(not(hotmem_tsan))]
    unsafe {
        rustix::mm::munmap(range.start().as_ptr(), range.len())
    }
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
