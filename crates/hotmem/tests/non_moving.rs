//! The non-moving space ([`Mutator::alloc_non_moving`]): its objects keep
//! their address through every kind of collection of every collector,
//! among young and old garbage that those collections do move; those
//! allocated while a concurrent cycle marks are kept by that cycle; and
//! its pages go back to the heap once nothing in them lives.

use hotmem::objects::{Ids, RootTable, SimpleObjects, build};
use hotmem::{CollectionKind, CollectorMode, Generations, ObjectReference, Runtime};
use std::sync::Arc;

mod common;

fn runtime(mode: CollectorMode, generations: Generations, objects: &Arc<SimpleObjects>) -> Runtime {
    runtime_of(128 << 20, mode, generations, objects)
}

/// [`runtime`] with a heap of `heap_max` bytes.
fn runtime_of(
    heap_max: usize,
    mode: CollectorMode,
    generations: Generations,
    objects: &Arc<SimpleObjects>,
) -> Runtime {
    common::builder(heap_max, Some(2))
        .collector(mode)
        .generations(generations)
        .binding(objects.clone())
        .build()
        .expect("a runtime")
}

/// The collectors that move objects.
const MODES: [(CollectorMode, Generations); 4] = [
    (CollectorMode::StopTheWorld, Generations::YoungAndOld),
    (CollectorMode::StopTheWorld, Generations::Single),
    (CollectorMode::Concurrent, Generations::YoungAndOld),
    (CollectorMode::Concurrent, Generations::Single),
];

/// The concurrent collector that moves nothing (it frees empty pages).
const NOT_MOVING: (CollectorMode, Generations) =
    (CollectorMode::ConcurrentNonMoving, Generations::YoungAndOld);

/// The addresses of the table's entries `from..`.
fn entries(roots: &RootTable, from: usize) -> Vec<ObjectReference> {
    (from..roots.len()).map(|i| roots.get(i).unwrap()).collect()
}

/// Non-moving objects among moving ones, each kind among garbage: young
/// and full collections move the others (the young ones at least) and
/// never these; every object stays intact.
#[test]
fn non_moving_objects_keep_their_address_while_collections_move_the_rest() {
    for (mode, generations) in MODES {
        let objects = SimpleObjects::new();
        let rt = runtime(mode, generations, &objects);
        let mut me = rt.attach_mutator().unwrap();
        let (fixed, moving) = (objects.root_table(), objects.root_table());
        let mut ids = Ids::from(1);
        for i in 0..2000 {
            build::non_moving_object(&mut me, &fixed, 2, 16, ids.next()).unwrap();
            build::object(&mut me, &moving, 2, 16, ids.next()).unwrap();
            if i % 100 == 0 {
                build::garbage(&mut me, &moving, 64, &mut ids).unwrap();
            }
        }
        let at = entries(&fixed, 0);
        let before = entries(&moving, 0);
        assert!(at.iter().all(|&o| rt.is_non_moving(o)));
        assert!(!before.iter().any(|&o| rt.is_non_moving(o)));
        // SAFETY: the only mutator, which does not poll during the walk.
        let want = unsafe { objects.verify_with(&me) }.unwrap();
        let mut relocated = 0;
        for round in 0..4 {
            let stats = match (generations, round % 2) {
                (Generations::YoungAndOld, 0) => me.collect_young().unwrap(),
                _ => me.collect().unwrap(),
            };
            relocated += stats.objects_relocated;
            assert_eq!(entries(&fixed, 0), at, "{mode:?} {generations:?}: moved");
            // SAFETY: as above.
            assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
        }
        assert!(
            relocated > 0 && entries(&moving, 0) != before,
            "{mode:?} {generations:?}: the collections moved the others"
        );
    }
}

/// A full collection after every non-moving object died frees their pages
/// but the one allocation goes on in; a young collection frees none of
/// them (they are old).
#[test]
fn a_non_moving_page_goes_back_once_nothing_in_it_lives() {
    for (mode, generations) in MODES.into_iter().chain([NOT_MOVING]) {
        let objects = SimpleObjects::new();
        let rt = runtime(mode, generations, &objects);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        me.collect().unwrap();
        let used = rt.heap().usage().used;
        // About 8 MiB: four small pages or more.
        for _ in 0..4000 {
            build::non_moving_object(&mut me, &roots, 0, 250, ids.next()).unwrap();
        }
        let filled = rt.heap().usage().used;
        assert!(filled >= used + (6 << 20), "{used} -> {filled}");
        roots.clear();
        if generations == Generations::YoungAndOld {
            let young = me.collect_young().unwrap();
            assert_eq!(young.kind, CollectionKind::Young);
            assert!(rt.heap().usage().used >= filled, "{young:?}");
        }
        let full = me.collect().unwrap();
        let after = rt.heap().usage().used;
        assert!(full.pages_freed_empty >= 3, "{mode:?}: {full:?}");
        assert!(after <= used + (2 << 20), "{mode:?}: {used} -> {after}");
        // The current page is not freed: allocation goes on in it.
        let obj = build::non_moving_object(&mut me, &roots, 0, 4, ids.next()).unwrap();
        me.collect().unwrap();
        assert_eq!(roots.get(0), Some(obj));
        // SAFETY: the only mutator, which does not poll during the walk.
        assert_eq!(unsafe { objects.verify_with(&me) }.unwrap().objects, 1);
    }
}

