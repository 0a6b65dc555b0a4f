//! The fast way to capture a call stack: walking the chain of saved frame
//! pointers, a few loads per frame instead of a DWARF unwind (about 1 us for
//! a dozen frames).
//!
//! Only when the build forces frame pointers (`-C force-frame-pointers=yes`,
//! detected by the build script, which sets `cfg(hotmem_frame_pointers)`)
//! on x86_64 or aarch64 Linux; everywhere else [`walk`] returns `None` and
//! the caller unwinds (the slow path).
//!
//! The walk never reads memory outside the calling thread's live stack:
//! it runs only if its own frame lies in the thread's stack (from
//! `pthread_getattr_np`, cached per thread; not on a signal or coroutine
//! stack), and every frame address it follows must lie between its own
//! frame and the top of that stack, be word aligned, and be above the frame
//! before it, so it ends after at most `(top - here) / 16` steps. Everything in that range is
//! mapped: it is the stack of the running thread above its current frame.
//! A frame of code built without frame pointers (the precompiled standard
//! library) can end the chain early or add a bogus return address, which
//! symbolizes as unknown; it cannot make the walk leave the stack.

/// Return addresses of the callers of the function that called `walk`
/// (`walk` is inlined into it), innermost first, into `out`. `None` when
/// this build cannot walk frame pointers; `Some(0)` when the chain could
/// not be followed at all.
#[cfg(all(
    hotmem_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
))]
#[inline(always)]
pub(crate) fn walk(out: &mut [usize]) -> Option<usize> {
    let mut fp: usize;
    // SAFETY: reads the frame-pointer register into a local; no memory is
    // accessed and no flag changes.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags));
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags));
    }
    let here = std::ptr::addr_of!(fp) as usize;
    let (low, top) = thread_stack()?;
    if here < low || here >= top {
        // Running on another stack (a signal or coroutine stack): the
        // range between here and the thread's stack is not known mapped.
        return None;
    }
    const WORD: usize = size_of::<usize>();
    let mut n = 0;
    while n < out.len() {
        // The frame record is two words at `fp`: the caller's frame
        // pointer, then the return address into the caller.
        if fp < here || fp % WORD != 0 || fp > top.saturating_sub(2 * WORD) {
            break;
        }
        // SAFETY: `[fp, fp + 2 words)` lies in `[here, top)`: the running
        // thread's stack between this frame and its top, which is mapped
        // and readable for as long as this function runs. It is read as
        // plain words (any bit pattern is a valid `usize`); volatile,
        // because the compiler must not assume anything about memory that
        // it did not write here.
        let (next, ret) = unsafe {
            (
                std::ptr::read_volatile(fp as *const usize),
                std::ptr::read_volatile((fp + WORD) as *const usize),
            )
        };
        if ret == 0 {
            break;
        }
        out[n] = ret;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    Some(n)
}

/// Without frame pointers there is no chain to walk.
#[cfg(not(all(
    hotmem_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
)))]
#[inline(always)]
pub(crate) fn walk(_out: &mut [usize]) -> Option<usize> {
    None
}

/// Whether [`walk`] can work in this build.
#[cfg(test)]
pub(crate) const AVAILABLE: bool = cfg!(all(
    hotmem_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
));

/// The calling thread's stack, `[low, top)`, looked up once per thread.
#[cfg(all(
    hotmem_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
))]
fn thread_stack() -> Option<(usize, usize)> {
    use std::cell::Cell;
    thread_local! {
        /// (0, 0): not looked up yet; (1, 1): the lookup failed.
        static STACK: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }
    let (low, top) = STACK.with(|s| {
        if s.get() == (0, 0) {
            s.set(lookup_thread_stack().unwrap_or((1, 1)));
        }
        s.get()
    });
    (low < top).then_some((low, top))
}

#[cfg(all(
    hotmem_frame_pointers,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(miri)
))]
fn lookup_thread_stack() -> Option<(usize, usize)> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `pthread_getattr_np` initialises `attr` for the calling
    // thread when it returns 0 (and only then is `attr` used or destroyed).
    if unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) } != 0 {
        return None;
    }
    let mut addr = std::ptr::null_mut();
    let mut size = 0;
    // SAFETY: `attr` was initialised above; the out-pointers are valid
    // locals.
    let rc = unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size) };
    // SAFETY: `attr` was initialised by `pthread_getattr_np` and is not
    // used after this.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    let low = addr as usize;
    Some((low, low.checked_add(size)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_only_with_frame_pointers() {
        let mut out = [0usize; 8];
        let got = walk(&mut out);
        assert_eq!(got.is_some(), AVAILABLE);
        if let Some(n) = got {
            // The test function's caller (the test harness) is found.
            assert!(n >= 1, "no frame found");
            assert!(out[..n].iter().all(|&ip| ip != 0));
        }
    }
}
