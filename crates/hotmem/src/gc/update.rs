//! The update phase: every slot and root that may refer to a moved object
//! gets the object's new address.
//!
//! When every evacuated page was young, those slots are the ones marking
//! remembered (they referred into young pages) plus the slots of the moved
//! objects themselves; otherwise every slot of every live object.

use super::binding_panic::panic_message;
use super::cycle::Cycle;
use super::in_collection;
use super::stats::UpdateScope;
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::{Binding, ObjectReference, Slot};
use hotmem_os::Address;
use hotmem_page::NodeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One piece of the update phase.
enum UpdateItem<S> {
    /// Every slot of every live object of a page (at its new address if
    /// it moved).
    Page(usize),
    /// Slots that marking remembered.
    Slots(Vec<S>),
}

impl<B: Binding> Cycle<'_, B> {
    /// Updates the slots that may refer to a moved object on the workers,
    /// then every root. On an error some slots and roots may still point
    /// into the evacuated pages while others point at the copies: the
    /// pages are kept (not freed) and the caller poisons the runtime.
    pub(super) fn update_references(&mut self, workers: &mut GcWorkers) -> Result<(), GcError> {
        if !self.forwarding.any() {
            // Nothing moved: no slot or root refers to a moved object.
            self.stats.update_scope = UpdateScope::Nothing;
            return Ok(());
        }
        let start = Instant::now();
        let items = self.update_items();
        let this = &*self;
        let (updated, _) = workers.run(items, |item| {
            let _inside = in_collection::enter(this.heap);
            catch_unwind(AssertUnwindSafe(|| match item {
                UpdateItem::Page(pi) => this.update_page(pi),
                UpdateItem::Slots(slots) => this.update_slots(&slots),
            }))
            .map_err(|p| GcError::ObjectModelPanicked(panic_message(&*p)))
        })?;
        let result = match updated.into_iter().find_map(Result::err) {
            Some(e) => Err(e),
            None => self.update_roots(),
        };
        self.stats.update_ns = start.elapsed().as_nanos() as u64;
        result
    }

    /// The update phase's items, and its scope in the statistics.
    fn update_items(&mut self) -> Vec<(NodeId, UpdateItem<B::Slot>)> {
        let remembered = std::mem::take(&mut self.remembered);
        let barrier_slots = std::mem::take(&mut self.barrier_slots);
        if !self.forwarding.any() {
            self.stats.update_scope = UpdateScope::Nothing;
            return Vec::new();
        }
        let only_young = self.forwarding.pages().all(|pi| self.map.pages[pi].young);
        if !only_young {
            self.stats.update_scope = UpdateScope::AllLiveObjects;
            return (self.map.pages.iter().enumerate())
                .filter(|(_, p)| p.live.live_objects() > 0)
                .map(|(pi, p)| (p.page.node(), UpdateItem::Page(pi)))
                .collect();
        }
        let slots = remembered.iter().map(|v| v.len() as u64).sum::<u64>();
        self.stats.update_scope = UpdateScope::Remembered {
            slots: slots + barrier_slots.len() as u64,
        };
        let pages = self
            .forwarding
            .pages()
            .map(|pi| (self.map.pages[pi].page.node(), UpdateItem::Page(pi)));
        let lists = (remembered.into_iter())
            .chain(std::iter::once(barrier_slots))
            .filter(|v| !v.is_empty())
            .enumerate()
            .map(|(i, v)| (self.node_of(i), UpdateItem::Slots(v)));
        pages.chain(lists).collect()
    }

    /// The current address of `r`: its forwarding, or `None` if it did not
    /// move. A reference into an evacuated page that marking did not see is
    /// counted as inconsistent and keeps its page.
    #[inline]
    pub(super) fn forwarded(&self, r: ObjectReference) -> Option<ObjectReference> {
        let (pi, wi) = self.map.locate(r).ok()?;
        let f = self.forwarding.get(pi)?;
        match f.lookup(wi) {
            Some(to) => ObjectReference::from_address(to),
            None => {
                if !self.map.pages[pi].live.is_marked(wi) {
                    // Not an object marking found: the binding reported a
                    // slot now that it did not report during marking (or a
                    // handle was changed by a running thread). Keep the page.
                    self.map.pages[pi].keep.store(true, Ordering::Relaxed);
                    self.inconsistent.fetch_add(1, Ordering::Relaxed);
                }
                None
            }
        }
    }

    /// Updates every slot of every live object of page `pi` (at its new
    /// address if it moved).
    fn update_page(&self, pi: usize) {
        let p = &self.map.pages[pi];
        let f = self.forwarding.get(pi);
        let mut visit = |slot: B::Slot| {
            if let Some(t) = slot.load() {
                if let Some(n) = self.forwarded(t) {
                    slot.store(n);
                }
            }
        };
        // The relocation phase already walked this map without an overlap.
        let _ = p.live.for_each_object(|s, _| {
            let here = self.map.address(pi, s);
            let at = f.and_then(|f| f.lookup(s)).map_or(here, |to| to.get());
            if let Some(obj) = ObjectReference::from_address(Address::new(at)) {
                self.binding.scan_object(obj, &mut visit);
            }
        });
    }

    /// Updates remembered slots, except those inside an evacuated page
    /// (their objects moved, and the copies are updated whole).
    fn update_slots(&self, slots: &[B::Slot]) {
        for slot in slots {
            let holder = self.map.page_of(slot.address().get());
            if holder.is_some_and(|pi| self.forwarding.get(pi).is_some()) {
                continue;
            }
            if let Some(t) = slot.load() {
                if let Some(n) = self.forwarded(t) {
                    slot.store(n);
                }
            }
        }
    }
}
