//! hotmem-numa: a GC relocation phase on workers bound to their pages' nodes.
//!
//! Prints the detected topology and the worker-count heuristics, then runs
//! a relocation phase with affinity off (the baseline) and on:
//! 1. on a synthetic two-node topology with 4 workers (bindings recorded:
//!    a model of another machine cannot bind this one's threads), with the
//!    pages spread unevenly over the nodes;
//! 2. on the real topology, relocating real pages: a from-space and a
//!    to-space reserved with `hotmem-os`, split into one partition per node
//!    and bound to it, every page located by asking the OS where it is.
//!
//! Run: `cargo run --release -p hotmem-examples --example numa_relocation`

use hotmem_numa::heuristics::{concurrent_workers, parallel_workers, workers_for};
use hotmem_numa::{
    AffinityPolicy, BindingAction, BindingKind, MemoryLocation, MemoryPolicy, NodeId, PhaseStats,
    PhaseWork, PoolConfig, Topology, WorkerKind, WorkerPool,
};
use hotmem_os::{Address, MemRange, MemTag, Memory, page_size};
use std::error::Error;

const SYNTHETIC: &str = "pack:2 numa:1 core:4 pu:1";
const SYNTHETIC_PAGES: usize = 4096;
const REAL_PAGES: usize = 8192;

fn main() -> Result<(), Box<dyn Error>> {
    // Set by the guest of `cargo xtask numa-vm`: an emulated machine.
    if let Some(guest) = std::env::var_os("HOTMEM_GUEST") {
        println!(
            "== guest output ({}): an emulated multi-node machine; bindings and locality are the \
             guest kernel's, the times below are not NUMA timings (every node is the same host memory)\n",
            guest.to_string_lossy()
        );
    }
    let real = Topology::detect()?;
    println!("== {real}");
    for kind in [WorkerKind::Concurrent, WorkerKind::Parallel] {
        println!(
            "   {kind:?} workers: {} unbound, {} bound (25%: {}, 60%: {})",
            workers_for(&real, kind, AffinityPolicy::Off),
            workers_for(&real, kind, AffinityPolicy::BindDuringPhases),
            concurrent_workers(real.cpu_count()),
            parallel_workers(real.cpu_count()),
        );
    }
    println!(
        "   default affinity here: {:?}\n",
        AffinityPolicy::default_for(&real)
    );

    synthetic_phase()?;
    real_phase(&real)?;
    Ok(())
}

/// A simulated page: its node and some words of payload.
struct SimPage {
    node: NodeId,
    words: Vec<u64>,
}

fn synthetic_phase() -> Result<(), Box<dyn Error>> {
    let t = Topology::synthetic(SYNTHETIC)?;
    println!("== {t}");
    println!(
        "   a model of another machine: bindings are {} (recorded, not made)",
        BindingKind::of(&t)
    );
    // Three pages out of four on node 0: uneven, as after a skewed allocation.
    let pages: Vec<SimPage> = (0..SYNTHETIC_PAGES)
        .map(|i| SimPage {
            node: NodeId::new(usize::from(i % 4 == 3)),
            words: (0..64).map(|w| (i * 64 + w) as u64).collect(),
        })
        .collect();
    let mut pool = WorkerPool::new(&t, PoolConfig::new(4, AffinityPolicy::Off).named("syn-gc"))?;
    for affinity in [AffinityPolicy::Off, AffinityPolicy::BindDuringPhases] {
        pool.set_affinity(affinity);
        let mut work = PhaseWork::new(&t);
        for p in &pages {
            work.push(p.node, p).expect("two nodes");
        }
        // "Relocate": copy the payload to a new page, return its checksum.
        let out = pool.run_phase(work, |_, p: &SimPage| {
            let copy = p.words.clone();
            copy.iter().fold(0u64, |a, w| a.wrapping_add(*w))
        })?;
        report(&out.stats);
        if affinity == AffinityPolicy::BindDuringPhases {
            let record = pool.binding_record().unwrap_or_default();
            println!(
                "   recorded bindings (phase {}, simulated: no thread was bound):",
                out.stats.phase
            );
            for e in record.iter().filter(|e| e.phase == out.stats.phase) {
                match &e.action {
                    BindingAction::BindToNode { node, cpus } => {
                        println!("     worker {} -> {node} (cpus {cpus})", e.worker)
                    }
                    BindingAction::Restore { cpus } => {
                        println!("     worker {} -> restored (cpus {cpus})", e.worker)
                    }
                    other => println!("     worker {} -> {other:?}", e.worker),
                }
            }
        }
        println!();
    }
    Ok(())
}

