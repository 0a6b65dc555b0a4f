//! hotmem-numa: what binding GC workers to nodes costs.
//!
//! - `numa/bind_restore`: per worker per phase, reading the original mask,
//!   binding to the node's CPUs, restoring and reading back (as the pool's
//!   own timers measure it), beside the bare hwloc bind+restore pair and
//!   the pool's previous per-phase sequence through hwloc (read, convert and
//!   bind, bind back, read back: the baseline). On a one-node machine the
//!   pool finds the thread's mask already is the node's and makes one
//!   `sched_getaffinity`; the hwloc rows always bind.
//! - `numa/phase_dispatch_10k`: a phase of 10 000 tiny items with affinity off
//!   (the baseline) and on, on the real topology and on a synthetic two-node
//!   one (where bindings are recorded, not made).

#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hotmem_numa::{AffinityPolicy, NodeId, PhaseWork, PoolConfig, Topology, WorkerPool};
use hwlocality::cpu::binding::CpuBindingFlags;
use std::hint::black_box;
use std::time::{Duration, Instant};

const SYNTHETIC: &str = "pack:2 numa:1 core:4 pu:1";

fn bind_restore(c: &mut Criterion) {
    let real = Topology::detect().unwrap();
    let mut g = c.benchmark_group("numa/bind_restore");
    g.throughput(Throughput::Elements(1));

    // The bare pair on this thread: bind to node 0's CPUs, bind back.
    let hw = real.as_hwloc();
    let original = hw.cpu_binding(CpuBindingFlags::THREAD).unwrap();
    let node0 = real.nodes()[0].cpuset().clone();
    let node0: hwlocality::cpu::cpuset::CpuSet = node0
        .iter()
        .map(|c| hwlocality::bitmap::BitmapIndex::try_from(c).unwrap())
        .collect();
    g.bench_function("raw_hwloc_pair", |b| {
        b.iter(|| {
            hw.bind_cpu(&node0, CpuBindingFlags::THREAD).unwrap();
            hw.bind_cpu(&original, CpuBindingFlags::THREAD).unwrap();
        })
    });

    // The pool's sequence before: read through hwloc, convert the node's set
    // and bind, bind back, read back.
    let node0_ours = real.nodes()[0].cpuset().clone();
    g.bench_function("hwloc_read_bind_restore_read", |b| {
        b.iter(|| {
            let original = hw.cpu_binding(CpuBindingFlags::THREAD).unwrap();
            let target: hwlocality::cpu::cpuset::CpuSet = node0_ours
                .iter()
                .map(|c| hwlocality::bitmap::BitmapIndex::try_from(c).unwrap())
                .collect();
            hw.bind_cpu(&target, CpuBindingFlags::THREAD).unwrap();
            hw.bind_cpu(&original, CpuBindingFlags::THREAD).unwrap();
            black_box(hw.cpu_binding(CpuBindingFlags::THREAD).unwrap());
        })
    });

    // What a pool worker spends per phase, from the pool's own timers: one
    // item per node, so each worker binds at least once.
    for workers in [1usize, 2, 4] {
        let mut pool = WorkerPool::new(
            &real,
            PoolConfig::new(workers, AffinityPolicy::BindDuringPhases),
        )
        .unwrap();
        g.bench_with_input(
            BenchmarkId::new("pool_worker_per_phase", workers),
            &workers,
            |b, _| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut work = PhaseWork::new(&real);
                        for node in real.node_ids() {
                            work.push(node, ()).unwrap();
                        }
                        let out = pool.run_phase(work, |_, ()| ()).unwrap();
                        let restores = out.stats.restores().max(1);
                        total += Duration::from_nanos(out.stats.binding_ns() / restores);
                    }
                    total
                })
            },
        );
    }
    g.finish();
}

fn phase_dispatch(c: &mut Criterion) {
    const ITEMS: usize = 10_000;
    let mut g = c.benchmark_group("numa/phase_dispatch_10k");
    g.throughput(Throughput::Elements(ITEMS as u64));
    let topologies = [
        ("real", Topology::detect().unwrap()),
        ("synthetic2", Topology::synthetic(SYNTHETIC).unwrap()),
    ];
    for (label, t) in &topologies {
        let workers = 2.max(t.node_count());
        let mut pool = WorkerPool::new(t, PoolConfig::new(workers, AffinityPolicy::Off)).unwrap();
        let data: Vec<u64> = (0..ITEMS as u64).collect();
        for affinity in [AffinityPolicy::Off, AffinityPolicy::BindDuringPhases] {
            pool.set_affinity(affinity);
            let id = BenchmarkId::new(format!("{label}_{workers}w"), format!("{affinity:?}"));
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let mut work = PhaseWork::new(t);
                        for (i, x) in data.iter().enumerate() {
                            work.push(NodeId::new(i % t.node_count()), x).unwrap();
                        }
                        let out = pool.run_phase(work, |_, x| x.wrapping_mul(31)).unwrap();
                        black_box(out.results.len());
                    }
                    start.elapsed()
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bind_restore, phase_dispatch
}
criterion_main!(benches);