/// An object too large for a small page gets a page of its own sized to
/// it, not a medium page (32 MiB in a 1 GiB heap) kept for what may be
/// one object; it stays put and its page goes back once it is dead.
#[test]
fn a_medium_non_moving_object_takes_a_page_sized_to_it() {
    for (mode, generations) in MODES.into_iter().chain([NOT_MOVING]) {
        let objects = SimpleObjects::new();
        let rt = runtime_of(1 << 30, mode, generations, &objects);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        me.collect().unwrap();
        let used = rt.heap().usage().used;
        // 600 KiB: a medium object in a 1 GiB heap (small ones end at
        // 256 KiB).
        let big = build::non_moving_object(&mut me, &roots, 1, 600 << 7, ids.next()).unwrap();
        let small = build::non_moving_object(&mut me, &roots, 1, 4, ids.next()).unwrap();
        let grown = rt.heap().usage().used - used;
        // Its own 2 MiB, and the small object's page.
        assert_eq!(grown, 4 << 20, "{mode:?}");
        assert!(rt.is_non_moving(big) && rt.is_non_moving(small));
        build::garbage(&mut me, &roots, 4 << 10, &mut ids).unwrap();
        me.collect().unwrap();
        assert_eq!(roots.get(0), Some(big), "{mode:?}");
        // SAFETY: the only mutator, which does not poll during the walk.
        assert_eq!(unsafe { objects.verify_with(&me) }.unwrap().objects, 2);
        // Dead, its page goes back; the small object's current page stays.
        roots.set(0, None);
        let full = me.collect().unwrap();
        assert!(full.pages_freed_empty >= 1, "{mode:?}: {full:?}");
        assert!(rt.heap().usage().used <= used + (2 << 20), "{mode:?}");
        assert_eq!(roots.get(1), Some(small));
    }
}

/// While a concurrent cycle marks, non-moving objects are allocated and
/// stored into an object the marking reaches last (the end of a long
/// list) and into a root table: they lie above their page's top at mark
/// start, where marking must take them as new (live), not as a bad
/// reference. The cycle succeeds and keeps them; the next ones too.
#[test]
fn non_moving_objects_allocated_while_marking_are_kept() {
    const LIST: usize = 50_000;
    const HOLDER: usize = 256;
    let concurrent = [
        (CollectorMode::Concurrent, Generations::Single),
        (CollectorMode::Concurrent, Generations::YoungAndOld),
        NOT_MOVING,
    ];
    for (mode, generations) in concurrent {
        let objects = SimpleObjects::new();
        let rt = runtime(mode, generations, &objects);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        // A non-moving page current before the cycle: what follows is
        // allocated above its top at mark start.
        build::non_moving_object(&mut me, &roots, 0, 4, ids.next()).unwrap();
        // Root 1: a long list whose last node refers to the holder.
        build::list(&mut me, &roots, LIST, 0, false, &mut ids).unwrap();
        let holder = build::object(&mut me, &roots, HOLDER, 0, ids.next()).unwrap();
        let mut tail = roots.get(1).unwrap();
        // SAFETY: the list's nodes are live; nothing collects while walking.
        while let Some(next) = unsafe { SimpleObjects::load_slot(&me, tail, 0) } {
            tail = next;
        }
        // SAFETY: both live.
        unsafe { SimpleObjects::set_slot(&me, tail, 0, Some(holder)) };
        roots.pop();
        let cycle = common::BackgroundCycle::start(&rt);
        let marking = cycle.wait_for_marking(&rt, &mut me);
        let extra = objects.root_table();
        for i in 0..HOLDER {
            let obj = build::non_moving_object(&mut me, &extra, 1, 8, ids.next()).unwrap();
            let holder = me.resolve(holder);
            // SAFETY: both live (the holder through the list, `obj` in a
            // root table); no poll between reading them and the store.
            unsafe { SimpleObjects::set_slot(&me, holder, i, Some(obj)) };
        }
        let first = cycle.finish(&mut me).expect("the cycle succeeds");
        let at = entries(&extra, 0);
        // SAFETY: the only mutator, which does not poll during the walk.
        let want = unsafe { objects.verify_with(&me) }.unwrap();
        assert_eq!(want.objects, 1 + LIST + 1 + HOLDER);
        for _ in 0..3 {
            me.collect().unwrap();
            assert_eq!(entries(&extra, 0), at);
            // SAFETY: as above.
            assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
        }
        let last = me.collect().unwrap();
        assert_eq!(last.objects_marked as usize, want.objects);
        // What this test exercised (the scheduler decides whether the
        // allocations fell in the marking).
        eprintln!(
            "{mode:?} {generations:?}: allocated during marking: {marking}; first cycle marked {}",
            first.objects_marked
        );
    }
}
