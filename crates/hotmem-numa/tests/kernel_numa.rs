//! The worker pool and memory binding against a kernel with several NUMA
//! nodes: every assertion here is the kernel's answer (`sched_getaffinity`,
//! `getcpu`, `move_pages`, `get_mempolicy` through [`hotmem_numa::kernel`]),
//! never the pool's own bookkeeping.
//!
//! This machine has one node; the tests run for real in the emulated
//! multi-node guest of `cargo xtask numa-vm` (2 nodes x 2 CPUs, 4 nodes x 1
//! CPU). On a one-node machine each test prints that it is skipped and
//! passes. What they print is guest output: locality and binding facts, no
//! timings (an emulated guest's timings are not NUMA timings).

use hotmem_numa::heuristics::{concurrent_workers, parallel_workers, workers_for};
use hotmem_numa::kernel::{self, PageStatus, PolicyMode};
use hotmem_numa::{
    AffinityPolicy, CpuSet, MemoryPolicy, NodeId, PhaseWork, PoolConfig, Topology, WorkerKind,
    WorkerPool,
};
use hotmem_os::{Address, MemRange, MemTag, Memory, page_size};
use hwlocality::cpu::binding::CpuBindingFlags;

/// The detected topology if it has two nodes or more; otherwise prints why
/// the test is skipped.
fn multi_node(test: &str) -> Option<Topology> {
    let t = Topology::detect().expect("detect the topology");
    if t.node_count() >= 2 {
        println!(
            "[kernel_numa {test}] (guest output) {} NUMA nodes, {} CPUs",
            t.node_count(),
            t.cpu_count()
        );
        Some(t)
    } else {
        println!(
            "[kernel_numa {test}] SKIPPED: this kernel has {} NUMA node(s); \
             these checks need >= 2 and run in `cargo xtask numa-vm`",
            t.node_count()
        );
        None
    }
}

/// The kernel's node number of `node`.
fn os(t: &Topology, node: NodeId) -> u32 {
    t.node(node).expect("a node of t").os_index()
}

/// Binds the calling thread to `cpus` (hwloc; checked with the kernel).
fn bind_thread(t: &Topology, cpus: &CpuSet) {
    let set: hwlocality::cpu::cpuset::CpuSet = cpus
        .iter()
        .map(|c| hwlocality::bitmap::BitmapIndex::try_from(c).unwrap())
        .collect();
    t.as_hwloc()
        .bind_cpu(&set, CpuBindingFlags::THREAD)
        .expect("bind the test thread");
    assert_eq!(&kernel::thread_affinity().unwrap(), cpus);
}

/// The kernel's view of the worker running an item.
struct Seen {
    item_node: NodeId,
    affinity: CpuSet,
    cpu: usize,
    kernel_node: u32,
}

#[test]
fn bound_workers_run_on_their_node_and_get_their_mask_back() {
    let Some(t) = multi_node("binding") else {
        return;
    };
    let workers = t.node_count();
    let mut pool = WorkerPool::new(
        &t,
        PoolConfig::new(workers, AffinityPolicy::BindDuringPhases),
    )
    .unwrap();
    let original: Vec<CpuSet> = pool.on_each_worker(|_| kernel::thread_affinity().unwrap());
    let mut work = PhaseWork::new(&t);
    for node in t.node_ids() {
        for i in 0..64u32 {
            work.push(node, i).unwrap();
        }
    }
    let out = pool
        .run_phase(work, |ctx, _| {
            let here = kernel::current_cpu_and_node().unwrap();
            Seen {
                item_node: ctx.node(),
                affinity: kernel::thread_affinity().unwrap(),
                cpu: here.cpu,
                kernel_node: here.node,
            }
        })
        .unwrap();
    assert_eq!(out.results.len(), 64 * t.node_count());
    for s in &out.results {
        let node_cpus = t.node(s.item_node).unwrap().cpuset();
        assert!(
            s.affinity.is_subset(node_cpus),
            "sched_getaffinity {} is inside {}'s cpus {node_cpus}",
            s.affinity,
            s.item_node
        );
        assert!(node_cpus.contains(s.cpu), "getcpu cpu {}", s.cpu);
        assert_eq!(s.kernel_node, os(&t, s.item_node), "getcpu node");
    }
    let after: Vec<CpuSet> = pool.on_each_worker(|_| kernel::thread_affinity().unwrap());
    assert_eq!(after, original, "sched_getaffinity after the phase");
    println!(
        "[kernel_numa binding] (guest output) {} items on {workers} bound workers: \
         every one inside its node's cpus (sched_getaffinity) and on its node (getcpu); \
         masks after the phase = before: {}",
        out.results.len(),
        original
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );

    // A panicking item: the phase fails, every worker still gets its mask back.
    let mut work = PhaseWork::new(&t);
    for node in t.node_ids() {
        for i in 0..16u32 {
            work.push(node, i).unwrap();
        }
    }
    let last = NodeId::new(t.node_count() - 1);
    let err = pool
        .run_phase(work, |ctx, i| {
            if ctx.node() == last && i == 7 {
                panic!("item 7 of {last} panics on purpose");
            }
            kernel::current_cpu_and_node().unwrap().node
        })
        .expect_err("an item panicked");
    assert!(err.message().unwrap_or("").contains("on purpose"));
    let after: Vec<CpuSet> = pool.on_each_worker(|_| kernel::thread_affinity().unwrap());
    assert_eq!(after, original, "sched_getaffinity after a panicking phase");
    println!(
        "[kernel_numa binding] (guest output) after a panicking item: masks = before (sched_getaffinity)"
    );
}

