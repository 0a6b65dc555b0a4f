//! Real binding on this machine's detected topology: during a phase a worker
//! is bound to its node's CPUs (read back from the OS), and afterwards it is
//! back on its original mask; and memory binding's contract across an
//! uncommit and a commit, read back with `get_mempolicy`.
//!
//! To make "original" differ from "node" on any machine with two CPUs or
//! more, the test thread first narrows its own binding to one CPU; the pool's
//! threads inherit that mask, so binding to the node widens it and restoring
//! narrows it again.

use hotmem_numa::kernel::{self, AddressPolicy, PolicyMode};
use hotmem_numa::{
    AffinityPolicy, BindingKind, CpuSet, MemoryBindError, MemoryPolicy, MemoryUnsupported, NodeId,
    PhaseWork, PoolConfig, Topology, WorkerPool,
};
use hotmem_os::{Address, MemRange, MemTag, Memory, page_size};
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

/// A node with memory (a CPU-only node refuses a strict binding).
fn node_with_memory(t: &Topology) -> NodeId {
    t.nodes()
        .iter()
        .rev()
        .find(|n| n.memory_bytes() != Some(0))
        .expect("a node with memory")
        .id()
}

/// Binds `range` (mapped) to `node`, strictly; false where the OS refuses
/// memory binding altogether (a seccomp filter in a container).
fn bind(t: &Topology, range: MemRange, node: NodeId) -> bool {
    // SAFETY: the callers pass ranges they mapped and keep mapped.
    match unsafe { t.bind_memory(range, node, MemoryPolicy::Strict) } {
        Ok(()) => true,
        Err(MemoryBindError::Unsupported(MemoryUnsupported::Os)) => false,
        Err(e) => panic!("binding to {node} failed: {e}"),
    }
}

fn policy(addr: Address) -> AddressPolicy {
    kernel::memory_policy(addr).expect("get_mempolicy of a mapped address")
}

/// The contract, decided for issue 29: `hotmem_os` commits and uncommits
/// anonymous memory by replacing the mapping, and the kernel keeps a
/// memory policy per mapping, so a bound range that is uncommitted and
/// committed again has no policy, and is bound again by its owner (as
/// `hotmem_os::Reservation::commit` and `Topology::bind_memory` say).
/// memfd memory keeps it: the policy is the file's. One node is enough to
/// see the policies; `kernel_numa` shows where the pages land on several.
#[test]
fn anonymous_memory_is_bound_again_after_a_recommit_and_memfd_memory_keeps_it() {
    let t = Topology::detect().unwrap();
    let node = node_with_memory(&t);
    let bound = AddressPolicy {
        mode: PolicyMode::Bind,
        nodes: vec![t.node(node).unwrap().os_index()],
    };
    let memory = Memory::new();
    let pages = 4;
    let r = memory
        .reserve(pages * page_size(), MemTag::JAVA_HEAP)
        .unwrap();
    let range = r.range();
    r.commit(range).unwrap();
    if !bind(&t, range, node) {
        println!("[real_binding memory] SKIPPED: the OS refuses memory binding here");
        return;
    }
    let (first, second) = (range.start(), range.start() + page_size());
    assert_eq!(policy(first), bound);

    // Only the part committed again loses the policy.
    let page = r.subrange(0, page_size()).unwrap();
    r.uncommit(page).unwrap();
    r.commit(page).unwrap();
    assert_eq!(
        policy(first).mode,
        PolicyMode::Default,
        "went with the old mapping"
    );
    assert_eq!(policy(second), bound, "the rest is still bound");
    r.uncommit(range).unwrap();
    r.commit(range).unwrap();
    assert_eq!(policy(second).mode, PolicyMode::Default);
    // Bound again after the commit: bound.
    assert!(bind(&t, range, node));
    assert_eq!(policy(first), bound);
    assert_eq!(policy(second), bound);

    // memfd memory: bound through one mapping, the policy belongs to the
    // file and outlives an uncommit (a punched hole), a commit, and
    // mapping the segment elsewhere.
    let len = pages * page_size();
    let phys = memory.physical(len).unwrap();
    let r = memory.reserve(2 * len, MemTag::JAVA_HEAP).unwrap();
    let a = r.map(r.start(), &phys, 0, len).unwrap();
    assert!(bind(&t, a, node));
    phys.commit(0, len).unwrap();
    phys.uncommit(0, len).unwrap();
    phys.commit(0, len).unwrap();
    assert_eq!(
        policy(a.start()),
        bound,
        "memfd: kept across uncommit and commit"
    );
    r.unmap(a).unwrap();
    let b = r.map(r.start() + len, &phys, 0, len).unwrap();
    assert_eq!(
        policy(b.start()),
        bound,
        "memfd: kept by a new mapping of the file"
    );
}
