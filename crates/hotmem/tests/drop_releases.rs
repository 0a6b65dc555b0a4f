//! Dropping the runtime releases every mapping it made, and NMT, which saw
//! them all, reports zero. A test binary of its own: no other test may map
//! memory into the ranges while this one checks them.

use hotmem::objects::{SimpleObjects, build};
use hotmem::os::{MemTag, procfs};
use hotmem::{ArenaKind, NumaConfig};

mod common;

#[test]
fn dropping_the_runtime_releases_everything() {
    let objects = SimpleObjects::new();
    let rt = common::builder(32 << 20, None)
        .numa(NumaConfig::Detect)
        .binding(objects.clone())
        .build()
        .unwrap();
    let nmt = rt.nmt().clone();
    // GC worker threads are recorded while they live (plain workers from
    // the first collection that needs them, which starts them: one with
    // more objects to mark than its own thread traces alone).
    {
        let roots = objects.root_table();
        let mut me = rt.attach_mutator().unwrap();
        for i in 0..4000u64 {
            build::object(&mut me, &roots, 0, 2, i).unwrap();
        }
        me.collect().unwrap();
    }
    let workers_stacks = nmt.totals(MemTag::THREAD_STACK).reserved;
    {
        let roots = objects.root_table();
        let mut me = rt.attach_mutator().unwrap();
        for i in 0..5000u64 {
            let addr = me.alloc(256).unwrap();
            // SAFETY: a fresh allocation.
            let root = unsafe { SimpleObjects::init(addr, 256, 0, i) };
            if i % 3 == 0 {
                roots.push(Some(root));
            }
        }
        let mut loader = rt.class_loader(ArenaKind::Boot);
        loader.alloc_class(4096).unwrap();
        me.collect().unwrap();
        assert!(
            nmt.totals(MemTag::THREAD_STACK).reserved > workers_stacks,
            "the attached thread's stack is tracked"
        );
    }
    assert_eq!(
        nmt.totals(MemTag::THREAD_STACK).reserved,
        workers_stacks,
        "detached: its stack record is gone"
    );
    let ours = rt.reserved_ranges();
    let tagged = nmt
        .annotated_map(hotmem::nmt::Scale::Kilo)
        .unwrap()
        .entries()
        .iter()
        .filter(|e| ours.iter().any(|r| r.overlaps(e.mapping.range)))
        .all(|e| !e.tags.is_empty());
    assert!(
        tagged,
        "NMT tagged every mapping of the runtime's reservations"
    );
    drop(rt);
    for t in [
        MemTag::JAVA_HEAP,
        MemTag::CLASS,
        MemTag::METASPACE,
        MemTag::INTERNAL,
        MemTag::THREAD_STACK,
    ] {
        let totals = nmt.totals(t);
        assert_eq!(
            (totals.reserved, totals.committed),
            (0, 0),
            "{t} after drop"
        );
    }
    // ThreadSanitizer's runtime maps its own memory into the ranges we just
    // released, so "nothing mapped there any more" cannot hold under it;
    // `cargo xtask sanitize` sets HOTMEM_SANITIZER. The NMT check above
    // still runs.
    if std::env::var_os("HOTMEM_SANITIZER").is_some_and(|s| s == "thread") {
        eprintln!(
            "mapping check skipped under ThreadSanitizer: its runtime maps into released ranges"
        );
        return;
    }
    let maps = procfs::smaps().unwrap();
    for r in &ours {
        let left: Vec<_> = maps.iter().filter(|m| m.range.overlaps(*r)).collect();
        assert!(left.is_empty(), "{r} still mapped: {left:?}");
    }
}
