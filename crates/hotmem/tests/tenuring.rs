//! The concurrent collector's young cycles promote the young pages they
//! keep where they are by a tenuring threshold chosen per cycle: at their
//! second survival while most young bytes die, at their first when the
//! cycle finds at least half of the young bytes live (a structure being
//! built to last, which ageing would only mark once more as young).

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{CollectStats, CollectionKind, CollectorMode, Generations, Runtime, YoungSurvival};
use std::sync::Arc;

mod common;

fn runtime(objects: &Arc<SimpleObjects>) -> Runtime {
    common::builder(64 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .generations(Generations::YoungAndOld)
        .binding(objects.clone())
        .build()
        .expect("a concurrent generational runtime")
}

/// What a young cycle reported of its survivors.
fn survival(stats: &CollectStats) -> YoungSurvival {
    assert_eq!(stats.kind, CollectionKind::Young, "{stats:?}");
    let phases = stats.concurrent.expect("a concurrent cycle");
    phases.young_survival.expect("a young cycle that evacuates")
}

/// A young generation that is all one live tree (5 MiB, three pages):
/// promoted at the first survival, so the next young cycle has nothing
/// young to mark, and the tree is intact.
#[test]
fn a_young_cycle_that_finds_most_young_bytes_live_promotes_them_at_once() {
    let objects = SimpleObjects::new();
    let rt = runtime(&objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let tree = build::tree(&mut me, &roots, 15, 6, &mut ids).unwrap();
    let first = me.collect_young().unwrap();
    let found = survival(&first);
    assert!(found.live_bytes * 2 >= found.used_bytes, "{found:?}");
    assert_eq!(found.tenuring_threshold, 1, "{found:?}");
    assert!(found.pages_promoted >= 2, "{found:?}");
    assert_eq!(found.pages_aged, 0, "{found:?}");
    let next = me.collect_young().unwrap();
    assert_eq!(next.objects_marked, 0, "the tree is old: {next:?}");
    // SAFETY: the only mutator, which does not poll during the walk.
    let now = unsafe { objects.verify_with(&me) }.unwrap();
    assert_eq!(now.objects, tree.objects);
}

/// A live tree of a page and a half followed by 12 MiB of garbage: most
/// young bytes die, so the tree's full page is aged, not promoted; the
/// next young cycle promotes it (its second survival), and the one after
/// has nothing young to mark.
#[test]
fn a_young_cycle_that_finds_most_young_bytes_dead_ages_the_pages_it_keeps() {
    let objects = SimpleObjects::new();
    let rt = runtime(&objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let tree = build::tree(&mut me, &roots, 14, 6, &mut ids).unwrap();
    build::garbage(&mut me, &roots, 12 << 10, &mut ids).unwrap();
    let first = me.collect_young().unwrap();
    let found = survival(&first);
    assert!(found.live_bytes * 2 < found.used_bytes, "{found:?}");
    assert_eq!(found.tenuring_threshold, 2, "{found:?}");
    assert_eq!(found.pages_promoted, 0, "{found:?}");
    assert!(found.pages_aged >= 1, "{found:?}");
    assert!(first.objects_marked > 0, "{first:?}");
    let second = me.collect_young().unwrap();
    assert!(survival(&second).pages_promoted >= 1, "{second:?}");
    let third = me.collect_young().unwrap();
    assert_eq!(third.objects_marked, 0, "the tree is old: {third:?}");
    // SAFETY: the only mutator, which does not poll during the walk.
    let now = unsafe { objects.verify_with(&me) }.unwrap();
    assert_eq!(now.objects, tree.objects);
}
