//! What a young cycle that evacuates leaves to the next one: its
//! survivors age, or become old, and every slot of the promoted ones that
//! may refer to a young object is remembered.
//!
//! Such a cycle keeps the young pages young for the store barrier until
//! Pause Relocate Start, so that a store into an old object of a reference
//! to an object it may move is remembered meanwhile (its slot must be
//! healed before the cycle's relocation set leaves the load barrier, and
//! only the remembered slots of old objects are visited by the next young
//! marking). In that pause the young pages that stay (not in the set) age
//! by a cycle, and those that survived [`TENURING_THRESHOLD`] cycles (one,
//! when the cycle found most of the young bytes live) are made old
//! ([`promote_in_place`]); the copies are old from their
//! publication (`publish_copy`): an object evacuated from a young page is
//! promoted at once (no survivor space yet). After the relocation, the
//! slots of every promoted survivor, where it stayed or its copy, that hold
//! a reference into a page still young (allocated during the cycle, or one the cycle
//! evacuated: a stale reference the next marking heals) are remembered,
//! with the slots the cycle marked from ([`remember_survivors`]): the
//! survivors' slots were written before the pause without the barrier
//! seeing an old object, and copies carry their originals' references.
//!
//! Generational ZGC has the same duty: its young collection rebuilds the
//! remembered set of the pages it promotes (ZGC's "remset scan" of
//! promoted objects); here it is one walk of the survivors on the GC
//! thread.

use crate::GcError;
use crate::gc::barriers::RememberedSet;
use crate::gc::core::binding_panic::call_model;
use crate::gc::core::meta::HeapMap;
use crate::gc::core::relocation_set::RelocationSet;
use crate::gc::core::stats::YoungSurvival;
use crate::vm::{Binding, ObjectReference, Slot};
use hotmem_os::Address;

/// Young cycles a page that stays where it is survives before it is
/// promoted (its objects become old), while most of the young generation
/// dies. A page promoted at its first survival promotes the objects that
/// were merely in use when the cycle ran: binary_trees' trees of depth 16
/// to 20, promoted while being built and dead soon after, filled the heap
/// with old garbage that only full cycles reclaim (12 young cycles in a row
/// freeing nothing). Generational ZGC ages pages too (survivor ages, a
/// tenuring threshold).
pub(super) const TENURING_THRESHOLD: u8 = 2;

/// A young cycle that finds at least this share of the young generation's
/// bytes live (numerator, denominator) promotes the pages it keeps at
/// their first survival. The young generation is then mostly a structure
/// being built to last (binary_trees' 512 MiB long-lived tree: 86-100% of
/// the young bytes live at each cycle that ran while it grew), and ageing
/// it only makes the next young cycle mark all of it again: each such
/// cycle took 0.6-1.1 s, and the mutator stalled meanwhile. In the
/// workloads whose young objects mostly die, the share stays far below:
/// binary_trees at depth 20 in 256 MiB, where the trees being built when
/// a cycle runs are what first-survival promotion got wrong, finds
/// 0-29% live after its first cycles; the demo 0-46% (one cycle in 330
/// found 73%).
const DENSE_SURVIVAL: (usize, usize) = (1, 2);

/// What a young cycle found live in the young pages of `map` (those of
/// the relocation set included), and so the tenuring threshold it
/// promotes by.
fn survival(map: &HeapMap) -> YoungSurvival {
    let (mut live_bytes, mut used_bytes) = (0usize, 0usize);
    for p in map.pages.iter().filter(|p| p.young) {
        live_bytes += p.live.live_bytes();
        used_bytes += p.top - p.start;
    }
    let (num, den) = DENSE_SURVIVAL;
    let dense = used_bytes > 0 && live_bytes.saturating_mul(den) >= used_bytes.saturating_mul(num);
    YoungSurvival {
        live_bytes,
        used_bytes,
        tenuring_threshold: if dense { 1 } else { TENURING_THRESHOLD },
        ..YoungSurvival::default()
    }
}

