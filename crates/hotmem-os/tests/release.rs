//! Release leaves nothing mapped. A test binary of its own, with one test:
//! in a process where other tests reserve memory concurrently, the kernel may
//! hand a just-released range to another thread's reservation, and the check
//! would see that mapping instead of a leak.
//!
//! The test's own thread must not map anything between the release and the
//! check either: a `malloc` big enough to `mmap` lands in the hole the
//! release just left (the kernel maps top-down, first fit). So the check
//! reads `/proc/self/maps` into a buffer allocated before the release and
//! parses it without allocating.

use hotmem_os::{MemRange, MemTag, Memory, page_size, procfs};
use std::io::Read;

/// Bytes of `range` that `/proc/self/maps` shows mapped. Allocates nothing
/// but the path of `File::open` (a few bytes, never an `mmap`): `buf` must
/// be large enough already.
fn mapped_bytes(range: MemRange, buf: &mut String) -> usize {
    buf.clear();
    let capacity = buf.capacity();
    std::fs::File::open("/proc/self/maps")
        .unwrap()
        .read_to_string(buf)
        .unwrap();
    assert_eq!(buf.capacity(), capacity, "the buffer had to grow");
    let (lo, hi) = (range.start().get(), range.end().get());
    buf.lines()
        .filter_map(|l| {
            let span = l.split_ascii_whitespace().next()?;
            let (s, e) = span.split_once('-')?;
            let s = usize::from_str_radix(s, 16).ok()?;
            let e = usize::from_str_radix(e, 16).ok()?;
            Some(e.min(hi).saturating_sub(s.max(lo)))
        })
        .sum()
}

#[test]
fn drop_and_release_leave_no_mapping() {
    let page = page_size();
    let mut buf = String::with_capacity(8 << 20);
    let r = Memory::new()
        .reserve_aligned(32 * page, 2 << 20, MemTag::TEST)
        .unwrap();
    let range = r.range();
    r.commit(r.subrange(0, page).unwrap()).unwrap();
    let phys = r.memory().physical(page).unwrap();
    r.map(r.start() + 8 * page, &phys, 0, page).unwrap();
    let pieces = procfs::mappings_within(range).unwrap();
    assert_eq!(
        pieces.iter().map(|m| m.is_accessible()).collect::<Vec<_>>(),
        [true, false, true, false],
        "committed, reserved, mapped, reserved: {pieces:?}"
    );
    assert_eq!(mapped_bytes(range, &mut buf), range.len());
    drop(r);
    assert_eq!(mapped_bytes(range, &mut buf), 0, "drop released everything");

    let r = Memory::new().reserve(32 * page, MemTag::TEST).unwrap();
    let range = r.range();
    assert_eq!(mapped_bytes(range, &mut buf), range.len());
    r.release().unwrap();
    assert_eq!(
        mapped_bytes(range, &mut buf),
        0,
        "release released everything"
    );
}
