//! A release whose `munmap` the kernel refuses leaves the tracker equal to
//! the kernel: the release it was told about before the `munmap` is undone.
//!
//! The failure is real: part of the reservation is sealed with `mseal(2)`
//! (Linux 6.10 and later, 64-bit), and `munmap` of a range with a sealed
//! part fails with `EPERM` and unmaps nothing. On a kernel without `mseal`
//! the test says so and checks nothing (the same recovery is tested by
//! fault injection in `hotmem-os`'s unit tests on every kernel). A test
//! binary of its own: the sealed mappings stay for the rest of the process.

mod common;

use common::{Page, kernel_view, tracker_view};
use hotmem_nmt::{Level, Tracker};
use hotmem_os::{MemRange, MemTag, Memory, OsOp, page_size};
use std::sync::Arc;

/// `mseal(range, 0)`: Ok, or the errno.
#[cfg(target_arch = "x86_64")]
fn mseal(range: MemRange) -> Result<(), i32> {
    let ret: isize;
    // SAFETY: mseal (syscall 462) only forbids later changes to the mapping
    // of `range`, which this test owns and keeps mapped to the end of the
    // process; it reads and writes no memory. `syscall` clobbers rcx and r11.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") 462isize => ret,
            in("rdi") range.start().get(),
            in("rsi") range.len(),
            in("rdx") 0usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 { Err(-ret as i32) } else { Ok(()) }
}

#[cfg(not(target_arch = "x86_64"))]
fn mseal(_: MemRange) -> Result<(), i32> {
    Err(38) // ENOSYS: not wired up for this architecture here
}

const EPERM: i32 = 1;

#[test]
fn a_refused_release_leaves_the_tracker_equal_to_the_kernel() {
    let page = page_size();
    let nmt = Arc::new(Tracker::new(Level::Detail));
    let memory = Memory::with_observer(nmt.clone());
    let phys = memory.physical(page).unwrap();
    for explicit in [true, false] {
        let r = memory.reserve(16 * page, MemTag::CODE).unwrap();
        let range = r.range();
        r.commit(r.subrange(2 * page, 3 * page).unwrap()).unwrap();
        r.map(r.start() + 8 * page, &phys, 0, page).unwrap();
        if let Err(errno) = mseal(r.subrange(12 * page, page).unwrap()) {
            eprintln!("mseal is not available (errno {errno}): nothing to check");
            return;
        }
        let before = kernel_view(range);
        assert_eq!(before.iter().filter(|p| **p == Page::Committed).count(), 4);
        assert_eq!(tracker_view(&nmt, range), before);

        if explicit {
            let err = r.release().unwrap_err();
            assert_eq!((err.op(), err.raw_os_error()), (OsOp::Release, EPERM));
        } else {
            drop(r);
        }
        assert_eq!(kernel_view(range), before, "the kernel unmapped nothing");
        assert_eq!(
            tracker_view(&nmt, range),
            before,
            "the tracker is back to the kernel's view (explicit: {explicit})"
        );
        let regions = nmt.regions_in(range);
        assert!(regions.iter().all(|r| r.tag == MemTag::CODE), "{regions:?}");
    }
    // Both leaked reservations, as the kernel still has them.
    let code = nmt.totals(MemTag::CODE);
    assert_eq!((code.reserved, code.committed), (32 * page, 8 * page));
    assert_eq!(nmt.rejected_events(), (0, None));
}