/// In Pause Relocate Start (the mutators stopped, so that no store races
/// the change): every page of `map` that was young at mark start, has live
/// objects and is not in `set` ages by one young cycle, and becomes old
/// for the store barrier once it has survived the cycle's tenuring
/// threshold ([`TENURING_THRESHOLD`], or 1 when the cycle found most young
/// bytes live, see [`DENSE_SURVIVAL`]). The set's pages stay young: their
/// objects are copied (an object that could not be copied stays, and its
/// page with it, young until a later cycle). Returns, per page of `map`,
/// whether it became old, and what the cycle found and did.
pub(super) fn promote_in_place(
    map: &HeapMap,
    set: Option<&RelocationSet>,
    remembered: &RememberedSet,
) -> (Vec<bool>, YoungSurvival) {
    let old = &remembered.old;
    let mut found = survival(map);
    let mut promoted = vec![false; map.pages.len()];
    for (pi, p) in map.pages.iter().enumerate() {
        let stays = !set.is_some_and(|s| s.contains_page(pi));
        if p.young && stays && p.live.live_objects() > 0 {
            let (start, len) = (p.page.range().start().get(), p.page.size());
            let survived = old.survived(start).saturating_add(1);
            if survived >= found.tenuring_threshold {
                old.mark(start, len);
                promoted[pi] = true;
                found.pages_promoted += 1;
            } else {
                old.set_survived(start, len, survived);
                found.pages_aged += 1;
            }
        }
    }
    (promoted, found)
}

/// Which survivors [`remember_survivors`] visits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Survivors {
    /// A young cycle's: the copies of the objects of the young pages it
    /// evacuated, and the objects of the young pages it promoted where
    /// they are (`true` per page of the map, from [`promote_in_place`]).
    /// A young page that stays young needs no visit: its objects' slots
    /// into young pages are young-to-young references.
    Young(Vec<bool>),
    /// A full cycle's: the copies of the objects it relocated. The store
    /// barrier remembered the slots of those objects written during the
    /// cycle at their old addresses, which the next cycle drops (see
    /// [`drop_moved_slots`]): the copies' slots are remembered instead.
    Copied,
}

/// After the relocation (every live object of `set` copied): remembers
/// every slot of the `which` survivors of `map` (where they stayed, or
/// their copies) that holds a reference into a young page, and the slots
/// the cycle marked from (`snapshot`), for the next cycle. A binding
/// callback that panics is the error returned (the runtime is poisoned by
/// the caller: a slot may have been left unremembered).
pub(super) fn remember_survivors<B: Binding>(
    binding: &B,
    map: &HeapMap,
    set: Option<&RelocationSet>,
    which: Survivors,
    remembered: &RememberedSet,
    snapshot: Vec<usize>,
) -> Result<(), GcError> {
    let old = &remembered.old;
    let mut slots = snapshot;
    call_model(|| {
        for (pi, p) in map.pages.iter().enumerate() {
            let copied = set.is_some_and(|s| s.contains_page(pi));
            let visit = match &which {
                Survivors::Young(promoted) => p.young && (copied || promoted[pi]),
                Survivors::Copied => copied,
            };
            if !visit {
                continue;
            }
            let moved = set.filter(|s| s.contains_page(pi));
            // Marking recorded every object's end: no overlap to report
            // here (marking would have).
            let _ = p.live.for_each_object(|start, _| {
                let at = Address::new(map.address(pi, start));
                let Some(r) = ObjectReference::from_address(at) else {
                    return;
                };
                let survivor = moved.and_then(|s| s.forwarded(pi, r)).unwrap_or(r);
                binding.scan_object(survivor, &mut |slot: B::Slot| {
                    if slot.load().is_some_and(|v| old.is_young(v.get())) {
                        slots.push(slot.address().get());
                    }
                });
            });
        }
    })?;
    remembered.remember_all(slots);
    Ok(())
}

/// At mark start, of the remembered slot `addresses`: drops those that lie
/// in a page of the last full cycle's relocation set (`full`). They were
/// written before that cycle copied their objects, and the copies' slots
/// were remembered instead ([`Survivors::Copied`]); read at the old
/// address, a slot would be marked from but its copy never healed.
pub(super) fn drop_moved_slots(addresses: &mut Vec<usize>, full: Option<&RelocationSet>) {
    if let Some(set) = full {
        addresses.retain(|&a| set.page_in_set(a).is_none());
    }
}
