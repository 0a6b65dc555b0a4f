//! binary-trees (the program of `examples/binary_trees.rs`) at a small
//! depth: the hotmem `Runtime` against its two baselines in one group,
//! `Box` (what a Rust user would pick) and a per-tree bump arena (the
//! allocation floor). One sample is a whole program run; throughput is in
//! nodes allocated.

#[allow(dead_code)]
#[path = "../examples/trees.rs"]
mod trees;
#[allow(dead_code)]
#[path = "../examples/trees_runtime.rs"]
mod trees_runtime;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use trees::{ArenaTrees, BoxTrees, Trees};
use trees_runtime::RuntimeTrees;

/// Small enough that one program run takes well under a second.
const DEPTH: u32 = 14;
/// The runtime's heap: far below the live data of the whole run, so that
/// collections run, but above the stretch tree's.
const HEAP: usize = 32 << 20;

fn program<T: Trees>(trees: &T) -> Vec<u64> {
    trees::program(trees, DEPTH, 1, None, &mut |line| {
        black_box(line);
    })
}

fn binary_trees(c: &mut Criterion) {
    let mut group = c.benchmark_group("binary_trees");
    group.throughput(Throughput::Elements(trees::allocated_nodes(DEPTH)));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    let expected = program(&ArenaTrees);
    group.bench_function(BenchmarkId::new("box", DEPTH), |b| {
        b.iter(|| assert_eq!(program(&BoxTrees), expected))
    });
    group.bench_function(BenchmarkId::new("arena", DEPTH), |b| {
        b.iter(|| assert_eq!(program(&ArenaTrees), expected))
    });
    for (name, generations) in [
        ("runtime", hotmem::Generations::YoungAndOld),
        ("runtime_single", hotmem::Generations::Single),
    ] {
        let runtime = RuntimeTrees::new(
            HEAP,
            hotmem::log::LogConfig::new(),
            generations,
            hotmem::HeapSizing::default(),
            hotmem::CollectorMode::StopTheWorld,
            None,
        )
        .expect("the runtime builds");
        group.bench_function(BenchmarkId::new(name, DEPTH), |b| {
            b.iter(|| assert_eq!(program(&runtime), expected))
        });
    }
    group.finish();
}

criterion_group!(benches, binary_trees);
criterion_main!(benches);
