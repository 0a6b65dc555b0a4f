//! Phases on synthetic 2- and 4-node topologies with 1, 2, 4 and 16 workers.
//!
//! Bindings cannot reach the OS on a model of another machine, so the pool
//! records the binding each worker would make; these tests check that record,
//! what each item's closure saw, and the phase statistics.

use hotmem_numa::{
    AffinityPolicy, BindingAction, BindingEvent, BindingKind, CpuSet, NodeId, PhaseOutcome,
    PhaseStats, PhaseWork, PoolConfig, Topology, WorkerPool,
};
use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};

/// Messages of the panics these tests provoke on purpose.
const EXPECTED_PANICS: [&str; 2] = ["relocation of item", "expected panic"];

/// Keeps the panics these tests provoke out of the output, passing every
/// other panic (a failing assertion) on to the hook that was installed. Set
/// once and never swapped back, so that tests running in parallel cannot
/// restore each other's hooks.
fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
                .unwrap_or("");
            let expected = info.payload().is::<PanicsWhenDropped>()
                || EXPECTED_PANICS.iter().any(|m| msg.starts_with(m));
            if !expected {
                previous(info);
            }
        }));
    });
}

const TOPOLOGIES: [(&str, usize); 2] = [
    ("pack:2 numa:1 core:4 pu:1", 2),
    ("pack:4 numa:1 core:2 pu:2", 4),
];
const WORKERS: [usize; 4] = [1, 2, 4, 16];

/// An item: its index and the node holding it.
#[derive(Copy, Clone, Debug)]
struct Item {
    id: usize,
    node: NodeId,
}

/// What a closure saw while processing an item.
#[derive(Debug)]
struct Seen {
    item: Item,
    ctx_node: NodeId,
    bound: Option<NodeId>,
    binding: CpuSet,
    worker: usize,
}

/// Uneven work: node `i` gets `40 + 23 * i` items, so workers move on.
fn items(t: &Topology) -> Vec<Item> {
    let mut v = Vec::new();
    for node in t.node_ids() {
        for _ in 0..40 + 23 * node.index() {
            v.push(Item { id: v.len(), node });
        }
    }
    v
}

/// Runs one phase over `items`, counting each item's processing.
fn run(
    pool: &mut WorkerPool,
    items: &[Item],
    counts: &[AtomicU32],
    panic_every: Option<usize>,
) -> Result<PhaseOutcome<Seen>, hotmem_numa::PhasePanicked<Seen>> {
    let mut work = PhaseWork::new(pool.topology());
    for it in items {
        work.push(it.node, it).unwrap();
    }
    pool.run_phase(work, |ctx, it: &Item| {
        counts[it.id].fetch_add(1, Ordering::Relaxed);
        if panic_every.is_some_and(|k| it.id % k == 0) {
            panic!("relocation of item {} failed", it.id);
        }
        Seen {
            item: *it,
            ctx_node: ctx.node(),
            bound: ctx.bound_node(),
            binding: ctx.thread_binding().unwrap(),
            worker: ctx.worker(),
        }
    })
}

/// The checks every phase must pass, affinity on or off.
fn check_common(t: &Topology, items: &[Item], counts: &[AtomicU32], stats: &PhaseStats) {
    // Each item exactly once, every queue drained.
    for (i, c) in counts.iter().enumerate() {
        assert_eq!(c.load(Ordering::Relaxed), 1, "item {i}");
    }
    assert_eq!(stats.left_in_queues, 0);
    assert_eq!(stats.items(), items.len() as u64);
    for n in &stats.nodes {
        let want = items.iter().filter(|i| i.node == n.node).count() as u64;
        assert_eq!(n.items, want, "{}", n.node);
    }
    assert_eq!(
        stats.workers.iter().map(|w| w.items).sum::<u64>(),
        items.len() as u64
    );
    assert_eq!(stats.binding, BindingKind::Simulated);
    assert_eq!(stats.observed_locality_ratio(), None);
    // A worker takes from each node at most once a phase.
    for w in &stats.workers {
        let distinct: BTreeSet<_> = w.visited.iter().collect();
        assert_eq!(distinct.len(), w.visited.len(), "worker {}", w.worker);
        assert!(w.visited.len() <= t.node_count());
    }
}

