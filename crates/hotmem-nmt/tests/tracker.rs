//! The tracker as an observer of real memory, from many threads, and its
//! detail reports.

use hotmem_nmt::linked_list::LinkedListTracker;
use hotmem_nmt::{CallStack, Level, Operation, Scale, SiteKind, TrackError, Tracker};
use hotmem_os::{Address, MemRange, MemTag, Memory, page_size};
use std::sync::{Arc, Barrier};

#[test]
fn observer_tracks_many_threads() {
    let nmt = Arc::new(Tracker::new(Level::Summary));
    let memory = Memory::with_observer(nmt.clone());
    let page = page_size();
    let threads = 4;
    let barrier = Arc::new(Barrier::new(threads + 1));
    let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let memory = memory.clone();
            let barrier = barrier.clone();
            let kept = kept.clone();
            std::thread::spawn(move || {
                let tag = if i % 2 == 0 {
                    MemTag::THREAD_STACK
                } else {
                    MemTag::GC
                };
                let keep = memory.reserve(16 * page, tag).unwrap();
                keep.commit(keep.subrange(0, 4 * page).unwrap()).unwrap();
                kept.lock().unwrap().push((keep.range(), tag));
                for _ in 0..200 {
                    let r = memory.reserve(8 * page, tag).unwrap();
                    let part = r.subrange(2 * page, 4 * page).unwrap();
                    r.commit(part).unwrap();
                    r.uncommit(r.subrange(3 * page, page).unwrap()).unwrap();
                    drop(r);
                }
                barrier.wait(); // the main thread checks the totals now
                barrier.wait();
                drop(keep);
            })
        })
        .collect();
    barrier.wait();
    let stacks = nmt.totals(MemTag::THREAD_STACK);
    let gc = nmt.totals(MemTag::GC);
    assert_eq!((stacks.reserved, stacks.committed), (32 * page, 8 * page));
    assert_eq!((gc.reserved, gc.committed), (32 * page, 8 * page));
    // One region per kept reservation, except that the kernel may have
    // placed two of the same tag side by side, and the tracker merges
    // adjacent reservations of one tag and stack (where the kernel puts them
    // is not this test's to decide): the regions are the kept ranges with
    // such neighbours joined.
    let mut want: Vec<(usize, usize, MemTag)> = Vec::new();
    let mut ranges = kept.lock().unwrap().clone();
    ranges.sort_by_key(|(r, _)| r.start());
    for (r, tag) in ranges {
        match want.last_mut() {
            Some((_, end, t)) if *end == r.start().get() && *t == tag => *end = r.end().get(),
            _ => want.push((r.start().get(), r.end().get(), tag)),
        }
    }
    let got: Vec<(usize, usize, MemTag)> = nmt
        .regions()
        .iter()
        .map(|r| (r.range.start().get(), r.range.end().get(), r.tag))
        .collect();
    assert_eq!(got, want);
    barrier.wait();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(nmt.summary().total().reserved, 0);
    assert_eq!(nmt.node_count(), 0);
    assert_eq!(nmt.rejected_events(), (0, None));
}

#[test]
fn rejected_events_are_counted_not_lost() {
    let nmt = Arc::new(Tracker::new(Level::Summary));
    let page = page_size();
    // Reserved before the tracker was attached: its commit is rejected.
    let untracked = Memory::new().reserve(4 * page, MemTag::TEST).unwrap();
    let observed = Memory::with_observer(nmt.clone());
    let r = observed.reserve(4 * page, MemTag::TEST).unwrap();
    hotmem_os::MemoryObserver::observe(
        &*nmt,
        &hotmem_os::MemoryEvent::Commit {
            range: untracked.range(),
            tag: MemTag::TEST,
        },
    );
    let (count, last) = nmt.rejected_events();
    assert_eq!(count, 1);
    assert!(matches!(
        last,
        Some(TrackError::NotReserved {
            op: Operation::Commit,
            ..
        })
    ));
    assert_eq!(nmt.totals(MemTag::TEST).committed, 0);
    drop(r);
}

#[inline(never)]
fn reserve_java_heap(t: &Tracker, range: MemRange) {
    t.reserve(range, MemTag::JAVA_HEAP, &t.capture_stack())
        .unwrap();
}

#[inline(never)]
fn commit_some_heap(t: &Tracker, range: MemRange) {
    t.commit(range, &t.capture_stack()).unwrap();
}