/// A page to relocate: where it is, where it goes, and its node.
#[derive(Copy, Clone)]
struct RealPage {
    from: Address,
    to: Address,
}

fn real_phase(t: &Topology) -> Result<(), Box<dyn Error>> {
    println!(
        "== relocation on the real topology ({} pages of {} KiB)",
        REAL_PAGES,
        page_size() >> 10
    );
    let memory = Memory::new();
    let len = REAL_PAGES * page_size();
    let from = memory.reserve(len, MemTag::JAVA_HEAP)?;
    let to = memory.reserve(len, MemTag::JAVA_HEAP)?;
    from.commit(from.range())?;
    to.commit(to.range())?;

    // One partition per node, bound to it, before the first touch.
    let nodes = t.node_count();
    let per_node = REAL_PAGES / nodes;
    for node in t.node_ids() {
        let first = node.index() * per_node;
        let count = if node.index() + 1 == nodes {
            REAL_PAGES - first
        } else {
            per_node
        };
        for space in [&from, &to] {
            let part = space.subrange(first * page_size(), count * page_size())?;
            // SAFETY: both spaces were committed above and live to the end.
            match unsafe { t.bind_memory(part, node, MemoryPolicy::Preferred) } {
                Ok(()) => {}
                Err(e) => println!("   partition of {node} not bound: {e}"),
            }
        }
    }
    // Touch both spaces: every page gets its physical memory now, so that
    // neither phase below pays the page faults of the other.
    for i in 0..REAL_PAGES {
        let p = from.start() + i * page_size();
        let q = to.start() + i * page_size();
        // SAFETY: both committed, and nothing else uses them yet.
        unsafe {
            p.as_ptr::<u8>().write_bytes((i % 251) as u8, page_size());
            q.as_ptr::<u8>().write_bytes(0, page_size());
        }
    }

    // Items: each page with the node the OS says holds it.
    let mut work = Vec::with_capacity(REAL_PAGES);
    let mut unknown = 0;
    for i in 0..REAL_PAGES {
        let page = MemRange::new(from.start() + i * page_size(), page_size())?;
        // SAFETY: the page is committed.
        let node = match unsafe { t.memory_location(page) } {
            Ok(MemoryLocation::Node(n)) => n,
            _ => {
                unknown += 1;
                NodeId::new(i / per_node.max(1) % nodes)
            }
        };
        let item = RealPage {
            from: page.start(),
            to: to.start() + i * page_size(),
        };
        work.push((node, item));
    }
    if unknown > 0 {
        println!("   {unknown} pages not located by the OS; their partition's node is used");
    }

    let workers = workers_for(t, WorkerKind::Parallel, AffinityPolicy::BindDuringPhases).max(2);
    let mut pool = WorkerPool::new(t, PoolConfig::new(workers, AffinityPolicy::Off).named("gc"))?;
    for affinity in [AffinityPolicy::Off, AffinityPolicy::BindDuringPhases] {
        pool.set_affinity(affinity);
        let mut phase = PhaseWork::new(t);
        for (node, item) in &work {
            phase.push(*node, *item).expect("node of this topology");
        }
        let out = pool.run_phase(phase, |_, p: RealPage| {
            // SAFETY: both pages are committed; each item owns its to-page
            // and only reads its from-page, which no one writes in the phase.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    p.from.as_ptr::<u8>(),
                    p.to.as_ptr::<u8>(),
                    page_size(),
                );
                p.to.as_ptr::<u8>().read()
            }
        })?;
        report(&out.stats);
        println!();
    }
    Ok(())
}

fn report(stats: &PhaseStats) {
    print!("{stats}");
    let simulated = match stats.binding {
        BindingKind::Real => "",
        _ => " (simulated)",
    };
    println!(
        "   => {:?}, {} bindings: locality {:.1}%{simulated}{}",
        stats.affinity,
        stats.binding,
        100.0 * stats.locality_ratio(),
        match stats.observed_locality_ratio() {
            Some(r) => format!(", seen on the item's node's cpus {:.1}%", 100.0 * r),
            None => String::new(),
        }
    );
    if stats.restores() > 0 {
        println!(
            "   => bind+restore per worker per phase: {:.1} us{simulated} ({} workers bound{simulated}, {} rebinds; phase wall {:.1} us)",
            stats.binding_ns() as f64 / stats.restores() as f64 / 1e3,
            stats.restores(),
            stats.rebinds(),
            stats.wall_ns as f64 / 1e3,
        );
    }
}
