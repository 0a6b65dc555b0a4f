//! Real binding on this machine's detected topology: during a phase a worker
//! is bound to its node's CPUs (read back from the OS), and afterwards it is
//! back on its original mask.
//!
//! To make "original" differ from "node" on any machine with two CPUs or
//! more, the test thread first narrows its own binding to one CPU; the pool's
//! threads inherit that mask, so binding to the node widens it and restoring
//! narrows it again.

use hotmem_numa::{
    AffinityPolicy, BindingKind, CpuSet, NodeId, PhaseWork, PoolConfig, Topology, WorkerPool,
};
use hwlocality::cpu::binding::CpuBindingFlags;

fn thread_binding(t: &Topology) -> CpuSet {
    let set = t
        .as_hwloc()
        .cpu_binding(CpuBindingFlags::THREAD)
        .expect("read the test thread's binding");
    set.iter_set().map(usize::from).collect()
}

fn bind_thread(t: &Topology, cpus: &CpuSet) {
    let set: hwlocality::cpu::cpuset::CpuSet = cpus
        .iter()
        .map(|c| hwlocality::bitmap::BitmapIndex::try_from(c).unwrap())
        .collect();
    t.as_hwloc()
        .bind_cpu(&set, CpuBindingFlags::THREAD)
        .expect("bind the test thread");
}

/// What an item saw: its node and the OS's answer for the worker's binding.
struct Seen {
    node: NodeId,
    binding: CpuSet,
    bound: Option<NodeId>,
}

fn phase(pool: &mut WorkerPool, per_node: usize) -> hotmem_numa::PhaseOutcome<Seen> {
    let t = pool.topology().clone();
    let mut work = PhaseWork::new(&t);
    for node in t.node_ids() {
        for i in 0..per_node {
            work.push(node, i).unwrap();
        }
    }
    pool.run_phase(work, |ctx, _| Seen {
        node: ctx.node(),
        binding: ctx.thread_binding().expect("read back from the OS"),
        bound: ctx.bound_node(),
    })
    .unwrap()
}

#[test]
fn workers_bind_to_the_node_during_the_phase_and_restore_after() {
    let t = Topology::detect().unwrap();
    let before = thread_binding(&t);
    // One CPU of the test thread's own mask that the topology holds: the
    // mask the workers start with. Taken from the thread's mask, not from
    // the machine, so that the test assumes nothing about CPUs the process
    // may not run on (taskset, cgroups).
    let cpu = before
        .iter()
        .filter(|&c| t.cpuset().contains(c))
        .last()
        .expect("the test thread may run on a CPU of the topology");
    let narrow: CpuSet = std::iter::once(cpu).collect();
    bind_thread(&t, &narrow);
    assert_eq!(thread_binding(&t), narrow);

    let workers = t.node_count().max(2);
    let mut pool = WorkerPool::new(
        &t,
        PoolConfig::new(workers, AffinityPolicy::BindDuringPhases),
    )
    .unwrap();
    // Let the test thread run anywhere again; the workers keep the narrow mask.
    bind_thread(&t, &before);
    for b in pool.worker_bindings() {
        assert_eq!(
            b.unwrap(),
            narrow,
            "workers inherit the spawning thread's mask"
        );
    }

    let out = phase(&mut pool, 64);
    assert_eq!(out.stats.binding, BindingKind::Real);
    assert_eq!(pool.binding_kind(), BindingKind::Real);
    let text = out.stats.to_string();
    assert!(text.contains("real bindings"), "{text}");
    assert!(!text.contains("simulated"), "{text}");
    assert_eq!(out.results.len(), 64 * t.node_count());
    for s in &out.results {
        assert_eq!(s.bound, Some(s.node));
        assert_eq!(
            &s.binding,
            t.node(s.node).unwrap().cpuset(),
            "bound to the node's cpuset, as the OS reports it"
        );
    }
    assert_eq!(out.stats.locality_ratio(), 1.0);
    // Bound to the node's CPUs, the worker is always seen on one of them.
    assert_eq!(out.stats.observed_locality_ratio(), Some(1.0));
    assert_eq!(out.stats.bind_failures(), 0);
    for w in out.stats.workers.iter().filter(|w| !w.bindings.is_empty()) {
        assert_eq!(w.original.as_ref(), Some(&narrow));
        assert_eq!(
            w.restored.as_ref(),
            Some(&narrow),
            "read back after restore"
        );
    }
    assert!(out.stats.restores() >= 1);
    for b in pool.worker_bindings() {
        assert_eq!(
            b.unwrap(),
            narrow,
            "back to the original mask after the phase"
        );
    }
    assert_eq!(
        pool.binding_record(),
        None,
        "real bindings are not recorded"
    );
}

#[test]
fn affinity_off_leaves_the_os_binding_alone() {
    let t = Topology::detect().unwrap();
    let mut pool = WorkerPool::new(&t, PoolConfig::new(2, AffinityPolicy::Off)).unwrap();
    let original: Vec<CpuSet> = pool
        .worker_bindings()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let out = phase(&mut pool, 16);
    assert_eq!(out.stats.binds(), 0);
    for s in &out.results {
        assert_eq!(s.bound, None);
        assert!(original.contains(&s.binding));
    }
    let after: Vec<CpuSet> = pool
        .worker_bindings()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(after, original);
    // On one node every unbound item is local; on several, only if the
    // workers' mask lies within one node.
    if t.node_count() == 1 {
        assert_eq!(out.stats.locality_ratio(), 1.0);
    }
}
