//! The `Runtime` on a kernel with several NUMA nodes: with
//! `NumaConfig::Detect` it sees them, makes one heap partition per node
//! bound to it, relocates an object graph on workers bound to the pages'
//! nodes, and its report says so. Placement and locality are the kernel's
//! answers (`move_pages` and `getcpu` through `hotmem_numa::kernel`).
//!
//! This machine has one node: the test runs for real in the emulated guest
//! of `cargo xtask numa-vm`; elsewhere it prints that it is skipped and
//! passes. Its output is guest output: placement and locality facts, no
//! timings.
#![cfg(feature = "numa")]

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{Mutator, NumaConfig, Runtime, WorkerBinding};
use hotmem_numa::heuristics::workers_for;
use hotmem_numa::kernel::{self, PageStatus};
use hotmem_numa::{AffinityPolicy, Topology, WorkerKind};
use hotmem_os::{Address, page_size};
use hotmem_page::PageState;
use std::time::Duration;

mod common;

/// Builds `n` small graphs (trees, lists, arrays), keeping every `keep`-th.
fn churn(
    me: &mut Mutator,
    roots: &RootTable,
    n: u64,
    keep: u64,
    ids: &mut Ids,
) -> Vec<GraphSummary> {
    let mut kept = Vec::new();
    for i in 0..n {
        let sum = match i % 3 {
            0 => build::tree(me, roots, (i % 4) as u32, 2, ids),
            1 => build::list(me, roots, 1 + i as usize % 12, 3, i % 2 == 0, ids),
            _ => build::array(me, roots, 1 + i as usize % 10, 1 + i as usize % 5, 2, ids),
        }
        .expect("the live set fits");
        if i % keep == 0 {
            kept.push(sum);
        } else {
            roots.pop();
        }
        me.poll();
    }
    kept
}

fn total(kept: &[GraphSummary]) -> GraphSummary {
    kept.iter().fold(GraphSummary::default(), |mut a, k| {
        a.objects += k.objects;
        a.bytes += k.bytes;
        a.digest = a.digest.wrapping_add(k.digest);
        a
    })
}

/// Every resident OS page of every heap page in use, checked with the
/// kernel: on the node of the heap page's partition. Returns how many
/// resident pages were checked.
fn heap_pages_on_their_nodes(rt: &Runtime, t: &Topology) -> usize {
    let mut checked = 0;
    for info in rt.heap().page_infos() {
        if info.state == PageState::Freed || info.used == 0 {
            continue;
        }
        let want = t
            .node(hotmem_numa::NodeId::new(info.node.index()))
            .expect("partition i is node i")
            .os_index();
        let pages: Vec<Address> = (0..info.used.div_ceil(page_size()))
            .map(|i| Address::new(info.start + i * page_size()))
            .collect();
        for (i, s) in kernel::page_nodes(&pages).unwrap().into_iter().enumerate() {
            match s {
                PageStatus::Node(n) => {
                    assert_eq!(
                        n, want,
                        "heap page {} ({:?}) of partition {}: OS page {i} on kernel node {n}",
                        info.id, info.page_type, info.node
                    );
                    checked += 1;
                }
                PageStatus::NotPresent => {}
                other => panic!("heap page {} OS page {i}: {other:?}", info.id),
            }
        }
    }
    checked
}

