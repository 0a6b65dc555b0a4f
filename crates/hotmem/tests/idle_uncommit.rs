//! An idle runtime gives its cached heap pages back to the OS once they
//! have gone unused for the uncommit delay, with no collection running.
//!
//! The only time in this test is a deadline: a runtime whose delay is
//! 20 ms must have uncommitted within 20 s.

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{CollectorMode, Generations};
use std::time::{Duration, Instant};

mod common;

const MIB: usize = 1 << 20;

#[test]
fn cached_pages_go_back_to_the_os_while_no_collection_runs() {
    for collector in [CollectorMode::StopTheWorld, CollectorMode::Concurrent] {
        let objects = SimpleObjects::new();
        let rt = common::builder(128 * MIB, Some(1))
            .collector(collector)
            .generations(Generations::Single)
            .uncommit_delay(Duration::from_millis(20))
            .binding(objects.clone())
            .build()
            .unwrap();
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        // 64 MiB of garbage, then a collection: its pages go to the cache.
        build::garbage(&mut me, &roots, 64 << 10, &mut Ids::from(1)).unwrap();
        me.collect().unwrap();
        let cycles = rt.gc_totals().cycles;
        let cached = rt.heap().usage().cached;
        assert!(
            cached >= 32 * MIB,
            "{collector:?}: {} MiB cached",
            cached >> 20
        );
        // The mutator waits in native code, as an idle VM would. (The
        // cache shrinks when the pages are claimed, the counter grows once
        // they are unmapped: the counter is what is waited for.)
        let native = me.enter_native();
        let deadline = Instant::now() + Duration::from_secs(20);
        let uncommitted = |rt: &hotmem::Runtime| rt.heap().counters().uncommit_bytes;
        while uncommitted(&rt) < 32 * MIB as u64 {
            assert!(
                Instant::now() < deadline,
                "{collector:?}: {} MiB still cached after 20 s",
                rt.heap().usage().cached >> 20
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(native);
        assert_eq!(
            rt.gc_totals().cycles,
            cycles,
            "{collector:?}: no collection ran"
        );
        assert!(rt.heap().committed_bytes() < 64 * MIB, "{collector:?}");
    }
}
