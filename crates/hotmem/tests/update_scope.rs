//! Which slots a collection updates: when only young pages (objects
//! allocated since the last collection) are evacuated, the slots marking
//! remembered plus the moved objects; when an old page moves too, every
//! live object. Both must leave the same graph: old objects that refer to
//! new ones are the case the remembered slots exist for.

use hotmem::UpdateScope;
use hotmem::objects::{Ids, SimpleObjects, build};

mod common;
use common::{HOLDER_SLOTS, garbage, holder_and_young, moved, young_into_holder};

#[test]
fn old_objects_referring_to_moved_young_ones_are_updated_through_remembered_slots() {
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(1))
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
    let young = young_into_holder(&mut me, &roots, &mut ids);
    let holder_before = roots.get(0).unwrap();
    let second = me.collect().unwrap();
    let UpdateScope::Remembered { slots } = second.update_scope else {
        panic!("only young pages moved: {second:?}");
    };
    assert!(slots >= HOLDER_SLOTS as u64, "{second:?}");
    let holder = roots.get(0).unwrap();
    assert_eq!(holder, holder_before, "the old holder did not move");
    // SAFETY: the holder is live, no collection runs meanwhile.
    let moved = unsafe { moved(holder, &young) };
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