#[test]
fn the_runtime_partitions_binds_and_relocates_per_node() {
    let t = Topology::detect().unwrap();
    if t.node_count() < 2 {
        println!(
            "[numa_guest] SKIPPED: this kernel has {} NUMA node(s); this test needs >= 2 \
             and runs in `cargo xtask numa-vm`",
            t.node_count()
        );
        return;
    }
    let objects = SimpleObjects::new();
    let rt = common::builder(128 << 20, None)
        .numa(NumaConfig::Detect)
        // Pages freed by a collection are uncommitted right after it, so
        // that later allocations commit (and bind) memory again.
        .uncommit_delay(Duration::ZERO)
        .binding(objects.clone())
        .build()
        .unwrap();
    let nodes = t.node_count();
    assert_eq!(rt.numa().nodes, nodes);
    assert!(rt.numa().memory_bound, "partitions bound to their nodes");
    assert_eq!(rt.numa().worker_binding, WorkerBinding::Real);
    assert_eq!(rt.numa().source, "detected");
    assert_eq!(rt.partitions().len(), nodes, "one partition per node");
    assert_eq!(
        rt.gc_workers(),
        workers_for(&t, WorkerKind::Parallel, AffinityPolicy::BindDuringPhases)
    );
    assert!(rt.gc_workers() >= nodes, "never fewer workers than nodes");

    // A mutator on each node in turn (the thread bound to the node's CPUs,
    // so that the runtime gives it that node's partition) builds graphs.
    let roots = objects.root_table();
    let original = kernel::thread_affinity().unwrap();
    let mut kept: Vec<GraphSummary> = Vec::new();
    let mut ids = Ids::from(1);
    let mut relocated = 0;
    let mut items = 0;
    let mut observed = 0;
    let mut checked = 0;
    for cycle in 0..4u64 {
        for n in t.nodes() {
            bind_to(n.cpuset());
            let mut me = rt.attach_mutator().unwrap();
            assert_eq!(
                me.partition().index(),
                n.id().index(),
                "the node's partition"
            );
            kept.extend(churn(&mut me, &roots, 400, 5, &mut ids));
        }
        bind_to(&original);
        let mut me = rt.attach_mutator().unwrap();
        let stats = me.collect().unwrap();
        drop(me);
        relocated += stats.objects_relocated;
        let r = &stats.relocation;
        assert_eq!(r.binding, WorkerBinding::Real);
        assert_eq!(r.locality_ratio(), Some(1.0), "cycle {cycle}: {r:?}");
        assert_eq!(
            r.observed_locality_ratio(),
            Some(1.0),
            "cycle {cycle}: every page relocated on a CPU of its node (getcpu)"
        );
        items += r.items;
        observed += r.observed_local_items.unwrap_or(0);
        let want = total(&kept);
        assert_eq!(stats.live_objects as usize, want.objects);
        // SAFETY: no mutator is attached: nothing runs a collection or
        // mutates the graph while it is walked.
        let found = unsafe { objects.verify() }.unwrap();
        assert_eq!(found, want, "the graph is what was built");
        checked += heap_pages_on_their_nodes(&rt, &t);
        // Drop older graphs so that pages become sparse and get evacuated.
        while roots.len() > 200 {
            roots.swap_remove(cycle as usize % roots.len());
        }
        kept.clear();
        // SAFETY: as above.
        kept.push(unsafe { objects.verify() }.unwrap());
    }
    assert!(relocated > 0, "objects were relocated");
    let counters = rt.heap().counters();
    assert!(
        counters.uncommit_bytes > 0,
        "freed pages were uncommitted (and later ones committed again)"
    );
    let report = rt.report().to_string();
    assert!(report.contains("memory bound: true"), "{report}");
    assert!(
        report.contains("workers bound during relocation: real"),
        "{report}"
    );
    assert!(
        report.contains("(real; 100% on the node's CPUs per the kernel)"),
        "{report}"
    );
    println!(
        "[numa_guest] (guest output) {nodes} nodes, {} partitions, {} workers; 4 collections: \
         {relocated} objects relocated in {items} page items, {observed} of them on a CPU of the \
         page's node (getcpu); {checked} resident heap OS pages each on its partition's node \
         (move_pages); {} MiB uncommitted and {} MiB committed again over the run",
        rt.partitions().len(),
        rt.gc_workers(),
        counters.uncommit_bytes >> 20,
        counters.commit_bytes >> 20,
    );
    for line in report
        .lines()
        .filter(|l| l.starts_with("numa:") || l.contains("last collection"))
    {
        println!("[numa_guest] (guest output) report: {line}");
    }
}

/// Binds the calling thread to `cpus` (checked with the kernel).
fn bind_to(cpus: &hotmem_numa::CpuSet) {
    kernel::set_thread_affinity(cpus).expect("bind the test thread");
    assert_eq!(&kernel::thread_affinity().unwrap(), cpus);
}
