//! The runtime's weak sets through real collections of every collector:
//! an entry is gone exactly when its object dies, found at the object's
//! current address when it moved, and a lookup racing concurrent cycles
//! never hands out a dead or stale object.

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{
    CollectionKind, CollectorMode, Generations, Mutator, ObjectReference, Runtime, WeakSet,
    WeakSetError,
};
use std::time::Duration;

mod common;

/// The id in an object's header.
fn id_of(obj: ObjectReference) -> u64 {
    // SAFETY: the tests call this only on objects the set handed out (live,
    // at their current address), with no collection since.
    unsafe { SimpleObjects::header(obj)[1] }
}

/// The hash the tests intern an id under: deliberately colliding.
fn hash(id: u64) -> u64 {
    id % 97
}

fn find(me: &Mutator, set: &WeakSet, id: u64) -> Option<ObjectReference> {
    set.find(me, hash(id), |o| id_of(o) == id)
        .expect("outside collections")
}

fn runtime(
    mode: CollectorMode,
    generations: Generations,
    objects: &std::sync::Arc<SimpleObjects>,
) -> Runtime {
    common::builder(64 << 20, Some(2))
        .collector(mode)
        .generations(generations)
        .binding(objects.clone())
        .build()
        .expect("a runtime")
}

#[test]
fn an_entry_goes_when_its_object_dies_and_follows_it_when_it_moves() {
    let mut moved_somewhere = 0;
    let non_moving = (
        CollectorMode::ConcurrentNonMoving,
        Generations::Single,
        CollectionKind::Full,
    );
    for (mode, generations, kind) in common::EVERY_COLLECTION.into_iter().chain([non_moving]) {
        let what = format!("{mode:?} {generations:?} {kind:?}");
        let objects = SimpleObjects::new();
        let rt = runtime(mode, generations, &objects);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let set = rt.weak_set();
        let mut ids = Ids::from(1 << 40);
        // Every third object rooted; the others only in the set, among
        // garbage, so that the survivors' pages are sparse and evacuated.
        let mut rooted = Vec::new();
        let n = 3000u64;
        for id in 1..=n {
            let obj = build::object(&mut me, &roots, 0, 2, id).unwrap();
            set.insert(&me, hash(id), obj).unwrap();
            if id % 3 == 0 {
                rooted.push((id, roots.len() - 1, obj.get()));
            } else {
                roots.pop();
            }
            build::garbage(&mut me, &roots, 8, &mut ids).unwrap();
        }
        assert_eq!(set.len(), n as usize, "{what}");
        let stats = common::collect(&mut me, kind);
        let dead = n - n / 3;
        assert_eq!(stats.refs.weak_set.found, n, "{what}");
        assert_eq!(stats.refs.weak_set.cleared, dead, "{what}");
        assert_eq!(set.len(), (n / 3) as usize, "{what}");
        for id in (1..=n).filter(|id| id % 3 != 0) {
            assert_eq!(find(&me, &set, id), None, "{what}: {id} died");
        }
        for &(id, index, before) in &rooted {
            let now = roots.get(index).expect("rooted");
            assert_eq!(
                find(&me, &set, id),
                Some(now),
                "{what}: {id} at its address"
            );
            if now.get() != before {
                moved_somewhere += 1;
            }
        }
        // Once more: nothing more dies, nothing is found twice.
        let stats = common::collect(&mut me, kind);
        assert_eq!(stats.refs.weak_set.cleared, 0, "{what}");
        for &(id, index, _) in &rooted {
            assert_eq!(find(&me, &set, id), roots.get(index), "{what}: {id}");
        }
    }
    assert!(moved_somewhere > 0, "some collection moved a survivor");
}