/// A page of the from-space and where its copy goes.
#[derive(Copy, Clone)]
struct Page {
    from: Address,
    to: Address,
    /// The kernel's node for `from` (`move_pages`).
    node: NodeId,
}

/// `count` committed pages split into one partition per node, each bound to
/// its node (strict) before the first touch, then touched.
fn bound_partitions(t: &Topology, memory: &Memory, count: usize) -> hotmem_os::Reservation {
    let r = memory
        .reserve(count * page_size(), MemTag::JAVA_HEAP)
        .unwrap();
    r.commit(r.range()).unwrap();
    let per = count / t.node_count();
    for node in t.node_ids() {
        let part = r
            .subrange(node.index() * per * page_size(), per * page_size())
            .unwrap();
        // SAFETY: committed above; the reservation outlives the call.
        unsafe { t.bind_memory(part, node, MemoryPolicy::Strict) }.unwrap();
    }
    // SAFETY: committed, and only this thread uses it.
    unsafe { r.start().as_ptr::<u8>().write_bytes(0x5A, r.len()) };
    r
}

/// The kernel's node for every page of `range`.
fn kernel_nodes(t: &Topology, range: MemRange) -> Vec<Option<NodeId>> {
    let pages: Vec<Address> = (0..range.len() / page_size())
        .map(|i| range.start() + i * page_size())
        .collect();
    kernel::page_nodes(&pages)
        .unwrap()
        .into_iter()
        .map(|s| match s {
            PageStatus::Node(os) => t.node_with_os_index(os),
            _ => None,
        })
        .collect()
}

/// Runs one relocation phase over `pages` and returns the share of items
/// that ran on a CPU of the node the kernel put their page on (`getcpu`
/// against `move_pages`), with the pool's own count for comparison.
fn kernel_locality(pool: &mut WorkerPool, pages: &[Page]) -> (f64, u64) {
    let t = pool.topology().clone();
    let mut work = PhaseWork::new(&t);
    for p in pages {
        work.push(p.node, *p).unwrap();
    }
    let out = pool
        .run_phase(work, |_, p: Page| {
            // SAFETY: both pages are committed and live for the phase; each
            // item owns its to-page and only reads its from-page.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    p.from.as_ptr::<u8>(),
                    p.to.as_ptr::<u8>(),
                    page_size(),
                )
            };
            let here = kernel::current_cpu_and_node().unwrap();
            u64::from(here.node == t.node(p.node).unwrap().os_index())
        })
        .unwrap();
    let local: u64 = out.results.iter().sum();
    (local as f64 / pages.len() as f64, out.stats.local_items())
}

