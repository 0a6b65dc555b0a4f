//! Which slots a collection updates: when only young pages (objects
//! allocated since the last collection) are evacuated, the slots marking
//! remembered plus the moved objects; when an old page moves too, every
//! live object. Both must leave the same graph: old objects that refer to
//! new ones are the case the remembered slots exist for.

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{Mutator, NumaConfig, ObjectReference, Runtime, UpdateScope};

/// Slots of the old holder object, each pointing at a young object.
const HOLDER_SLOTS: usize = 64;

/// `kib` KiB of garbage (see [`build::garbage`]).
fn garbage(me: &mut Mutator, roots: &RootTable, ids: &mut Ids, kib: usize) {
    build::garbage(me, roots, kib, ids).unwrap();
}

/// What the holder and the young objects it refers to sum up to.
fn holder_and_young(holder_id: u64, young_ids: &[u64]) -> GraphSummary {
    let mut sum = GraphSummary::default();
    sum.add(
        holder_id,
        SimpleObjects::size_for(HOLDER_SLOTS, 0),
        young_ids,
    );
    for &id in young_ids {
        sum.add(id, SimpleObjects::size_for(0, 3), &[]);
    }
    sum
}

#[test]
fn old_objects_referring_to_moved_young_ones_are_updated_through_remembered_slots() {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(64 << 20)
        .numa(NumaConfig::Off)
        .gc_workers(1)
        .binding(objects.clone())
        .build()
        .unwrap();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let mut ids = Ids::from(1);

    // Old: a holder with null slots and a list, interleaved with garbage
    // over several young pages; the first collection evacuates them all
    // (only young pages exist) and makes the survivors old.
    let holder_id = ids.next();
    build::object(&mut me, &roots, HOLDER_SLOTS, 0, holder_id).unwrap();
    garbage(&mut me, &roots, &mut ids, 3 << 10);
    let list = build::list(&mut me, &roots, 500, 2, true, &mut ids).unwrap();
    garbage(&mut me, &roots, &mut ids, 3 << 10);
    let first = me.collect().unwrap();
    assert!(
        matches!(first.update_scope, UpdateScope::Remembered { .. }),
        "{first:?}"
    );

    // Young: one object per holder slot, each between 64 KiB of garbage,
    // so that they spread over several young pages that are then mostly
    // garbage.
    let mut young = Vec::new();
    for _ in 0..HOLDER_SLOTS {
        let id = ids.next();
        let obj = build::object(&mut me, &roots, 0, 3, id).unwrap();
        roots.pop();
        let holder = roots.get(0).unwrap();
        // SAFETY: `holder` is rooted and `obj` fresh; no collection since
        // either was read.
        unsafe { SimpleObjects::set_slot(&me, holder, young.len(), Some(obj)) };
        young.push((id, obj));
        garbage(&mut me, &roots, &mut ids, 64);
    }
    let holder_before = roots.get(0).unwrap();
    let second = me.collect().unwrap();
    let UpdateScope::Remembered { slots } = second.update_scope else {
        panic!("only young pages moved: {second:?}");
    };
    assert!(slots >= HOLDER_SLOTS as u64, "{second:?}");
    let holder = roots.get(0).unwrap();
    assert_eq!(holder, holder_before, "the old holder did not move");
    let mut moved = 0;
    for (i, &(_, before)) in young.iter().enumerate() {
        // SAFETY: the holder is live, no collection runs meanwhile.
        let now: ObjectReference = unsafe { SimpleObjects::slot(holder, i) }.unwrap();
        moved += usize::from(now != before);
    }
    assert!(moved > HOLDER_SLOTS / 2, "{moved} young objects moved");

    // The whole graph is what was built, by shape, payload and identity.
    let young_ids: Vec<u64> = young.iter().map(|&(id, _)| id).collect();
    let mut want = holder_and_young(holder_id, &young_ids);
    want.merge(&list);
    // SAFETY: the only mutator; not collecting.
    assert_eq!(unsafe { objects.verify() }.unwrap(), want);

    // Old objects die: drop the list; its old pages (and the holder's) are
    // now sparse old pages, which the next collection packs, updating
    // every live object.
    roots.swap_remove(1);
    let mut scopes = Vec::new();
    for _ in 0..4 {
        build::list(&mut me, &roots, 20_000, 2, false, &mut ids).unwrap();
        scopes.push(me.collect().unwrap().update_scope);
        roots.pop();
    }
    let last = me.collect().unwrap();
    scopes.push(last.update_scope);
    assert!(
        scopes.contains(&UpdateScope::AllLiveObjects),
        "sparse old pages were packed: {scopes:?}"
    );
    let want = holder_and_young(holder_id, &young_ids);
    // SAFETY: as above.
    assert_eq!(unsafe { objects.verify() }.unwrap(), want);
    let totals = rt.gc_totals();
    assert!(totals.cycles >= 7, "{totals:?} {last:?}");
}