#[test]
fn detail_report_shows_regions_committed_ranges_and_stacks() {
    let t = Tracker::new(Level::Detail);
    let heap = MemRange::new(Address::new(0x7100_0000_0000), 16 << 20).unwrap();
    reserve_java_heap(&t, heap);
    let baseline = t.baseline();
    // One call site for both commits: one stored stack.
    for (offset, len) in [(0, 2 << 20), (8 << 20, 1 << 20)] {
        commit_some_heap(&t, MemRange::new(heap.start() + offset, len).unwrap());
    }
    assert_eq!(t.stack_count(), 2);

    let report = t.detail_report(Scale::Kilo);
    assert_eq!(report.regions().len(), 1);
    assert_eq!(report.regions()[0].committed.len(), 2);
    let text = report.to_string();
    assert!(
        text.contains("reserved 16384KB for Java Heap from"),
        "{text}"
    );
    assert!(text.contains("committed 2048KB from"), "{text}");
    assert!(text.contains("reserve_java_heap"), "{text}");
    assert!(text.contains("commit_some_heap"), "{text}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["regions"][0]["name"], "Java Heap");
    assert_eq!(json["regions"][0]["committed"].as_array().unwrap().len(), 2);
    assert_eq!(json["summary"]["total"]["committed"], 3 << 20);

    let diff = t.detail_diff_report(&baseline, Scale::Kilo);
    assert_eq!(diff.changes().len(), 1);
    let (site, now, before) = diff.changes()[0];
    assert_eq!((site.kind, now, before), (SiteKind::Committed, 3 << 20, 0));
    let text = diff.to_string();
    assert!(
        text.contains("committed=3072KB +3072KB for Java Heap from"),
        "{text}"
    );
    assert!(text.contains("Java Heap (reserved=16384KB, committed=3072KB +3072KB)"));
    let mut via_writer = String::new();
    t.write_detail_diff(&baseline, &mut via_writer, Scale::Kilo)
        .unwrap();
    assert_eq!(via_writer, text);
}

#[test]
fn levels_and_bad_input() {
    let off = Tracker::new(Level::Off);
    let r = MemRange::new(Address::new(0x1000), 0x1000).unwrap();
    assert!(
        off.reserve(r, MemTag::CODE, &CallStack::EMPTY)
            .unwrap()
            .is_empty()
    );
    assert!(off.summary().total().is_zero());
    assert_eq!(off.node_count(), 0);

    let t = LinkedListTracker::with_level(Level::Summary);
    let d = t.reserve(r, MemTag::CODE, &CallStack::EMPTY).unwrap();
    assert_eq!(d.of(MemTag::CODE), (0x1000, 0));
    let err = t
        .reserve(r, MemTag::from_raw(500), &CallStack::EMPTY)
        .unwrap_err();
    assert_eq!(
        err,
        TrackError::TagOutOfRange {
            tag: MemTag::from_raw(500)
        }
    );
    let err = t.reserve(r, MemTag::GC, &CallStack::EMPTY).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("reserve of {r} overlaps reserved {r}")
    );
    let empty = MemRange::new(Address::new(0x1000), 0).unwrap();
    assert!(matches!(
        t.release(empty),
        Err(TrackError::Empty {
            op: Operation::Release
        })
    ));
    let d = t.set_tag(r, MemTag::GC).unwrap();
    assert_eq!(d.of(MemTag::CODE), (-0x1000, 0));
    assert_eq!(d.of(MemTag::GC), (0x1000, 0));
    assert_eq!(t.totals(MemTag::GC).reserved, 0x1000);
}

