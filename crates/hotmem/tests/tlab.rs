//! Thread-local allocation buffers, seen from outside: mutators bump in
//! buffers of their own that never overlap, objects too big for a buffer
//! take the shared path, a collection empties the buffers and gives their
//! unused ends back, and a runtime built with `Tlabs::Off` takes none.

use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::safepoint::ThreadState;
use hotmem::{BuildError, Runtime, Tlabs};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

mod common;

const SMALL: usize = 32;

fn runtime(tlabs: Tlabs) -> Runtime {
    common::builder(64 << 20, None)
        .tlabs(tlabs)
        .build()
        .expect("a runtime")
}

#[test]
fn consecutive_small_objects_are_bumped_out_of_one_buffer() {
    let rt = runtime(Tlabs::Size(16 << 10));
    let mut me = rt.attach_mutator().unwrap();
    let first = me.alloc(SMALL).unwrap().get();
    for i in 1..100 {
        assert_eq!(me.alloc(SMALL).unwrap().get(), first + i * SMALL);
    }
    assert_eq!(rt.tlab_stats().refills, 1);
    assert_eq!(rt.tlab_stats().size, 16 << 10);
    // 16 KiB / 32 B = 512 objects per buffer: the 513th takes a new one.
    for _ in 100..513 {
        me.alloc(SMALL).unwrap();
    }
    assert_eq!(rt.tlab_stats().refills, 2);
}

#[test]
fn an_object_over_an_eighth_of_the_buffer_takes_the_shared_path() {
    let rt = runtime(Tlabs::Size(16 << 10));
    let mut me = rt.attach_mutator().unwrap();
    me.alloc((16 << 10) / 8 + 8).unwrap();
    assert_eq!(rt.tlab_stats().refills, 0);
    me.alloc((16 << 10) / 8).unwrap();
    assert_eq!(rt.tlab_stats().refills, 1);
}

#[test]
fn buffers_are_off_when_configured_off() {
    let rt = runtime(Tlabs::Off);
    let mut me = rt.attach_mutator().unwrap();
    for _ in 0..1000 {
        me.alloc(SMALL).unwrap();
    }
    assert_eq!(rt.tlab_stats(), hotmem::TlabStats::default());
}

#[test]
fn a_bad_buffer_size_is_a_config_error() {
    for bad in [Tlabs::Size(1024), Tlabs::Size(48 << 10)] {
        let err = Runtime::builder().tlabs(bad).build().unwrap_err();
        assert!(matches!(err, BuildError::Config(_)), "{err:?}");
    }
}

#[test]
fn threads_allocate_in_disjoint_buffers() {
    let rt = runtime(Tlabs::Size(4 << 10));
    let threads = 4;
    let per_thread = 2000;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let rt = rt.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                let mut me = rt.attach_mutator().unwrap();
                start.wait();
                (0..per_thread)
                    .map(|_| me.alloc(SMALL).unwrap().get())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all = BTreeSet::new();
    for h in handles {
        for a in h.join().unwrap() {
            assert!(all.insert(a), "{a:#x} handed out twice");
        }
    }
    // Sorted, every object ends before the next begins.
    let v: Vec<_> = all.into_iter().collect();
    assert!(v.windows(2).all(|w| w[0] + SMALL <= w[1]));
    assert!(rt.tlab_stats().refills >= (threads * per_thread * SMALL / (4 << 10)) as u64);
}

#[test]
fn a_collection_empties_the_buffers_and_the_graph_survives() {
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(1))
        .tlabs(Tlabs::Size(16 << 10))
        .binding(objects.clone())
        .build()
        .unwrap();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let mut ids = Ids::from(1);
    // A cyclic list and a tree, both built in buffers, and garbage between.
    let mut want = build::list(&mut me, &roots, 1500, 2, true, &mut ids).unwrap();
    for _ in 0..3 {
        build::tree(&mut me, &roots, 6, 1, &mut ids).unwrap();
        roots.pop();
    }
    let tree = build::tree(&mut me, &roots, 8, 1, &mut ids).unwrap();
    want.merge(&tree);
    let before = rt.tlab_stats();
    assert!(before.refills > 1, "{before:?}");
    for _ in 0..3 {
        me.collect().unwrap();
        // SAFETY: the only mutator, not collecting.
        let found = unsafe { objects.verify() }.unwrap();
        assert_eq!(found, want, "the graph is what was built");
    }
    let after = rt.tlab_stats();
    assert!(
        after.returned_bytes > before.returned_bytes,
        "the first collection gave the buffer's unused end back: {after:?}"
    );
    // The next object takes a new buffer: the collection emptied the old.
    build::object(&mut me, &roots, 0, 1, ids.next()).unwrap();
    assert_eq!(rt.tlab_stats().refills, after.refills + 1);
}

/// A native region leaked with `mem::forget` no longer borrows the mutator
/// but leaves its thread counted as safe: a safepoint (a collection) does
/// not wait for it. Before, the next allocation bumped the buffer while the
/// safepoint ran, where a collection retires buffers and pages; now it
/// leaves the native state first and stops until the safepoint ends.
#[test]
fn an_allocation_after_a_leaked_native_region_waits_for_the_safepoint() {
    let rt = runtime(Tlabs::Size(16 << 10));
    let (leaked_tx, leaked) = mpsc::channel();
    let (begun, begun_rx) = mpsc::channel::<()>();
    let allocated = Arc::new(AtomicBool::new(false));
    let thread = {
        let (rt, allocated) = (rt.clone(), allocated.clone());
        std::thread::spawn(move || {
            let mut me = rt.attach_mutator().unwrap();
            me.alloc(SMALL).unwrap(); // the buffer is taken
            std::mem::forget(me.enter_native());
            leaked_tx.send(me.id()).unwrap();
            begun_rx.recv().unwrap();
            me.alloc(SMALL).unwrap();
            allocated.store(true, Ordering::SeqCst);
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = leaked.recv_timeout(Duration::from_secs(30)).unwrap();
    // Returns at once: the leaking thread counts as safe.
    let guard = rt.safepoints().begin("after the leak").unwrap();
    begun.send(()).unwrap();
    let stopped = || rt.safepoints().mutators() == [(id, ThreadState::AtSafepoint)];
    while !stopped() && !allocated.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "neither stopped nor allocated");
        std::thread::yield_now();
    }
    assert!(
        !allocated.load(Ordering::SeqCst),
        "allocated during the safepoint"
    );
    drop(guard);
    thread.join().unwrap();
    assert!(allocated.load(Ordering::SeqCst));
    assert_eq!(rt.safepoints().leaked_regions(), 1);
}