#[test]
fn items_run_on_the_node_the_kernel_put_their_memory_on() {
    let Some(t) = multi_node("locality") else {
        return;
    };
    const PAGES: usize = 512;
    let memory = Memory::new();
    let from = bound_partitions(&t, &memory, PAGES);
    let to = bound_partitions(&t, &memory, PAGES);
    let nodes = kernel_nodes(&t, from.range());
    let per = PAGES / t.node_count();
    let mut pages = Vec::with_capacity(PAGES);
    for (i, node) in nodes.iter().enumerate() {
        let node = node.expect("every touched page is on a node the topology knows");
        if i < per * t.node_count() {
            assert_eq!(
                node.index(),
                i / per,
                "page {i}: partition bound to its node"
            );
        }
        pages.push(Page {
            from: from.start() + i * page_size(),
            to: to.start() + i * page_size(),
            node,
        });
    }

    // The workers start confined to node 0's CPUs (as a cgroup or taskset
    // would leave them): without affinity every item runs there.
    let before = kernel::thread_affinity().unwrap();
    let node0 = t.nodes()[0].cpuset().clone();
    bind_thread(&t, &node0);
    let workers = workers_for(&t, WorkerKind::Parallel, AffinityPolicy::BindDuringPhases);
    let mut confined = WorkerPool::new(&t, PoolConfig::new(workers, AffinityPolicy::Off)).unwrap();
    bind_thread(&t, &before);
    let on_node0 = pages.iter().filter(|p| p.node.index() == 0).count() as f64;
    let (off, _) = kernel_locality(&mut confined, &pages);
    assert_eq!(
        off,
        on_node0 / PAGES as f64,
        "unbound on node 0: only node 0's items are local"
    );
    confined.set_affinity(AffinityPolicy::BindDuringPhases);
    let (on, pool_count) = kernel_locality(&mut confined, &pages);
    assert_eq!(on, 1.0, "bound: every item on its memory's node");
    assert_eq!(pool_count, PAGES as u64, "the pool's own count agrees");

    // Workers free to run anywhere: the figure without affinity is whatever
    // the scheduler does; printed, not asserted.
    let mut free = WorkerPool::new(&t, PoolConfig::new(workers, AffinityPolicy::Off)).unwrap();
    let (free_off, _) = kernel_locality(&mut free, &pages);
    free.set_affinity(AffinityPolicy::BindDuringPhases);
    let (free_on, _) = kernel_locality(&mut free, &pages);
    assert_eq!(free_on, 1.0);
    println!(
        "[kernel_numa locality] (guest output, measured by the kernel: getcpu vs move_pages) \
         {PAGES} pages on {} nodes, {workers} workers: \
         with affinity {:.1}%; without, workers confined to node 0 {:.1}%, workers unconfined {:.1}%",
        t.node_count(),
        100.0 * on,
        100.0 * off,
        100.0 * free_off
    );
}

#[test]
fn bound_memory_stays_on_its_node_and_anonymous_recommit_loses_the_binding() {
    let Some(t) = multi_node("memory") else {
        return;
    };
    let memory = Memory::new();
    let last = NodeId::new(t.node_count() - 1);
    let pages = 16;
    for node in t.node_ids() {
        let r = memory
            .reserve(pages * page_size(), MemTag::JAVA_HEAP)
            .unwrap();
        let range = r.range();
        r.commit(range).unwrap();
        // SAFETY: committed; the reservation lives to the end of the loop.
        unsafe { t.bind_memory(range, node, MemoryPolicy::Strict) }.unwrap();
        let policy = kernel::memory_policy(range.start()).unwrap();
        assert_eq!(policy.mode, PolicyMode::Bind);
        assert_eq!(policy.nodes, [os(&t, node)]);
        // Touch from a CPU of another node: the binding, not the toucher,
        // decides.
        let other = t
            .node(NodeId::new((node.index() + 1) % t.node_count()))
            .unwrap();
        touch_from(&t, other.cpuset(), range);
        assert!(
            kernel_nodes(&t, range).iter().all(|n| *n == Some(node)),
            "bound to {node}, touched from {}: {:?}",
            other.id(),
            kernel_nodes(&t, range)
        );

        // Uncommit and commit again: `hotmem_os` replaces an anonymous
        // mapping, and the kernel's policy goes with the old mapping.
        r.uncommit(range).unwrap();
        r.commit(range).unwrap();
        let lost = kernel::memory_policy(range.start()).unwrap();
        assert_eq!(lost.mode, PolicyMode::Default, "the binding is gone");
        touch_from(&t, other.cpuset(), range);
        assert!(
            kernel_nodes(&t, range)
                .iter()
                .all(|n| *n == Some(other.id())),
            "unbound: first touch from {} puts the pages there",
            other.id()
        );
        // Binding again after the recommit (as the heap does) fixes it.
        r.uncommit(range).unwrap();
        r.commit(range).unwrap();
        // SAFETY: committed again just above.
        unsafe { t.bind_memory(range, node, MemoryPolicy::Strict) }.unwrap();
        touch_from(&t, other.cpuset(), range);
        assert!(kernel_nodes(&t, range).iter().all(|n| *n == Some(node)));
        println!(
            "[kernel_numa memory] (guest output, move_pages/get_mempolicy) {pages} pages bound to {node}: \
             on {node} though touched from {}; after uncommit+recommit of anonymous memory the policy is \
             MPOL_DEFAULT and the pages follow the toucher to {}; bound again, back on {node}",
            other.id(),
            other.id()
        );
    }

    // memfd-backed memory (what the heap's partitions are): the policy
    // belongs to the shared file, so it survives uncommit (a hole punched in
    // the file), recommit and remapping.
    // Map, bind, then commit (as the heap does): committing allocates the
    // pages, under the file's policy.
    let phys = memory.physical(pages * page_size()).unwrap();
    let r = memory
        .reserve(2 * pages * page_size(), MemTag::JAVA_HEAP)
        .unwrap();
    let a = r.map(r.start(), &phys, 0, pages * page_size()).unwrap();
    // SAFETY: mapped just above; the reservation lives to the end.
    unsafe { t.bind_memory(a, last, MemoryPolicy::Strict) }.unwrap();
    phys.commit(0, pages * page_size()).unwrap();
    let elsewhere = t.nodes()[0].cpuset().clone();
    touch_from(&t, &elsewhere, a);
    assert!(kernel_nodes(&t, a).iter().all(|n| *n == Some(last)));
    phys.uncommit(0, pages * page_size()).unwrap();
    phys.commit(0, pages * page_size()).unwrap();
    touch_from(&t, &elsewhere, a);
    assert!(
        kernel_nodes(&t, a).iter().all(|n| *n == Some(last)),
        "memfd: after uncommit and recommit still on {last}"
    );
    r.unmap(a).unwrap();
    phys.uncommit(0, pages * page_size()).unwrap();
    phys.commit(0, pages * page_size()).unwrap();
    let b = r
        .map(
            r.start() + pages * page_size(),
            &phys,
            0,
            pages * page_size(),
        )
        .unwrap();
    touch_from(&t, &elsewhere, b);
    assert!(
        kernel_nodes(&t, b).iter().all(|n| *n == Some(last)),
        "memfd: mapped again elsewhere, the file's policy still places it on {last}"
    );
    println!(
        "[kernel_numa memory] (guest output, move_pages) memfd memory bound to {last}: still on {last} \
         after uncommit+recommit and after being mapped at another address"
    );
}

