//! What the update-scope and generations tests share: an old holder object
//! whose slots are given young objects, each among garbage.

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{Mutator, ObjectReference};

/// Slots of the holder object, each given a young object.
pub(crate) const HOLDER_SLOTS: usize = 64;

/// `kib` KiB of garbage (see [`build::garbage`]).
pub(crate) fn garbage(me: &mut Mutator, roots: &RootTable, ids: &mut Ids, kib: usize) {
    build::garbage(me, roots, kib, ids).unwrap();
}

/// One young object per slot of the holder at root 0, each followed by
/// 64 KiB of garbage, so that they spread over several young pages that
/// are then mostly garbage. Their ids and addresses, by slot.
pub(crate) fn young_into_holder(
    me: &mut Mutator,
    roots: &RootTable,
    ids: &mut Ids,
) -> Vec<(u64, ObjectReference)> {
    let mut young = Vec::new();
    for i in 0..HOLDER_SLOTS {
        let id = ids.next();
        let obj = build::object(me, roots, 0, 3, id).unwrap();
        roots.pop();
        let holder = roots.get(0).unwrap();
        // SAFETY: the holder is rooted and `obj` fresh; nothing collected
        // since either was read.
        unsafe { SimpleObjects::set_slot(me, holder, i, Some(obj)) };
        young.push((id, obj));
        garbage(me, roots, ids, 64);
    }
    young
}

/// How many of `young` the holder's slots no longer point at where they
/// were.
///
/// # Safety
/// `holder` is the live holder, and nothing collects while this runs.
pub(crate) unsafe fn moved(holder: ObjectReference, young: &[(u64, ObjectReference)]) -> usize {
    young
        .iter()
        .enumerate()
        .filter(|&(i, &(_, before))| {
            // SAFETY: the caller's contract.
            let now: ObjectReference = unsafe { SimpleObjects::slot(holder, i) }.unwrap();
            now != before
        })
        .count()
}

/// What the holder and the young objects it refers to sum up to.
pub(crate) fn holder_and_young(holder_id: u64, young_ids: &[u64]) -> GraphSummary {
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