/// Per worker, this phase's events: binds to distinct nodes, then one restore
/// to the full machine mask (a synthetic worker starts unbound).
fn check_record(t: &Topology, record: &[BindingEvent], phase: u64, stats: &PhaseStats) {
    for w in &stats.workers {
        let events: Vec<_> = record
            .iter()
            .filter(|e| e.phase == phase && e.worker == w.worker)
            .map(|e| e.action.clone())
            .collect();
        if w.bindings.is_empty() {
            assert!(
                events.is_empty(),
                "worker {} never bound: {events:?}",
                w.worker
            );
            continue;
        }
        let (last, binds) = events.split_last().unwrap();
        assert_eq!(
            last,
            &BindingAction::Restore {
                cpus: t.cpuset().clone()
            },
            "worker {} ends restored",
            w.worker
        );
        let mut nodes = BTreeSet::new();
        for (b, (node, cpus)) in binds.iter().zip(&w.bindings) {
            assert_eq!(
                b,
                &BindingAction::BindToNode {
                    node: *node,
                    cpus: cpus.clone()
                }
            );
            assert_eq!(cpus, t.node(*node).unwrap().cpuset());
            assert!(
                nodes.insert(*node),
                "at most one binding per node per phase"
            );
        }
        assert_eq!(binds.len(), w.bindings.len());
        assert_eq!(w.rebinds as usize, w.bindings.len() - 1);
        assert_eq!(w.original.as_ref(), Some(t.cpuset()));
        assert!(w.restored_original());
    }
}

fn check_unbound_between_phases(t: &Topology, pool: &WorkerPool) {
    for b in pool.worker_bindings() {
        assert_eq!(&b.unwrap(), t.cpuset());
    }
}

#[test]
fn affinity_on_every_item_on_a_worker_bound_to_its_node() {
    for (desc, nodes) in TOPOLOGIES {
        let t = Topology::synthetic(desc).unwrap();
        assert_eq!(t.node_count(), nodes);
        let items = items(&t);
        for workers in WORKERS {
            let mut pool = WorkerPool::new(
                &t,
                PoolConfig::new(workers, AffinityPolicy::BindDuringPhases),
            )
            .unwrap();
            // Spread: every node has a home worker when there are enough.
            let homes: BTreeSet<_> = (0..workers).map(|i| pool.worker_home(i).unwrap()).collect();
            assert_eq!(homes.len(), workers.min(nodes));

            for phase in 1..=2u64 {
                let counts: Vec<_> = items.iter().map(|_| AtomicU32::new(0)).collect();
                let out = run(&mut pool, &items, &counts, None).unwrap();
                let stats = &out.stats;
                assert_eq!(stats.phase, phase);
                check_common(&t, &items, &counts, stats);
                assert_eq!(out.results.len(), items.len());
                for s in &out.results {
                    assert_eq!(s.ctx_node, s.item.node);
                    assert_eq!(s.bound, Some(s.item.node), "{desc} {workers}w {s:?}");
                    assert_eq!(&s.binding, t.node(s.item.node).unwrap().cpuset());
                    assert!(s.worker < workers);
                }
                assert_eq!(stats.locality_ratio(), 1.0, "{desc}, {workers} workers");
                assert_eq!(stats.restores() as usize, {
                    stats
                        .workers
                        .iter()
                        .filter(|w| !w.bindings.is_empty())
                        .count()
                });
                assert!(stats.binds() <= (workers * nodes) as u64);
                check_record(&t, &pool.binding_record().unwrap(), phase, stats);
                check_unbound_between_phases(&t, &pool);
            }
        }
    }
}

#[test]
fn affinity_off_binds_nothing_and_is_not_local_on_several_nodes() {
    for (desc, _) in TOPOLOGIES {
        let t = Topology::synthetic(desc).unwrap();
        let items = items(&t);
        for workers in WORKERS {
            let mut pool =
                WorkerPool::new(&t, PoolConfig::new(workers, AffinityPolicy::Off)).unwrap();
            let counts: Vec<_> = items.iter().map(|_| AtomicU32::new(0)).collect();
            let out = run(&mut pool, &items, &counts, None).unwrap();
            check_common(&t, &items, &counts, &out.stats);
            for s in &out.results {
                assert_eq!(s.bound, None);
                assert_eq!(&s.binding, t.cpuset());
            }
            assert_eq!(out.stats.binds(), 0);
            assert_eq!(
                out.stats.local_items(),
                0,
                "unbound workers span every node"
            );
            assert_eq!(pool.binding_record().unwrap(), vec![]);
        }
    }
}

