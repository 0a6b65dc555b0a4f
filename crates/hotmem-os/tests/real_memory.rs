//! hotmem-os against the kernel: every test checks the real effect (resident
//! pages, contents, /proc mappings), not only return values.

use hotmem_os::{
    Address, CommitError, MapError, MemRange, MemTag, Memory, MemoryEvent, MemoryObserver,
    PhysicalError, RangeError, ReserveError, page_size, procfs,
};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Log(Mutex<Vec<MemoryEvent>>);

impl MemoryObserver for Log {
    fn observe(&self, e: &MemoryEvent) {
        self.0.lock().unwrap().push(*e);
    }
}

fn fill(range: MemRange, v: u8) {
    // SAFETY: callers pass committed or mapped ranges they own.
    unsafe { range.start().as_ptr::<u8>().write_bytes(v, range.len()) }
}

/// Bytes of `range` that the kernel maps (clipped to `range`).
fn covered(range: MemRange) -> usize {
    procfs::mappings_within(range)
        .unwrap()
        .iter()
        .map(|m| m.range.len())
        .sum()
}

fn byte(at: Address) -> u8 {
    // SAFETY: callers pass committed or mapped addresses.
    unsafe { at.as_ptr::<u8>().read_volatile() }
}

#[test]
fn commit_makes_memory_resident_and_uncommit_returns_it() {
    let page = page_size();
    let r = Memory::new().reserve(64 * page, MemTag::TEST).unwrap();
    let part = r.subrange(8 * page, 16 * page).unwrap();
    assert_eq!(
        procfs::resident_bytes(r.range()).unwrap(),
        0,
        "a reservation has no backing"
    );
    r.commit(part).unwrap();
    fill(part, 0xAA);
    assert_eq!(procfs::resident_bytes(part).unwrap(), part.len());
    // smaps agrees: inside the reservation, exactly the committed part is
    // read/write (only our range is compared: smaps' byte counts are per
    // VMA, and a VMA may extend into a neighbour's reservation).
    let accessible = |within: MemRange| -> Vec<MemRange> {
        procfs::mappings_within(within)
            .unwrap()
            .into_iter()
            .filter(|m| m.is_accessible())
            .map(|m| m.range)
            .collect()
    };
    assert_eq!(accessible(r.range()), vec![part]);

    r.uncommit(part).unwrap();
    assert_eq!(procfs::resident_bytes(part).unwrap(), 0);
    assert_eq!(
        accessible(r.range()),
        vec![],
        "still reserved, inaccessible"
    );
    assert_eq!(covered(r.range()), r.len(), "still reserved");

    r.commit(part).unwrap();
    assert_eq!(byte(part.start()), 0, "recommitted memory reads zero");
    assert_eq!(byte(part.start() + (part.len() - 1)), 0);
}