#[test]
fn a_set_refuses_what_is_not_in_the_heap_another_runtimes_mutator_and_a_dropped_set_is_forgotten() {
    let objects = SimpleObjects::new();
    let rt = runtime(CollectorMode::Concurrent, Generations::Single, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let set = rt.weak_set();
    let outside = ObjectReference::from_address(hotmem::Address::new(0x1000)).unwrap();
    assert_eq!(
        set.insert(&me, 1, outside),
        Err(WeakSetError::NotInHeap(outside))
    );
    assert!(set.is_empty(), "nothing added");
    let elsewhere = runtime(
        CollectorMode::StopTheWorld,
        Generations::Single,
        &SimpleObjects::new(),
    );
    let stranger = std::thread::scope(|s| {
        s.spawn(|| {
            let them = elsewhere.attach_mutator().unwrap();
            set.find(&them, 1, |_| true)
        })
        .join()
        .unwrap()
    });
    assert_eq!(stranger, Err(WeakSetError::OtherRuntime));
    let other = rt.weak_set();
    let roots = objects.root_table();
    let obj = build::object(&mut me, &roots, 0, 2, 7).unwrap();
    other.insert(&me, 7, obj).unwrap();
    drop(other);
    let stats = me.collect().unwrap();
    assert_eq!(stats.refs.weak_set.found, 0, "a dropped set is not swept");
}

#[test]
fn the_equality_may_call_the_set_and_panic() {
    let objects = SimpleObjects::new();
    let rt = runtime(CollectorMode::Concurrent, Generations::Single, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let set = rt.weak_set();
    let a = build::object(&mut me, &roots, 0, 2, 1).unwrap();
    let b = build::object(&mut me, &roots, 0, 2, 2).unwrap();
    set.insert(&me, 5, a).unwrap();
    // Re-entered from the equality: no lock is held there.
    let found = set
        .find(&me, 5, |o| {
            set.insert(&me, 5, b).unwrap();
            assert_eq!(set.find(&me, 99, |_| true).unwrap(), None);
            assert_eq!(set.find_detached(98, |_| true).unwrap(), None);
            me.poll();
            o == a
        })
        .unwrap();
    assert_eq!(found, Some(a));
    assert_eq!(set.len(), 2);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        set.find(&me, 5, |_| panic!("the embedder's equality panics"))
    }));
    assert!(caught.is_err());
    // Still usable, and a collection still processes it.
    assert_eq!(set.find(&me, 5, |o| o == b).unwrap(), Some(b));
    me.collect().unwrap();
    assert_eq!(set.len(), 2);
}

/// An interning loop on the concurrent collectors, in a heap small enough
/// that cycles run throughout: every object a lookup returns is the one
/// asked for (a dead one, freed and reused, or an old copy would carry
/// another id or a stale address), and another thread's lookups race it.
#[test]
fn interning_while_concurrent_cycles_run_hands_out_only_live_current_objects() {
    for generations in [Generations::Single, Generations::YoungAndOld] {
        common::with_deadline("interning", Duration::from_secs(120), move || {
            let objects = SimpleObjects::new();
            let rt = common::builder(24 << 20, Some(2))
                .collector(CollectorMode::Concurrent)
                .generations(generations)
                .binding(objects.clone())
                .build()
                .expect("a runtime");
            let set = rt.weak_set();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let racer = {
                let (set, stop) = (set.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut lookups = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // Not a mutator: compares addresses only.
                        let _ = set.find_detached(lookups % 97, |_| false).unwrap();
                        lookups += 1;
                    }
                    lookups
                })
            };
            let mut me = rt.attach_mutator().unwrap();
            let roots = objects.root_table();
            let (mut found, mut made) = (0u64, 0u64);
            let mut ids = Ids::from(1 << 40);
            for round in 0..60_000u64 {
                // Ids repeat within a window: many lookups find.
                let id = 1 + (round * 7919) % 300;
                match find(&me, &set, id) {
                    Some(obj) => {
                        assert_eq!(id_of(obj), id, "round {round}");
                        found += 1;
                    }
                    None => {
                        let obj = build::object(&mut me, &roots, 0, 6, id).unwrap();
                        set.insert(&me, hash(id), obj).unwrap();
                        made += 1;
                        // A few stay rooted a while.
                        if roots.len() > 64 {
                            roots.truncate(0);
                        }
                    }
                }
                if round % 16 == 0 {
                    build::garbage(&mut me, &roots, 256, &mut ids).unwrap();
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let lookups = racer.join().unwrap();
            let cycles = rt.gc_totals().cycles;
            assert!(
                found > 0 && made > 0 && lookups > 0,
                "{found} {made} {lookups}"
            );
            assert!(cycles > 2, "{generations:?}: cycles ran ({cycles})");
        });
    }
}
