//! The builder's defaults: the concurrent collector with young and old
//! generations, and what that asks of a binding (slots that
//! compare-and-swap: one whose slots cannot is refused with an error that
//! names the collector to choose instead).

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{BuildError, CollectionKind, CollectorMode, Generations, NumaConfig, Runtime};
use std::sync::Arc;

mod common;
use common::PlainBinding;

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
        .binding(Arc::new(PlainBinding))
        .build();
    let message = match refused {
        Err(e @ BuildError::Config(_)) => e.to_string(),
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    };
    assert!(message.contains("CollectorMode::StopTheWorld"), "{message}");
    let rt = Runtime::builder()
        .numa(NumaConfig::Off)
        .collector(CollectorMode::StopTheWorld)
        .binding(Arc::new(PlainBinding))
        .build()
        .expect("the stop-the-world collector asks no compare-and-swap");
    let mut me = rt.attach_mutator().unwrap();
    me.alloc(16).unwrap();
    me.collect().unwrap();
}
