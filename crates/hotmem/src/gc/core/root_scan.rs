//! The roots phase of every collector: marking from every root, and
//! giving every root whose object moved its new address.
//!
//! The roots are the binding's (its hooks [`Binding::scan_global_roots`],
//! [`Binding::scan_mutator_roots`], and [`Binding::slot_at`] for the
//! words of shadow stacks and the remembered slots), the runtime's own
//! (handles, pins, shadow stacks: [`roots`](crate::roots)), the binding's
//! root tables ([`Binding::root_tables`]), the objects queued for
//! finalization, and in a young collection the slots the store barrier
//! remembered. Marking starts from them; the update visits them again. A
//! concurrent cycle visits the tables (handles and the binding's) after
//! its pauses instead ([`root_tables`](super::root_tables)).

use super::binding_panic::call_model;
use super::collection::Collection;
use super::heap::GcHeap;
use super::mark::{MarkPolicy, Marker};
use super::meta::HeapMap;
use super::root_tables::{RootTableVisit, binding_tables};
use crate::GcError;
use crate::roots::table_gc::GcTable;
use crate::vm::{Binding, ObjectReference, Slot};
use hotmem_os::Address;
use std::sync::atomic::Ordering;

/// The binding's slots at the addresses the store barrier remembered, those
/// that lie in the used part of an old page (the others cannot hold an old
/// object's reference to a young one). `None` if the binding cannot
/// rebuild slots ([`Binding::slot_at`]).
pub(crate) fn rebuild_slots<B: Binding>(
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

impl<B: Binding> Collection<'_, B> {
    /// Marks from every root: the binding's global and mutator roots, the
    /// shadow stacks, `remembered` (the slots the store barrier remembered,
    /// rebuilt: a young collection's), the runtime's handles and the
    /// binding's root tables unless `tables` leaves them for after the
    /// pause, the queue of finalizable objects, and the pins (whose pages
    /// are then pinned: never evacuated). `on_root` sees each object these
    /// roots refer to, but the pins' (a pinned object never moves).
    pub(crate) fn mark_roots<P: MarkPolicy>(
        &self,
        marker: &Marker<'_, B, P>,
        remembered: &[B::Slot],
        tables: RootTableVisit,
        mut on_root: impl FnMut(ObjectReference),
    ) -> Result<(), GcError> {
        let mut error = None;
        let mut visit = |slot: B::Slot| {
            if error.is_none() {
                if let Some(r) = slot.load() {
                    error = marker.mark_root(r, Some(slot.address())).err();
                    on_root(r);
                }
            }
        };
        call_model(|| {
            self.binding.scan_global_roots(&mut visit);
            for m in self.heap.roots.mutators() {
                self.binding.scan_mutator_roots(m, &mut visit);
            }
        })?;
        scan_shadow_stacks(self.binding, self.heap, &mut visit)?;
        for slot in remembered {
            visit(*slot);
        }
        if let Some(e) = error {
            return Err(e);
        }
        if tables == RootTableVisit::InPause {
            let mut mark = |r: ObjectReference| {
                if error.is_none() {
                    error = marker.mark_root(r, None).err();
                    on_root(r);
                }
            };
            for table in self.heap.roots.tables() {
                table.for_each_word(|r| r.iter().for_each(|r| mark(*r)));
            }
            for table in binding_tables(self.binding)? {
                table.for_each_word(|r| r.iter().for_each(|r| mark(*r)));
            }
        }
        self.heap.weak.finalizers.for_each_queued(|r| {
            if error.is_none() {
                error = marker.mark_root(*r, None).err();
                on_root(*r);
            }
        });
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
}

/// Gives every root of `heap` whose object moved its new address:
/// `forwarded(r)` is where `r`'s object is now, `None` if it did not move.
/// The binding's global and mutator roots, the shadow stacks, the handles
/// and the binding's root tables unless `tables` leaves them for after the
/// pause, and the queue of finalizable objects (the mutators are stopped).
///
/// Every kind of root is updated, each in its own call: a binding
/// callback that panics stops its own scan only, and the first error is
/// returned after all of them (the caller poisons the runtime: the roots
/// that scan did not reach still name old copies).
pub(crate) fn update_roots<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    tables: RootTableVisit,
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
    if tables == RootTableVisit::InPause {
        for table in heap.roots.tables() {
            table.for_each_word(|r| r.iter_mut().for_each(update));
        }
        match binding_tables(binding) {
            Ok(ts) => ts
                .iter()
                .for_each(|t| t.for_each_word(|r| r.iter_mut().for_each(update))),
            Err(e) => first = first.or(Some(e)),
        }
    }
    heap.weak.finalizers.for_each_queued(update);
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
