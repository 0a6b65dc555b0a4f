//! The stop-the-world update phase: every slot and root that may refer to
//! a moved object gets the object's new address, in the pause, and so do
//! the weak references that survived.
//!
//! When every evacuated page was young, those slots are the ones marking
//! remembered (they referred into young pages) plus the slots of the moved
//! objects themselves; otherwise every slot of every live object.

use super::stw_cycle::{ON_THIS_THREAD, ON_THIS_THREAD_BYTES, StwCycle};
use crate::GcError;
use crate::gc::core::binding_panic::panic_message;
use crate::gc::core::in_collection;
use crate::gc::core::phases::GcPhase;
use crate::gc::core::root_scan::update_roots;
use crate::gc::core::root_tables::RootTableVisit;
use crate::gc::core::stats::UpdateScope;
use crate::gc::core::weak_processing::forward_weak_refs;
use crate::gc::core::workers::GcWorkers;
use crate::vm::{Binding, Forwarder, ObjectReference, Slot};
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

impl<B: Binding> StwCycle<'_, B> {
    /// Updates the slots that may refer to a moved object on the workers,
    /// then every root. On an error some slots and roots may still point
    /// into the evacuated pages while others point at the copies: the
    /// pages are kept (not freed) and the caller poisons the runtime.
    pub(super) fn update_references(&mut self, workers: &mut GcWorkers) -> Result<(), GcError> {
        if !self.c.forwarding.any() {
            // Nothing moved: no slot or root refers to a moved object.
            self.c.stats.update_scope = UpdateScope::Nothing;
            return Ok(());
        }
        let running = self.times.start(GcPhase::UpdateReferences);
        let items = self.update_items();
        let this = &*self;
        let update = |item| {
            let _inside = in_collection::enter(this.c.heap);
            catch_unwind(AssertUnwindSafe(|| match item {
                UpdateItem::Page(pi) => this.update_page(pi),
                UpdateItem::Slots(slots) => this.update_slots(&slots),
            }))
            .map_err(|p| GcError::ObjectModelPanicked(panic_message(&*p)))
        };
        let (visits, bytes) = (items.iter())
            .map(|(_, item)| match item {
                UpdateItem::Page(pi) => {
                    let live = &this.c.map.pages[*pi].live;
                    (live.live_objects() as u64, live.live_bytes())
                }
                UpdateItem::Slots(slots) => (slots.len() as u64, slots.len() * 8),
            })
            .fold((0u64, 0usize), |(v, b), (iv, ib)| (v + iv, b + ib));
        // Few objects and slots, and few bytes of objects to read slots
        // from: visited here, without waking the workers.
        let few = visits <= ON_THIS_THREAD && bytes <= ON_THIS_THREAD_BYTES;
        let (updated, _) = match few {
            true => workers.run_few(items, update)?,
            false => workers.run(items, update)?,
        };
        let result = match updated.into_iter().find_map(Result::err) {
            Some(e) => Err(e),
            None => update_roots(self.c.binding, self.c.heap, RootTableVisit::InPause, |r| {
                self.forwarded(r)
            }),
        };
        self.times.stop(running);
        result
    }

    /// The update phase's items, and its scope in the statistics.
    fn update_items(&mut self) -> Vec<(NodeId, UpdateItem<B::Slot>)> {
        let remembered = std::mem::take(&mut self.remembered);
        let barrier_slots = std::mem::take(&mut self.barrier_slots);
        let c = &mut self.c;
        if !c.forwarding.any() {
            c.stats.update_scope = UpdateScope::Nothing;
            return Vec::new();
        }
        let only_young = c.forwarding.pages().all(|pi| c.map.pages[pi].young);
        if !only_young {
            c.stats.update_scope = UpdateScope::AllLiveObjects;
            return (c.map.pages.iter().enumerate())
                .filter(|(_, p)| p.live.live_objects() > 0)
                .map(|(pi, p)| (p.page.node(), UpdateItem::Page(pi)))
                .collect();
        }
        let slots = remembered.iter().map(|v| v.len() as u64).sum::<u64>();
        c.stats.update_scope = UpdateScope::Remembered {
            slots: slots + barrier_slots.len() as u64,
        };
        let c = &self.c;
        let pages = c
            .forwarding
            .pages()
            .map(|pi| (c.map.pages[pi].page.node(), UpdateItem::Page(pi)));
        let lists = (remembered.into_iter())
            .chain(std::iter::once(barrier_slots))
            .filter(|v| !v.is_empty())
            .enumerate()
            .map(|(i, v)| (c.node_of(i), UpdateItem::Slots(v)));
        pages.chain(lists).collect()
    }

    /// The current address of `r`: its forwarding, or `None` if it did not
    /// move. A reference into an evacuated page that marking did not see is
    /// counted as inconsistent and keeps its page.
    #[inline]
    fn forwarded(&self, r: ObjectReference) -> Option<ObjectReference> {
        let (map, forwarding) = (&self.c.map, &self.c.forwarding);
        let (pi, wi) = map.locate(r).ok()?;
        let f = forwarding.get(pi)?;
        match f.lookup(wi) {
            Some(to) => ObjectReference::from_address(to),
            None => {
                if !map.pages[pi].live.is_marked(wi) {
                    // Not an object marking found: the binding reported a
                    // slot now that it did not report during marking (or a
                    // handle was changed by a running thread). Keep the page.
                    map.pages[pi].keep.store(true, Ordering::Relaxed);
                    self.inconsistent.fetch_add(1, Ordering::Relaxed);
                }
                None
            }
        }
    }

    /// Updates every slot of every live object of page `pi` (at its new
    /// address if it moved).
    fn update_page(&self, pi: usize) {
        let p = &self.c.map.pages[pi];
        let f = self.c.forwarding.get(pi);
        let mut visit = |slot: B::Slot| {
            if let Some(t) = slot.load() {
                if let Some(n) = self.forwarded(t) {
                    slot.store(n);
                }
            }
        };
        // The relocation phase already walked this map without an overlap.
        let _ = p.live.for_each_object(|s, _| {
            let here = self.c.map.address(pi, s);
            let at = f.and_then(|f| f.lookup(s)).map_or(here, |to| to.get());
            if let Some(obj) = ObjectReference::from_address(Address::new(at)) {
                self.c.binding.scan_object(obj, &mut visit);
            }
        });
    }

    /// Updates remembered slots, except those inside an evacuated page
    /// (their objects moved, and the copies are updated whole).
    fn update_slots(&self, slots: &[B::Slot]) {
        for slot in slots {
            let holder = self.c.map.page_of(slot.address().get());
            if holder.is_some_and(|pi| self.c.forwarding.get(pi).is_some()) {
                continue;
            }
            if let Some(t) = slot.load() {
                if let Some(n) = self.forwarded(t) {
                    slot.store(n);
                }
            }
        }
    }

    /// After the update: the runtime's weak handles, ephemerons and
    /// registered finalizers follow their moved objects (the queue of
    /// finalizable objects is a root, updated with the others), and the
    /// binding forwards its own weak references.
    pub(super) fn forward_weak_refs(&mut self) -> Result<(), GcError> {
        if !self.c.forwarding.any() {
            return Ok(());
        }
        let start = Instant::now();
        let result =
            forward_weak_refs(self.c.binding, self.c.heap, &*self, RootTableVisit::InPause);
        self.c.stats.refs.ns += start.elapsed().as_nanos() as u64;
        result
    }
}

impl<B: Binding> Forwarder for StwCycle<'_, B> {
    /// `obj`'s new address, or `obj` if it did not move.
    fn forwarded(&self, obj: ObjectReference) -> ObjectReference {
        StwCycle::forwarded(self, obj).unwrap_or(obj)
    }
}