#[test]
fn aligned_reservation_is_aligned() {
    for align in [2usize << 20, 32 << 20] {
        let r = Memory::new()
            .reserve_aligned(align * 2, align, MemTag::TEST)
            .unwrap();
        assert!(r.start().is_aligned(align));
        assert_eq!(r.len(), align * 2);
        // All of it is mapped, inaccessible. (Whether the padding outside was
        // trimmed cannot be checked from smaps: another thread's mapping
        // may sit there, merged into the same VMA.)
        let inside = procfs::mappings_within(r.range()).unwrap();
        assert_eq!(covered(r.range()), r.len(), "{inside:?}");
        assert!(inside.iter().all(|m| !m.is_accessible()), "{inside:?}");
    }
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing() {
    let page = page_size();
    let m = Memory::new();
    assert_eq!(
        m.reserve(0, MemTag::TEST).unwrap_err(),
        ReserveError::ZeroSize
    );
    assert!(matches!(
        m.reserve(page + 1, MemTag::TEST),
        Err(ReserveError::Misaligned { .. })
    ));
    assert!(matches!(
        m.reserve_aligned(page, 3 * page, MemTag::TEST),
        Err(ReserveError::BadAlignment { .. })
    ));
    assert!(matches!(
        m.reserve_aligned(page, 16, MemTag::TEST),
        Err(ReserveError::BadAlignment { .. })
    ));
    assert!(matches!(
        m.reserve_aligned(usize::MAX & !(page - 1), 1 << 40, MemTag::TEST),
        Err(ReserveError::Overflow { .. })
    ));
    assert!(matches!(
        m.reserve(1 << 62, MemTag::TEST),
        Err(ReserveError::Os(_))
    ));

    let r = m.reserve(16 * page, MemTag::TEST).unwrap();
    let ok = r.subrange(0, 4 * page).unwrap();
    r.commit(ok).unwrap();
    fill(ok, 7);
    let before = procfs::mappings_within(r.range()).unwrap();

    let misaligned = MemRange::new(r.start() + 16, page).unwrap();
    assert!(matches!(
        r.commit(misaligned),
        Err(CommitError::Range(RangeError::Misaligned { .. }))
    ));
    let outside = MemRange::new(r.start() + 12 * page, 8 * page).unwrap();
    assert!(matches!(
        r.commit(outside),
        Err(CommitError::Range(RangeError::OutOfRange { .. }))
    ));
    assert!(matches!(
        r.uncommit(outside),
        Err(CommitError::Range(RangeError::OutOfRange { .. }))
    ));
    let empty = MemRange::new(r.start(), 0).unwrap();
    assert_eq!(r.commit(empty), Err(CommitError::Range(RangeError::Empty)));
    assert!(matches!(
        r.subrange(15 * page, 2 * page),
        Err(RangeError::OutOfRange { .. })
    ));
    assert!(matches!(
        MemRange::new(Address::new(usize::MAX - 10), 100),
        Err(RangeError::Wraps { .. })
    ));

    let phys = m.physical(4 * page).unwrap();
    assert!(matches!(
        r.map(r.start(), &phys, 0, 8 * page),
        Err(MapError::Physical(PhysicalError::OutOfRange { .. }))
    ));
    assert!(matches!(
        r.map(r.start(), &phys, 100, page),
        Err(MapError::Physical(PhysicalError::Misaligned { .. }))
    ));
    assert!(matches!(
        r.map(r.start() + 15 * page, &phys, 0, 2 * page),
        Err(MapError::Range(_))
    ));
    assert!(matches!(
        phys.commit(0, 5 * page),
        Err(PhysicalError::OutOfRange { .. })
    ));
    assert_eq!(phys.commit(0, 0), Err(PhysicalError::ZeroSize));
    assert_eq!(m.physical(0).unwrap_err(), PhysicalError::ZeroSize);

    // Nothing changed: the same mappings inside the reservation (clipped to
    // it: a parallel test's reservation may have merged into our VMA),
    // committed bytes kept their contents.
    assert_eq!(procfs::mappings_within(r.range()).unwrap(), before);
    assert_eq!(byte(ok.start()), 7);
    assert_eq!(byte(ok.start() + (ok.len() - 1)), 7);
}

#[test]
fn memfd_segments_multi_map_and_uncommit_for_real() {
    let page = page_size();
    let m = Memory::new();
    let r = m.reserve(64 * page, MemTag::JAVA_HEAP).unwrap();
    let phys = m.physical(16 * page).unwrap();
    phys.commit(4 * page, 8 * page).unwrap();
    assert_eq!(phys.committed_bytes().unwrap(), 8 * page);

    let a = r.map(r.start(), &phys, 4 * page, 8 * page).unwrap();
    let b = r
        .map(r.start() + 32 * page, &phys, 4 * page, 8 * page)
        .unwrap();
    // SAFETY: both are mapped views of the same committed segment.
    unsafe {
        a.start().as_ptr::<u64>().add(3).write(0xDEAD_BEEF);
        assert_eq!(b.start().as_ptr::<u64>().add(3).read(), 0xDEAD_BEEF);
    }
    fill(b, 0x11);
    assert_eq!(
        byte(a.start() + 5 * page),
        0x11,
        "a write through b is seen through a"
    );

    // Unmapping one view leaves the other and the reservation intact.
    r.unmap(b).unwrap();
    assert_eq!(byte(a.start() + 7 * page), 0x11);
    let maps = procfs::mappings_within(b).unwrap();
    assert_eq!(covered(b), b.len(), "still reserved");
    assert!(maps.iter().all(|m| !m.is_accessible()), "{maps:?}");

    // Punching a hole returns the memory: the file shrinks and the view reads zero.
    phys.uncommit(4 * page, 8 * page).unwrap();
    assert_eq!(phys.committed_bytes().unwrap(), 0);
    assert_eq!(byte(a.start()), 0);
}

#[test]
fn observer_sees_every_operation_with_its_tag() {
    let page = page_size();
    let log = Arc::new(Log::default());
    let m = Memory::with_observer(log.clone());
    let r = m.reserve(8 * page, MemTag::CODE).unwrap();
    let whole = r.range();
    let part = r.subrange(page, 2 * page).unwrap();
    r.commit(part).unwrap();
    let _ = r.commit(MemRange::new(r.start() + 1, page).unwrap()); // rejected: not reported
    r.uncommit(part).unwrap();
    let phys = m.physical(page).unwrap();
    let mapped = r.map(r.start(), &phys, 0, page).unwrap();
    drop(r);
    let tag = MemTag::CODE;
    assert_eq!(
        *log.0.lock().unwrap(),
        vec![
            MemoryEvent::Reserve { range: whole, tag },
            MemoryEvent::Commit { range: part, tag },
            MemoryEvent::Uncommit { range: part, tag },
            MemoryEvent::Commit { range: mapped, tag },
            MemoryEvent::Release { range: whole, tag },
        ]
    );
}

#[test]
fn threads_commit_disjoint_parts_concurrently() {
    let page = page_size();
    let r = Arc::new(Memory::new().reserve(8 * 64 * page, MemTag::TEST).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let r = r.clone();
            std::thread::spawn(move || {
                let mine = r.subrange(t * 64 * page, 64 * page).unwrap();
                for round in 0..20u8 {
                    r.commit(mine).unwrap();
                    fill(mine, round);
                    assert_eq!(byte(mine.start() + 63 * page), round);
                    r.uncommit(mine).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(procfs::resident_bytes(r.range()).unwrap(), 0);
}

#[test]
fn the_mapping_of_an_address_is_found_as_smaps_shows_it() {
    let memory = Memory::new();
    let r = memory.reserve(4 * page_size(), MemTag::INTERNAL).unwrap();
    let inside = r.start() + page_size();
    let m = procfs::mapping_containing(inside)
        .unwrap()
        .expect("a reservation is a mapping");
    assert!(m.range.contains(inside));
    // The same mapping as smaps lists it: the whole reservation, with the
    // same permissions. Not the same range to the byte: another test's
    // thread may map a neighbour between the two reads, which the kernel
    // merges into the same VMA (CI saw the start move by 5 pages).
    let s = procfs::mappings_overlapping(MemRange::new(inside, 8).unwrap()).unwrap();
    assert_eq!(s.len(), 1);
    for range in [m.range, s[0].range] {
        assert!(
            range.contains_range(r.range()),
            "{range:?} holds {:?}",
            r.range()
        );
    }
    assert_eq!(s[0].perms, m.perms);
    // The calling thread's stack.
    let local = 0u8;
    let here = Address::from_ptr(std::hint::black_box(&local));
    let stack = procfs::mapping_containing(here)
        .unwrap()
        .expect("the stack");
    assert!(stack.range.contains(here) && stack.is_accessible());
    assert_eq!(procfs::mapping_containing(Address::new(0)).unwrap(), None);
}
