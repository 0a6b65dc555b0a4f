//! The builder's defaults: the concurrent collector with young and old
//! generations, and what that asks of a binding (slots that
//! compare-and-swap: one whose slots cannot is refused with an error that
//! names the collector to choose instead).

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{
    Address, Binding, BuildError, CollectionKind, CollectorMode, Generations, NumaConfig,
    ObjectReference, Runtime, Slot, SlotVisitor,
};
use std::sync::Arc;

/// A slot that loads and stores but cannot compare-and-swap atomically
/// (its `COMPARE_EXCHANGE` is the default, `false`).
#[derive(Copy, Clone, Debug)]
struct PlainSlot(usize);

// SAFETY: `load` and `store` read and write the word at `self.0`, which a
// binding's slot names (this test's binding reports none).
unsafe impl Slot for PlainSlot {
    fn load(&self) -> Option<ObjectReference> {
        // SAFETY: the slot's word (never called: no slot is reported).
        ObjectReference::from_address(Address::new(unsafe { *(self.0 as *const usize) }))
    }
    fn store(&self, value: ObjectReference) {
        // SAFETY: as in `load`.
        unsafe { *(self.0 as *mut usize) = value.get() }
    }
    fn address(&self) -> Address {
        Address::new(self.0)
    }
}

/// Objects of 16 bytes with no reference slot.
struct Plain;

impl Binding for Plain {
    type Slot = PlainSlot;
    fn object_size(&self, _: ObjectReference) -> usize {
        16
    }
    fn scan_object<V: SlotVisitor<PlainSlot>>(&self, _: ObjectReference, _: &mut V) {}
}

#[test]
fn the_default_is_the_concurrent_generational_collector() {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .numa(NumaConfig::Off)
        .heap_max(64 << 20)
        .binding(objects.clone())
        .build()
        .unwrap();
    assert_eq!(rt.config().collector(), CollectorMode::Concurrent);
    assert_eq!(rt.config().generations(), Generations::YoungAndOld);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let kept = build::tree(&mut me, &roots, 8, 2, &mut ids).unwrap();
    build::garbage(&mut me, &roots, 1024, &mut ids).unwrap();
    assert_eq!(me.collect_young().unwrap().kind, CollectionKind::Young);
    let full = me.collect().unwrap();
    assert_eq!(full.kind, CollectionKind::Full);
    assert!(full.concurrent.is_some(), "a concurrent cycle: {full:?}");
    // SAFETY: the only mutator, which does not poll during the walk.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), kept);
}

#[test]
fn a_binding_whose_slots_cannot_compare_and_swap_is_told_which_collector_to_choose() {
    let refused = Runtime::builder()
        .numa(NumaConfig::Off)
        .binding(Arc::new(Plain))
        .build();
    let message = match refused {
        Err(e @ BuildError::Config(_)) => e.to_string(),
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    };
    assert!(message.contains("CollectorMode::StopTheWorld"), "{message}");
    let rt = Runtime::builder()
        .numa(NumaConfig::Off)
        .collector(CollectorMode::StopTheWorld)
        .binding(Arc::new(Plain))
        .build()
        .expect("the stop-the-world collector asks no compare-and-swap");
    let mut me = rt.attach_mutator().unwrap();
    me.alloc(16).unwrap();
    me.collect().unwrap();
}