#[test]
fn bindings_are_restored_when_items_panic() {
    quiet_expected_panics();
    for (desc, _) in TOPOLOGIES {
        let t = Topology::synthetic(desc).unwrap();
        let items = items(&t);
        for workers in WORKERS {
            let mut pool = WorkerPool::new(
                &t,
                PoolConfig::new(workers, AffinityPolicy::BindDuringPhases),
            )
            .unwrap();
            let counts: Vec<_> = items.iter().map(|_| AtomicU32::new(0)).collect();
            let err = run(&mut pool, &items, &counts, Some(7)).unwrap_err();
            let panicked = items.iter().filter(|i| i.id % 7 == 0).count();
            assert_eq!(err.stats.panicked_items(), panicked as u64);
            assert_eq!(err.results.len(), items.len() - panicked);
            assert!(err.message().unwrap().starts_with("relocation of item"));
            check_common(&t, &items, &counts, &err.stats);
            check_record(&t, &pool.binding_record().unwrap(), 1, &err.stats);
            check_unbound_between_phases(&t, &pool);
            // The pool keeps working after a panicked phase.
            let counts: Vec<_> = items.iter().map(|_| AtomicU32::new(0)).collect();
            let out = run(&mut pool, &items, &counts, None).unwrap();
            assert_eq!(out.stats.locality_ratio(), 1.0);
        }
    }
}

/// A panic payload whose own `Drop` panics (`std::panic::panic_any`).
struct PanicsWhenDropped;

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("expected panic: a payload's drop");
    }
}

#[test]
fn a_panic_payload_that_panics_when_dropped_cannot_skip_the_restore() {
    // Issue 12: a worker kept the first payload and dropped the others; a
    // payload whose drop panicked unwound out of the phase before the
    // worker restored its binding and handed in its report, which left the
    // thread bound and made `run_phase` panic on the missing report.
    quiet_expected_panics();
    let t = Topology::synthetic(TOPOLOGIES[0].0).unwrap();
    let mut pool =
        WorkerPool::new(&t, PoolConfig::new(1, AffinityPolicy::BindDuringPhases)).unwrap();
    let mut work = PhaseWork::new(&t);
    for i in 0..4usize {
        work.push(NodeId::new(i % 2), i).unwrap();
    }
    let err = pool
        .run_phase(work, |_, i| {
            if i < 3 {
                std::panic::panic_any(PanicsWhenDropped);
            }
            i
        })
        .unwrap_err();
    assert_eq!(err.stats.panicked_items(), 3);
    assert_eq!(err.results, vec![3]);
    let w = &err.stats.workers[0];
    assert_eq!(w.bindings.len(), 2);
    assert!(w.restored_original(), "{w:?}");
    let record = pool.binding_record().unwrap();
    assert_eq!(
        record.last().map(|e| &e.action),
        Some(&BindingAction::Restore {
            cpus: t.cpuset().clone()
        })
    );
    check_unbound_between_phases(&t, &pool);
    // The first payload is handed back; dropping it would panic again.
    assert!(err.payload.is::<PanicsWhenDropped>());
    std::mem::forget(err.payload);
    // The worker thread is alive and the pool goes on.
    let mut work = PhaseWork::new(&t);
    work.push(NodeId::new(1), 7usize).unwrap();
    let out = pool.run_phase(work, |_, i| i * 2).unwrap();
    assert_eq!(out.results, vec![14]);

    // Two workers: however the items are shared out, the payloads beyond
    // the first (on a worker or in the coordinator) are dropped quietly.
    let mut pool =
        WorkerPool::new(&t, PoolConfig::new(2, AffinityPolicy::BindDuringPhases)).unwrap();
    let mut work = PhaseWork::new(&t);
    for i in 0..16usize {
        work.push(NodeId::new(i % 2), i).unwrap();
    }
    let err = pool
        .run_phase(work, |_, i| {
            if i > 0 {
                std::panic::panic_any(PanicsWhenDropped);
            }
            i
        })
        .unwrap_err();
    assert_eq!(err.stats.panicked_items(), 15);
    assert_eq!(err.results, vec![0]);
    assert!(err.stats.workers.iter().all(|w| w.restored_original()));
    check_unbound_between_phases(&t, &pool);
    std::mem::forget(err.payload);
}

