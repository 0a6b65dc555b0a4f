//! A live set larger than the heap gets a clear error, not a panic, and the
//! runtime works again once the live set shrinks.

use hotmem::objects::SimpleObjects;
use hotmem::{AllocError, BuildError, MIN_HEAP, NumaConfig, Runtime};

mod common;

/// A runtime with the smallest heap, on the graph objects.
fn smallest_runtime() -> (std::sync::Arc<SimpleObjects>, Runtime) {
    let objects = SimpleObjects::new();
    let rt = common::builder(MIN_HEAP, None)
        .binding(objects.clone())
        .build()
        .unwrap();
    (objects, rt)
}

#[test]
fn live_set_beyond_the_heap_is_an_error_and_recoverable() {
    let (objects, rt) = smallest_runtime();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let size = 64 << 10;
    let mut id = 0;
    let err = loop {
        match me.alloc(size) {
            Ok(addr) => {
                // SAFETY: a fresh allocation.
                roots.push(Some(unsafe { SimpleObjects::init(addr, size, 0, id) }));
                id += 1;
            }
            Err(e) => break e,
        }
        assert!(id < 1_000_000, "a 16 MiB heap cannot hold that much");
    };
    let AllocError::OutOfMemory {
        size: asked,
        max_capacity,
        ..
    } = err
    else {
        panic!("expected out of memory, got {err:?}");
    };
    assert_eq!((asked, max_capacity), (size, MIN_HEAP));
    assert!(
        rt.gc_totals().allocation_failures >= 1,
        "the failure triggered a collection first"
    );
    assert!(err.to_string().contains("out of memory"));

    // The live set shrinks: allocation works again and every survivor is intact.
    while roots.len() > 10 {
        roots.swap_remove(0);
    }
    for _ in 0..100 {
        let addr = me
            .alloc(size)
            .expect("room again after the live set shrank");
        // SAFETY: a fresh allocation.
        let _ = unsafe { SimpleObjects::init(addr, size, 0, id) };
        id += 1;
    }
    // SAFETY: single mutator, not collecting.
    assert_eq!(unsafe { objects.verify() }.unwrap().objects, 10);
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let small = Runtime::builder().heap_max(1 << 20).build();
    assert!(matches!(small, Err(BuildError::Config(_))));
    let limit = Runtime::builder().fragmentation_limit(1.5).build();
    assert!(matches!(limit, Err(BuildError::Config(_))));
    let workers = Runtime::builder().gc_workers(0).build();
    assert!(matches!(workers, Err(BuildError::Config(_))));
    #[cfg(feature = "numa")]
    {
        let topo = Runtime::builder()
            .numa(NumaConfig::Synthetic("pack:zero".into()))
            .build();
        assert!(matches!(topo, Err(BuildError::Topology(_))), "{topo:?}");
    }
    #[cfg(not(feature = "numa"))]
    {
        let topo = Runtime::builder()
            .numa(NumaConfig::Synthetic("pack:2 numa:1 pu:1".into()))
            .build();
        assert!(matches!(topo, Err(BuildError::NumaDisabled)), "{topo:?}");
        let rt = Runtime::builder().numa(NumaConfig::Detect).build().unwrap();
        assert_eq!(rt.partitions().len(), 1, "without hwloc: one partition");
    }
    // Without an object model the runtime allocates but cannot collect.
    let rt = Runtime::builder().numa(NumaConfig::Off).build().unwrap();
    assert_eq!(rt.collect().unwrap_err(), hotmem::GcError::NoBinding);
    assert!(matches!(
        rt.attach_mutator().unwrap().alloc(0),
        Err(AllocError::Layout(_))
    ));
}

#[test]
fn an_object_larger_than_the_heap_is_a_bad_size_without_collecting() {
    let (_objects, rt) = smallest_runtime();
    let mut me = rt.attach_mutator().unwrap();
    for size in [
        MIN_HEAP + 1,
        2 * MIN_HEAP,
        1 << 40,
        isize::MAX as usize,
        usize::MAX - 7,
    ] {
        match me.alloc(size) {
            Err(AllocError::OutOfMemory { .. }) => {
                panic!("{size} bytes can never fit: a bad size, not out of memory")
            }
            Err(_) => {}
            Ok(addr) => panic!("{size} bytes allocated at {addr} in a {MIN_HEAP}-byte heap"),
        }
    }
    assert_eq!(
        rt.gc_totals().cycles,
        0,
        "no collection was run for a request no collection can satisfy"
    );
    // The heap still serves ordinary requests.
    me.alloc(64).unwrap();
}

/// The adaptive sizing policy keeps a small program's heap small: with a
/// live set of about 1 MiB and 200 MiB allocated, collections run every
/// few MiB and the heap never commits more than a few pages, although its
/// maximum is 256 MiB; a live set that grows makes the heap grow with it;
/// the maximum policy fills the heap before its first collection.
#[test]
fn the_heap_grows_with_the_live_set_not_to_the_maximum() {
    use hotmem::objects::{Ids, build};
    use hotmem::{AdaptiveSizing, Generations, HeapSizing};
    // Growth on the live set only: the growth on collection time depends on
    // the machine's speed (its own unit test uses a given clock).
    let live_set_only = HeapSizing::Adaptive(AdaptiveSizing {
        gc_time_percent: 100.0,
        ..AdaptiveSizing::default()
    });
    for generations in [Generations::Single, Generations::YoungAndOld] {
        let objects = SimpleObjects::new();
        let rt = common::builder(256 << 20, Some(1))
            .heap_sizing(live_set_only)
            .generations(generations)
            .binding(objects.clone())
            .build()
            .unwrap();
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        build::list(&mut me, &roots, 10_000, 8, false, &mut ids).unwrap();
        let mut peak = 0;
        for _ in 0..25 {
            build::garbage(&mut me, &roots, 8 << 10, &mut ids).unwrap();
            peak = peak.max(rt.heap().committed_bytes());
        }
        let totals = rt.gc_totals();
        assert!(
            totals.cycles >= 10,
            "{generations:?}: {} collections",
            totals.cycles
        );
        assert!(
            peak <= 32 << 20,
            "{generations:?}: committed up to {} MiB",
            peak >> 20
        );
        // A live set of ~40 MiB: the heap grows past the initial size.
        for _ in 0..40 {
            build::list(&mut me, &roots, 8_000, 14, false, &mut ids).unwrap();
        }
        build::garbage(&mut me, &roots, 64 << 10, &mut ids).unwrap();
        assert!(rt.heap().committed_bytes() >= 48 << 20, "{generations:?}");
        // SAFETY: the only mutator; nothing collects during the check.
        let live = unsafe { objects.verify() }.unwrap();
        assert_eq!(live.objects, 10_000 + 40 * 8_000);
    }
    // The policy before sizing: no collection until the maximum is reached.
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(1))
        .heap_sizing(HeapSizing::Maximum)
        .binding(objects.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    build::garbage(&mut me, &roots, 48 << 10, &mut Ids::from(1)).unwrap();
    assert_eq!(rt.gc_totals().cycles, 0);
    assert!(rt.heap().committed_bytes() >= 48 << 20);
}