#[test]
fn partial_operations_split_and_merge_like_the_os() {
    let t = Tracker::new(Level::Detail);
    let page = 4096;
    let base = 0x7200_0000_0000;
    let pages = |first: usize, n: usize| {
        MemRange::new(Address::new(base + first * page), n * page).unwrap()
    };
    let (a, b) = (
        CallStack::from_frames(&[0xa]),
        CallStack::from_frames(&[0xb]),
    );
    t.reserve(pages(0, 16), MemTag::CODE, &a).unwrap();
    // Commit the middle, then the next part from another stack.
    t.commit(pages(4, 4), &a).unwrap();
    t.commit(pages(8, 4), &b).unwrap();
    let r = &t.regions()[0];
    assert_eq!(r.range, pages(0, 16));
    assert_eq!(
        r.committed.iter().map(|c| c.range).collect::<Vec<_>>(),
        vec![pages(4, 4), pages(8, 4)]
    );
    // Uncommit across both commits.
    let d = t.uncommit(pages(6, 4)).unwrap();
    assert_eq!(d.of(MemTag::CODE), (0, -4 * page as isize));
    let r = &t.regions()[0];
    assert_eq!(
        r.committed.iter().map(|c| c.range).collect::<Vec<_>>(),
        vec![pages(4, 2), pages(10, 2)]
    );
    // Release both ends of the reservation.
    t.release(pages(0, 2)).unwrap();
    t.release(pages(14, 2)).unwrap();
    assert_eq!(t.regions()[0].range, pages(2, 12));
    // Re-tag the upper half: two regions now.
    t.set_tag(pages(8, 6), MemTag::GC).unwrap();
    let regions = t.regions();
    assert_eq!(regions.len(), 2);
    assert_eq!(
        (regions[0].tag, regions[0].range),
        (MemTag::CODE, pages(2, 6))
    );
    assert_eq!(
        (regions[1].tag, regions[1].range),
        (MemTag::GC, pages(8, 6))
    );
    assert_eq!(t.totals(MemTag::GC).committed, 2 * page);
    assert_eq!(t.totals(MemTag::CODE).committed, 2 * page);
    // Tagging it back merges the regions again; the points are
    // 2 (code) 4 (committed by a) 6 (code) 10 (committed by b) 12 (code) 14 (released).
    t.set_tag(pages(8, 6), MemTag::CODE).unwrap();
    assert_eq!(t.regions().len(), 1);
    assert_eq!(t.node_count(), 6);
    // Committing what is committed keeps the bytes, takes the new stack.
    let d = t.commit(pages(2, 12), &b).unwrap();
    assert_eq!(d.of(MemTag::CODE), (0, 8 * page as isize));
    assert_eq!(t.regions()[0].committed.len(), 1);
    assert_eq!(t.node_count(), 2, "committed from 2, released from 14");
    t.release(pages(2, 12)).unwrap();
    assert_eq!(t.node_count(), 0);
    assert!(t.summary().total().is_zero());
}

/// Ranges at the top of the address space, longer than `isize::MAX`: the
/// region math and the totals stay exact, and no operation overflows (a
/// commit of two such pieces once overflowed the per-tag delta).
#[test]
fn regions_near_the_top_of_the_address_space() {
    let t = Tracker::new(Level::Detail);
    let page = 4096;
    let top = usize::MAX - (page - 1); // the last page boundary
    let half = 1usize << 63;
    let low = MemRange::from_bounds(Address::new(page), Address::new(half)).unwrap();
    let high = MemRange::from_bounds(Address::new(half), Address::new(top)).unwrap();
    let whole = MemRange::from_bounds(Address::new(page), Address::new(top)).unwrap();
    let (a, b) = (
        CallStack::from_frames(&[0xa]),
        CallStack::from_frames(&[0xb]),
    );
    // Two reservations from different stacks: two pieces, never merged.
    t.reserve(low, MemTag::CODE, &a).unwrap();
    t.reserve(high, MemTag::CODE, &b).unwrap();
    assert_eq!(t.totals(MemTag::CODE).reserved, whole.len());
    assert_eq!(t.regions().len(), 2);
    // One commit over both pieces: a change of almost 2^64 bytes.
    t.commit(whole, &a).unwrap();
    assert_eq!(t.totals(MemTag::CODE).committed, whole.len());
    assert_eq!(t.summary().total().committed, whole.len());
    // The reports print it without overflowing.
    let mut text = String::new();
    t.write_summary(&mut text, Scale::Bytes).unwrap();
    assert!(
        text.contains(&format!("committed={}B", whole.len())),
        "{text}"
    );
    // Uncommit the top page only, then everything; release both.
    let last = MemRange::from_bounds(Address::new(top - page), Address::new(top)).unwrap();
    t.uncommit(last).unwrap();
    assert_eq!(t.totals(MemTag::CODE).committed, whole.len() - page);
    t.uncommit(whole).unwrap();
    assert_eq!(t.totals(MemTag::CODE).committed, 0);
    // Reserving over it again is an overlap, and changes nothing.
    assert!(matches!(
        t.reserve(last, MemTag::GC, &a),
        Err(TrackError::Overlap { .. })
    ));
    t.release(whole).unwrap();
    assert!(t.summary().total().is_zero());
    assert_eq!(t.node_count(), 0);
}
