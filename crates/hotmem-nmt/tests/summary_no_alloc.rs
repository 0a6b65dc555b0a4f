//! The summary reports allocate nothing: proven with a counting global
//! allocator (in its own test binary, so it affects only this test).
//!
//! The allocator counts per thread, and the test reads only its own
//! thread's count: the test harness's other threads (and any test added to
//! this binary later) may allocate at any time without making it fail.

use hotmem_nmt::{CallStack, Level, Scale, Tracker};
use hotmem_os::{Address, MemRange, MemTag};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::{self, Write};

struct Counting;

thread_local! {
    /// Allocations made by this thread. A `const`-initialised `Cell` needs
    /// no allocation and no destructor, so the allocator may touch it.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: during thread teardown the slot may be gone; those
    // allocations are not this test's.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

/// Allocations made by the calling thread so far.
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards every call to the system allocator unchanged; counting
// is a thread-local increment, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A fixed buffer that refuses text beyond its capacity: a writer that
/// cannot allocate either.
struct Fixed {
    buf: [u8; 8192],
    len: usize,
}

impl Write for Fixed {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn range(mib: usize, len: usize) -> MemRange {
    MemRange::new(Address::new(0x7000_0000_0000 + (mib << 20)), len).unwrap()
}

#[test]
fn summary_and_summary_diff_allocate_nothing() {
    let t = Tracker::new(Level::Detail);
    let custom = t.register_tag("Embedder cache").unwrap();
    let stack = CallStack::capture();
    for (i, tag) in [
        MemTag::JAVA_HEAP,
        MemTag::CODE,
        MemTag::THREAD_STACK,
        custom,
    ]
    .into_iter()
    .enumerate()
    {
        t.reserve(range(i * 64, 32 << 20), tag, &stack).unwrap();
        t.commit(range(i * 64, 1 << 20), &stack).unwrap();
    }
    // An unregistered custom number prints as "Tag #n".
    t.reserve(range(1024, 4096), MemTag::from_raw(100), &CallStack::EMPTY)
        .unwrap();
    let baseline = t.baseline();
    t.commit(range(2, 2 << 20), &stack).unwrap();
    t.release(range(3 * 64, 32 << 20)).unwrap();

    let mut out = Fixed {
        buf: [0; 8192],
        len: 0,
    };
    // The counter sees this thread's allocations (so a zero below means
    // something).
    let probe = allocations();
    drop(std::hint::black_box(Box::new(1u64)));
    assert!(allocations() > probe, "the counting allocator counts");
    let before = allocations();
    t.write_summary(&mut out, Scale::Kilo).unwrap();
    let summary_len = out.len;
    t.write_summary_diff(&baseline, &mut out, Scale::Mega)
        .unwrap();
    let totals = t.totals(MemTag::JAVA_HEAP);
    let summary = t.summary();
    let after = allocations();
    assert_eq!(after - before, 0, "the summary reports allocated");

    // And they said the right things.
    let text = std::str::from_utf8(&out.buf[..out.len]).unwrap();
    let (summary_text, diff_text) = text.split_at(summary_len);
    assert_eq!(totals.reserved, 32 << 20);
    assert_eq!(totals.committed, 3 << 20);
    assert_eq!(summary.of(custom).reserved, 0);
    assert!(summary_text.contains("Java Heap (reserved=32768KB, committed=3072KB)"));
    assert!(summary_text.contains("Tag #100"));
    assert!(
        !summary_text.contains("Embedder cache"),
        "released: no longer listed"
    );
    assert!(diff_text.contains("Java Heap (reserved=32MB, committed=3MB +2MB)"));
    assert!(diff_text.contains("Embedder cache (reserved=0MB -32MB, committed=0MB -1MB)"));
}
