//! Reference processing's cost: a full collection of a heap of 1M small
//! objects of which 10% are reachable, without weak references, with a
//! runtime [`WeakHandle`](hotmem::WeakHandle) to every object, and with the
//! binding's own weak table ([`HookedObjects`]: a `HashMap` by content,
//! processed by the binding's hook) holding every object: the same heap and the same
//! collection in one group, so the difference is the processing of 1M weak
//! references whose referents are 90% dead. One sample is one collection
//! (the heap is rebuilt, untimed, before each).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem::objects::{HookedObjects, RootTable, SimpleObjects, build};
use hotmem::{NumaConfig, Runtime, WeakHandle};
use std::sync::Arc;
use std::time::{Duration, Instant};

const OBJECTS: u64 = 1_000_000;
/// One in this many objects stays reachable.
const KEEP_EVERY: u64 = 10;

/// Which weak references the heap has.
#[derive(Copy, Clone)]
enum Weak {
    None,
    Handles,
    BindingTable,
}

/// One collection of a fresh heap with `weak` references: its duration
/// and statistics.
fn one_collection(weak: Weak) -> (Duration, hotmem::CollectStats) {
    let vm = HookedObjects::new(SimpleObjects::new());
    let rt = Runtime::builder()
        .heap_max(256 << 20)
        .numa(NumaConfig::Off)
        .collector(hotmem::CollectorMode::StopTheWorld)
        .generations(hotmem::Generations::Single)
        .binding(vm.clone())
        .build()
        .expect("the runtime builds");
    let mut me = rt.attach_mutator().expect("attach");
    let scratch: Arc<RootTable> = vm.objects().root_table();
    let kept = vm.objects().root_table();
    let mut handles: Vec<WeakHandle> = Vec::new();
    for id in 1..=OBJECTS {
        let obj = build::object(&mut me, &scratch, 0, 1, id).expect("the heap holds them");
        scratch.pop();
        match weak {
            Weak::None => {}
            Weak::Handles => handles.push(rt.weak_handle(obj)),
            Weak::BindingTable => vm.insert(id, obj),
        }
        if id % KEEP_EVERY == 0 {
            kept.push(Some(obj));
        }
    }
    let start = Instant::now();
    let stats = me.collect().expect("a collection");
    let took = start.elapsed();
    assert_eq!(stats.objects_marked, OBJECTS / KEEP_EVERY);
    (took, stats)
}

fn weak_refs(c: &mut Criterion) {
    let mut group = c.benchmark_group("weak_refs/full_collection_1m_objects_90pct_dead");
    group.throughput(Throughput::Elements(OBJECTS));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for (name, weak) in [
        ("no_weak_refs", Weak::None),
        ("weak_handles", Weak::Handles),
        ("binding_weak_table", Weak::BindingTable),
    ] {
        group.bench_function(BenchmarkId::new(name, OBJECTS), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| one_collection(weak).0).sum())
        });
    }
    group.finish();
    // The processing's own share, as the collection measures it.
    for (name, weak) in [
        ("weak_handles", Weak::Handles),
        ("binding_weak_table", Weak::BindingTable),
    ] {
        let mut runs: Vec<(f64, f64)> = (0..5)
            .map(|_| {
                let (took, stats) = one_collection(weak);
                (took.as_secs_f64() * 1e3, stats.refs.ns as f64 / 1e6)
            })
            .collect();
        runs.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (collection, refs) = runs[runs.len() / 2];
        println!(
            "{name}: reference processing {refs:.2} ms of a {collection:.2} ms collection (median of 5 by processing time)"
        );
    }
}

criterion_group!(benches, weak_refs);
criterion_main!(benches);
