//! The roots of a collection: the binding's global and mutator roots, the
//! mutators' shadow stacks, the runtime's own handles and pins ([`RootRegistry`](crate::roots::RootRegistry)),
//! the objects queued for finalization, and in a young collection the
//! slots the store barrier remembered.
//! Marking starts from them; the update phase visits them again.

use super::binding_panic::call_model;
use super::cycle::{Cycle, RootedPages};
use super::heap::GcHeap;
use super::mark::Marker;
use super::meta::HeapMap;
use crate::GcError;
use crate::vm::{Binding, ObjectReference, Slot};
use hotmem_os::Address;
use std::sync::atomic::Ordering;

/// The binding's slots at the addresses the store barrier remembered, those
/// that lie in the used part of an old page (the others cannot hold an old
/// object's reference to a young one). `None` if the binding cannot
/// rebuild slots ([`Binding::slot_at`]).
pub(super) fn rebuild_slots<B: Binding>(
    binding: &B,
    map: &HeapMap,
    addresses: &[usize],
) -> Result<Option<Vec<B::Slot>>, GcError> {
    // One unwind guard for the whole list, not one per slot.
    call_model(|| {
        let mut slots = Vec::with_capacity(addresses.len());
        for &a in addresses {
            let Some(pi) = map.page_of(a) else { continue };
            let p = &map.pages[pi];
            if p.young || a % 8 != 0 || a < p.start || a.saturating_add(8) > p.top {
                continue;
            }
            slots.push(binding.slot_at(Address::new(a))?);
        }
        Some(slots)
    })
}

impl<B: Binding> Cycle<'_, B> {
    /// Marks from every root: the binding's global and mutator roots, the
    /// slots the store barrier remembered, the runtime's handles and pins
    /// (whose pages are then pinned: never evacuated).
    pub(super) fn mark_roots(&self, marker: &Marker<'_, B>) -> Result<(), GcError> {
        let mut error = None;
        let note = self.rooted_pages == RootedPages::Budgeted;
        let mut rooted = Vec::new();
        let mut visit = |slot: B::Slot| {
            if error.is_none() {
                if let Some(r) = slot.load() {
                    error = marker.mark_root(r, Some(slot.address())).err();
                    if note {
                        rooted.push(r);
                    }
                }
            }
        };
        call_model(|| {
            self.binding.scan_global_roots(&mut visit);
            for m in self.heap.roots.mutators() {
                self.binding.scan_mutator_roots(m, &mut visit);
            }
        })?;
        self.scan_shadow_stacks(&mut visit)?;
        for slot in &self.barrier_slots {
            visit(*slot);
        }
        if let Some(e) = error {
            return Err(e);
        }
        for table in self.heap.roots.tables() {
            table.for_each(|r| {
                if error.is_none() {
                    error = marker.mark_root(*r, None).err();
                    if note {
                        rooted.push(*r);
                    }
                }
            });
        }
        self.heap.refs.finalizers.for_each_queued(|r| {
            if error.is_none() {
                error = marker.mark_root(*r, None).err();
                if note {
                    rooted.push(*r);
                }
            }
        });
        *self.rooted.lock() = rooted;
        for r in self.heap.roots.pins.snapshot() {
            if error.is_none() {
                error = marker.mark_root(r, None).err();
                if let Ok((pi, _)) = self.map.locate(r) {
                    self.map.pages[pi].pinned.store(true, Ordering::Relaxed);
                }
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Updates every root whose object moved (the remembered slots are
    /// updated with the other slots, on the workers).
    pub(super) fn update_roots(&self) -> Result<(), GcError> {
        update_roots(self.binding, self.heap, |r| self.forwarded(r))
    }

    /// Visits every word in use of every shadow stack, as the binding's
    /// slot at its address.
    fn scan_shadow_stacks(&self, visit: &mut impl FnMut(B::Slot)) -> Result<(), GcError> {
        scan_shadow_stacks(self.binding, self.heap, visit)
    }
}

/// Gives every root of `heap` whose object moved its new address:
/// `forwarded(r)` is where `r`'s object is now, `None` if it did not move.
/// The binding's global and mutator roots, the shadow stacks, the handles
/// and the queue of finalizable objects (the mutators are stopped).
///
/// Every kind of root is updated, each in its own call: a binding
/// callback that panics stops its own scan only, and the first error is
/// returned after all of them (the caller poisons the runtime: the roots
/// that scan did not reach still name old copies).
pub(crate) fn update_roots<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    forwarded: impl Fn(ObjectReference) -> Option<ObjectReference>,
) -> Result<(), GcError> {
    let mut visit = |slot: B::Slot| {
        if let Some(t) = slot.load() {
            if let Some(n) = forwarded(t) {
                slot.store(n);
            }
        }
    };
    let mut first = call_model(|| binding.scan_global_roots(&mut visit)).err();
    for m in heap.roots.mutators() {
        let scanned = call_model(|| binding.scan_mutator_roots(m, &mut visit));
        first = first.or(scanned.err());
    }
    first = first.or(scan_shadow_stacks(binding, heap, &mut visit).err());
    let update = |r: &mut ObjectReference| {
        if let Some(n) = forwarded(*r) {
            *r = n;
        }
    };
    for table in heap.roots.tables() {
        table.for_each(update);
    }
    heap.refs.finalizers.for_each_queued(update);
    first.map_or(Ok(()), Err)
}

/// Visits every word in use of every shadow stack of `heap`, as the
/// binding's slot at its address.
/// Every stack is visited, each in its own call: the first error is
/// returned after all of them.
fn scan_shadow_stacks<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    visit: &mut impl FnMut(B::Slot),
) -> Result<(), GcError> {
    let mut first = None;
    for stack in heap.roots.stacks() {
        let scanned = call_model(|| {
            for word in stack.words_in_use() {
                match binding.slot_at(word) {
                    Some(slot) => visit(slot),
                    None => return Err(GcError::ShadowStackWithoutSlotAt),
                }
            }
            Ok(())
        })
        .and_then(|r| r);
        first = first.or(scanned.err());
    }
    first.map_or(Ok(()), Err)
}