/// Writes every byte of `range` from a thread bound to `cpus`.
fn touch_from(t: &Topology, cpus: &CpuSet, range: MemRange) {
    let addr = range.start().get();
    let len = range.len();
    std::thread::scope(|s| {
        s.spawn(|| {
            bind_thread(t, cpus);
            // SAFETY: the caller's range is committed (or mapped) memory of
            // its own that nothing else touches while this thread writes.
            unsafe { (addr as *mut u8).write_bytes(0xA5, len) };
        });
    });
}

#[test]
fn worker_heuristics_on_the_detected_machine() {
    let Some(t) = multi_node("heuristics") else {
        return;
    };
    let cpus = t.cpu_count();
    let nodes = t.node_count();
    let quarter = cpus.div_ceil(4).max(1);
    let sixty = (cpus * 3).div_ceil(5).max(1);
    assert_eq!(concurrent_workers(cpus), quarter);
    assert_eq!(parallel_workers(cpus), sixty);
    let off_c = workers_for(&t, WorkerKind::Concurrent, AffinityPolicy::Off);
    let on_c = workers_for(&t, WorkerKind::Concurrent, AffinityPolicy::BindDuringPhases);
    let off_p = workers_for(&t, WorkerKind::Parallel, AffinityPolicy::Off);
    let on_p = workers_for(&t, WorkerKind::Parallel, AffinityPolicy::BindDuringPhases);
    assert_eq!((off_c, off_p), (quarter, sixty));
    assert_eq!(
        on_c,
        quarter.max(nodes),
        "never fewer bound workers than nodes"
    );
    assert_eq!(on_p, sixty.max(nodes));
    assert_eq!(
        AffinityPolicy::default_for(&t),
        AffinityPolicy::BindDuringPhases
    );
    let pool = WorkerPool::new(&t, PoolConfig::sized_for(&t, WorkerKind::Concurrent)).unwrap();
    assert_eq!(pool.worker_count(), on_c);
    // Every node has a worker whose home it is.
    let homes: std::collections::BTreeSet<usize> = (0..pool.worker_count())
        .map(|i| pool.worker_home(i).unwrap().index())
        .collect();
    assert_eq!(homes.len(), nodes);
    println!(
        "[kernel_numa heuristics] (guest output) {cpus} CPUs, {nodes} nodes: concurrent {off_c} (25%) -> {on_c} bound, \
         parallel {off_p} (60%) -> {on_p} bound"
    );
}