#[test]
fn a_simulated_phase_says_so_in_stats_text_and_json() {
    let t = Topology::synthetic(TOPOLOGIES[0].0).unwrap();
    let mut pool =
        WorkerPool::new(&t, PoolConfig::new(2, AffinityPolicy::BindDuringPhases)).unwrap();
    assert_eq!(pool.binding_kind(), BindingKind::Simulated);
    let mut work = PhaseWork::new(&t);
    for i in 0..8usize {
        work.push(NodeId::new(i % 2), i).unwrap();
    }
    let out = pool.run_phase(work, |_, i| i).unwrap();
    assert_eq!(out.stats.binding, BindingKind::Simulated);
    let text = out.stats.to_string();
    let first = text.lines().next().unwrap();
    assert!(
        first.contains("simulated bindings: recorded, not made"),
        "{first}"
    );
    assert!(first.contains("locality 100.0% simulated"), "{first}");
    for line in text.lines().filter(|l| l.contains("bound to")) {
        assert!(line.contains("simulated bound to"), "{line}");
    }
    let json = serde_json::to_value(&out.stats).unwrap();
    assert_eq!(json["binding"], "simulated");
}

#[test]
fn an_empty_phase_binds_nothing() {
    let t = Topology::synthetic(TOPOLOGIES[0].0).unwrap();
    let mut pool =
        WorkerPool::new(&t, PoolConfig::new(2, AffinityPolicy::BindDuringPhases)).unwrap();
    let out = pool.run_phase(PhaseWork::<u8>::new(&t), |_, x| x).unwrap();
    assert!(out.results.is_empty());
    assert_eq!((out.stats.items(), out.stats.binds()), (0, 0));
    assert_eq!(out.stats.locality_ratio(), 1.0);
    assert_eq!(pool.binding_record().unwrap(), vec![]);
}

#[test]
fn workers_are_named_and_stats_serialize() {
    let t = Topology::synthetic(TOPOLOGIES[1].0).unwrap();
    let mut pool = WorkerPool::new(
        &t,
        PoolConfig::new(4, AffinityPolicy::BindDuringPhases).named("relocate"),
    )
    .unwrap();
    assert_eq!(pool.worker_name(3), Some("relocate-3"));
    let mut work = PhaseWork::new(&t);
    for i in 0..40usize {
        work.push(NodeId::new(i % 4), i).unwrap();
    }
    let out = pool
        .run_phase(work, |ctx, _| {
            std::thread::current().name().unwrap() == ctx.worker_name()
        })
        .unwrap();
    assert!(out.results.iter().all(|&same| same));
    let json = serde_json::to_string(&out.stats).unwrap();
    let back: PhaseStats = serde_json::from_str(&json).unwrap();
    assert_eq!(back, out.stats);
    let text = out.stats.to_string();
    assert!(text.contains("locality 100.0%"), "{text}");
    assert!(text.contains("node3: 10 items, 10 local"), "{text}");
}

#[test]
#[should_panic(expected = "phase work built for another topology")]
fn work_for_another_topology_is_refused() {
    let two = Topology::synthetic(TOPOLOGIES[0].0).unwrap();
    let four = Topology::synthetic(TOPOLOGIES[1].0).unwrap();
    let mut pool = WorkerPool::new(&two, PoolConfig::new(1, AffinityPolicy::Off)).unwrap();
    let _ = pool.run_phase(PhaseWork::<u8>::new(&four), |_, x| x);
}

#[test]
fn on_each_worker_runs_once_on_every_worker_thread() {
    let topology = hotmem_numa::Topology::synthetic("pack:2 numa:1 core:2 pu:1").unwrap();
    let config = hotmem_numa::PoolConfig::new(3, hotmem_numa::AffinityPolicy::BindDuringPhases);
    let pool = hotmem_numa::WorkerPool::new(&topology, config).unwrap();
    let seen = pool.on_each_worker(|i| (i, std::thread::current().id()));
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 1, 2]);
    let threads: HashSet<_> = seen.iter().map(|s| s.1).collect();
    assert_eq!(threads.len(), 3, "three distinct worker threads");
    assert!(!threads.contains(&std::thread::current().id()));
}
