//! Objects survive many collections intact, and NMT's totals per tag equal
//! the allocators' own accounting after every collection.

use hotmem::objects::{RootTable, SimpleObjects};
use hotmem::os::MemTag;
use hotmem::{ArenaKind, MetadataType, Mutator, NumaConfig, Runtime};
use std::sync::Arc;

fn nmt_matches_allocators(rt: &Runtime) {
    let nmt = rt.nmt();
    let heap = nmt.totals(MemTag::JAVA_HEAP);
    assert_eq!(
        heap.committed,
        rt.heap().committed_bytes(),
        "heap committed"
    );
    assert_eq!(heap.reserved, rt.heap().reserved().len(), "heap reserved");
    for (tag, ty) in [
        (MemTag::CLASS, MetadataType::Class),
        (MemTag::METASPACE, MetadataType::NonClass),
    ] {
        let space = rt.metaspace().space(ty);
        let t = nmt.totals(tag);
        assert_eq!(t.committed, space.committed_bytes(), "{tag} committed");
        assert_eq!(t.reserved, space.reserved_bytes(), "{tag} reserved");
    }
}

/// Allocates `n` objects of mixed sizes, keeping every `keep`-th.
fn churn(me: &mut Mutator, roots: &RootTable, n: u64, keep: u64, first_id: u64, medium: usize) {
    for i in 0..n {
        let size = match i % 50 {
            0 => medium,
            _ => 32 + (i as usize % 64) * 8,
        };
        let id = first_id + i;
        let addr = me.alloc(size).expect("the live set fits");
        // SAFETY: a fresh allocation of `size` bytes.
        let root = unsafe { SimpleObjects::init(addr, size, id) };
        if i % keep == 0 {
            roots.push(root);
        }
        me.poll();
    }
}

#[test]
fn objects_survive_many_relocations_and_nmt_agrees() {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(64 << 20)
        .numa(NumaConfig::Off)
        .gc_workers(2)
        .object_model(objects.clone())
        .build()
        .unwrap();
    let medium = rt.heap().page_sizes().small_object_max() + 8;
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let mut loaders = Vec::new();
    let mut relocated = 0;
    for cycle in 0..12u64 {
        churn(&mut me, &roots, 3000, 7, cycle * 1_000_000, medium);
        // Let older objects die so that pages become sparse.
        while roots.len() > 1500 {
            roots.swap_remove(cycle as usize % roots.len());
        }
        let mut loader = rt.class_loader(ArenaKind::Standard);
        loader.alloc_class(2048).unwrap();
        loader.alloc_metadata(8192).unwrap();
        loaders.push(loader);
        if cycle % 3 == 0 {
            loaders.clear();
        }
        let stats = me.collect().unwrap();
        relocated += stats.objects_relocated;
        assert_eq!(stats.live_objects as usize, roots.len());
        // SAFETY: this thread is the only mutator and it is not collecting.
        let verified = unsafe { objects.verify() }.unwrap();
        assert_eq!(verified, roots.len());
        nmt_matches_allocators(&rt);
    }
    assert!(
        relocated > 1000,
        "sparse pages were evacuated: {relocated} objects moved"
    );
    assert_eq!(rt.gc_totals().cycles, 12);
}

#[test]
fn collections_from_another_thread_stop_running_mutators() {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(32 << 20)
        .numa(NumaConfig::Off)
        .object_model(objects.clone())
        .build()
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let (rt, objects, stop) = (rt.clone(), objects.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut me = rt.attach_mutator().unwrap();
                let roots = objects.root_table();
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let size = 32 + (i as usize % 32) * 8;
                    let addr = me.alloc(size).unwrap();
                    // SAFETY: a fresh allocation.
                    let root = unsafe { SimpleObjects::init(addr, size, t << 40 | i) };
                    if i % 5 == 0 {
                        roots.push(root);
                        if roots.len() > 2000 {
                            roots.swap_remove((i as usize) % 2000);
                        }
                    }
                    if i % 97 == 0 {
                        if let Some(r) = roots.get(0) {
                            // SAFETY: attached and not polled since reading the root.
                            unsafe { SimpleObjects::check(&r) }.unwrap();
                        }
                    }
                    i += 1;
                    me.poll();
                }
            })
        })
        .collect();
    for _ in 0..20 {
        rt.collect().unwrap();
        // Mutators run again after the collection: compare with them stopped.
        rt.run_at_safepoint("check", || nmt_matches_allocators(&rt))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    rt.collect().unwrap();
    // SAFETY: no mutator is left and no collection runs.
    unsafe { objects.verify() }.unwrap();
}

#[cfg(feature = "numa")]
#[test]
fn synthetic_two_node_runtime_relocates_node_locally() {
    let objects = SimpleObjects::new();
    let rt = Runtime::builder()
        .heap_max(64 << 20)
        .numa(NumaConfig::Synthetic("pack:2 numa:1 core:2 pu:1".into()))
        .gc_workers(2)
        .object_model(objects.clone())
        .build()
        .unwrap();
    assert_eq!(rt.partitions().len(), 2);
    // A synthetic topology: the bindings are recorded, not made.
    assert_eq!(rt.numa().worker_binding, hotmem::WorkerBinding::Simulated);
    let medium = rt.heap().page_sizes().small_object_max() + 8;
    // Two mutators: attached round-robin to the two partitions.
    let roots = [objects.root_table(), objects.root_table()];
    let mut a = rt.attach_mutator().unwrap();
    churn(&mut a, &roots[0], 2000, 5, 0, medium);
    let b_partition = std::thread::scope(|s| {
        s.spawn(|| {
            let mut b = rt.attach_mutator().unwrap();
            churn(&mut b, &roots[1], 2000, 5, 1 << 32, medium);
            b.partition()
        })
        .join()
        .unwrap()
    });
    assert_ne!(
        a.partition(),
        b_partition,
        "mutators spread over the partitions"
    );
    let stats = a.collect().unwrap();
    assert!(stats.relocation.items > 0, "{stats:?}");
    assert_eq!(
        stats.relocation.locality_ratio(),
        Some(1.0),
        "every page evacuated by a worker bound to its node"
    );
    assert_eq!(stats.relocation.binding, hotmem::WorkerBinding::Simulated);
    let report = rt.report();
    let text = &report.sections()[0].text;
    assert!(
        text.contains("workers bound during relocation: simulated"),
        "{text}"
    );
    assert!(text.contains("locality 100% (simulated)"), "{text}");
    // SAFETY: single mutator, not collecting.
    let verified = unsafe { objects.verify() }.unwrap();
    assert_eq!(verified, roots[0].len() + roots[1].len());
}
