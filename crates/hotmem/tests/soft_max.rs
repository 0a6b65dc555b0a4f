//! A soft maximum holds the heap below it while the live set fits, under
//! every collector and with either generation setting, and gives way
//! (without an error) to a live set that does not fit.
//!
//! The time limit is set to 100% here, so it never sets the soft maximum
//! aside: what these tests count does not depend on the machine's speed
//! (the limit's own unit tests give it a clock).

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{CollectorMode, Generations, Runtime};

mod common;

const MIB: usize = 1 << 20;
const SOFT: usize = 24 * MIB;

fn runtime(
    collector: CollectorMode,
    generations: Generations,
) -> (std::sync::Arc<SimpleObjects>, Runtime) {
    let objects = SimpleObjects::new();
    let rt = common::builder(256 * MIB, Some(1))
        .collector(collector)
        .generations(generations)
        .soft_max_heap(SOFT)
        .gc_time_limit(100.0)
        .binding(objects.clone())
        .build()
        .unwrap();
    (objects, rt)
}

const MODES: [(CollectorMode, Generations); 4] = [
    (CollectorMode::StopTheWorld, Generations::Single),
    (CollectorMode::StopTheWorld, Generations::YoungAndOld),
    (CollectorMode::Concurrent, Generations::Single),
    (CollectorMode::Concurrent, Generations::YoungAndOld),
];

/// With the maximum policy (collect only when the heap is exhausted) and a
/// 256 MiB heap, 160 MiB of garbage over a 1 MiB live set would fill the
/// heap; the soft maximum collects at 24 MiB instead.
#[test]
fn a_small_live_set_keeps_the_heap_under_the_soft_maximum() {
    for (collector, generations) in MODES {
        let (objects, rt) = runtime(collector, generations);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        build::list(&mut me, &roots, 10_000, 8, false, &mut ids).unwrap();
        let mut peak = 0;
        for _ in 0..20 {
            build::garbage(&mut me, &roots, 8 << 10, &mut ids).unwrap();
            peak = peak.max(rt.heap().usage().used);
            assert!(rt.heap_target().bytes <= SOFT);
        }
        let mode = format!("{collector:?}/{generations:?}");
        assert!(
            rt.gc_totals().cycles >= 5,
            "{mode}: {} collections",
            rt.gc_totals().cycles
        );
        // The mutators' pages stay under the soft maximum; a collection's
        // own copies may add a few pages over it.
        assert!(peak <= SOFT + 8 * MIB, "{mode}: {} MiB in use", peak >> 20);
        let target = rt.heap_target();
        assert_eq!(
            (target.soft_max, target.over_soft_max),
            (Some(SOFT), 0),
            "{mode}"
        );
        drop(me);
        // SAFETY: no mutator is attached; nothing collects during the check.
        let live = unsafe { objects.verify() }.unwrap().objects;
        assert_eq!(live, 10_000, "{mode}");
    }
}

/// A live set of about 40 MiB, more than the soft maximum: it is served
/// (the soft maximum is no limit), collections run every young minimum.
#[test]
fn a_live_set_beyond_the_soft_maximum_is_served() {
    for (collector, generations) in MODES {
        let (objects, rt) = runtime(collector, generations);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        for _ in 0..40 {
            build::list(&mut me, &roots, 8_000, 14, false, &mut ids).unwrap();
        }
        build::garbage(&mut me, &roots, 64 << 10, &mut ids).unwrap();
        let mode = format!("{collector:?}/{generations:?}");
        assert!(rt.heap().usage().used > SOFT, "{mode}");
        assert_eq!(rt.heap_target().bytes, SOFT, "{mode}");
        drop(me);
        // SAFETY: no mutator is attached; nothing collects during the check.
        let live = unsafe { objects.verify() }.unwrap().objects;
        assert_eq!(live, 40 * 8_000, "{mode}");
    }
}

#[test]
fn a_soft_maximum_above_the_heap_or_a_limit_out_of_range_is_a_typed_error() {
    use hotmem::BuildError;
    let over = Runtime::builder()
        .heap_max(64 * MIB)
        .soft_max_heap(65 * MIB)
        .build();
    assert!(matches!(over, Err(BuildError::Config(_))), "{over:?}");
    let zero = Runtime::builder().soft_max_heap(0).build();
    assert!(matches!(zero, Err(BuildError::Config(_))), "{zero:?}");
    let limit = Runtime::builder().gc_time_limit(0.0).build();
    assert!(matches!(limit, Err(BuildError::Config(_))), "{limit:?}");
    let none = Runtime::builder().build().unwrap();
    assert_eq!(none.heap_target().soft_max, None);
}
