//! Release leaves nothing mapped. A test binary of its own, with one test:
//! in a process where other tests reserve memory concurrently, the kernel may
//! hand a just-released range to another thread's reservation, and the check
//! would see that mapping instead of a leak.

use hotmem_os::{MemTag, Memory, page_size, procfs};

#[test]
fn drop_and_release_leave_no_mapping() {
    let page = page_size();
    let r = Memory::new()
        .reserve_aligned(32 * page, 2 << 20, MemTag::TEST)
        .unwrap();
    let range = r.range();
    r.commit(r.subrange(0, page).unwrap()).unwrap();
    let phys = r.memory().physical(page).unwrap();
    r.map(r.start() + 8 * page, &phys, 0, page).unwrap();
    assert!(
        procfs::mappings_overlapping(range).unwrap().len() >= 3,
        "reserved, committed and mapped parts"
    );
    drop(r);
    assert!(
        procfs::mappings_overlapping(range).unwrap().is_empty(),
        "drop released everything"
    );

    let r = Memory::new().reserve(32 * page, MemTag::TEST).unwrap();
    let range = r.range();
    r.release().unwrap();
    assert!(
        procfs::mappings_overlapping(range).unwrap().is_empty(),
        "release released everything"
    );
}
