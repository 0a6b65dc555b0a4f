//! A young concurrent cycle that runs out of memory while it evacuates
//! leaves some objects of a page copied and the others where they are.
//! The page stays young, so that the survivors' slots into it (stale
//! references to the objects that were copied) are marked and healed by
//! the next young cycle before the relocation set leaves the load barrier.
//!
//! Found by the soak at 4 mutators once young cycles ran back to back in a
//! full heap: the failed copy marked the page old, its survivors' stale
//! slots went unremembered, and after the next young cycle a survivor led
//! to an old copy of an object the mutators had changed since.

use hotmem::objects::SimpleObjects;
use hotmem::{CollectorMode, Generations, Mutator, ObjectReference};

mod common;

const HEAP: usize = 32 << 20;

/// What the mutators leave free for the concurrent collector's relocation
/// targets: one small page (2 MiB at this heap size). The scenario fills
/// the rest.
const RESERVE: usize = 2 << 20;

/// Slot 0: the previous node of the chain; slot 1: what the test stored
/// last (the node itself, after the first cycle).
const NODE: usize = 2;

/// Checks the chain from its newest node through slot 0, read through the
/// load barrier: every node is one the root table holds, at the address
/// the table gives, and names itself in slot 1 (stored after each cycle;
/// checked from the second). Returns the nodes seen.
fn check_chain(me: &Mutator, roots: &hotmem::objects::RootTable, cycle: usize) -> usize {
    let mut seen = 0;
    let mut at = roots.get(roots.len() - 1);
    while let Some(node) = at {
        let index = roots.len() - 1 - seen;
        assert_eq!(
            Some(node),
            roots.get(index),
            "after cycle {cycle}: node {index} reached through the chain is an old copy"
        );
        // SAFETY: a live node, read by the attached mutator between calls
        // that may collect.
        let tag = unsafe { SimpleObjects::load_slot(me, node, 1) };
        let stored = (cycle > 1).then_some(node);
        assert_eq!(
            tag, stored,
            "after cycle {cycle}: node {index}'s last store is lost"
        );
        // SAFETY: as above.
        at = unsafe { SimpleObjects::load_slot(me, node, 0) };
        seen += 1;
    }
    seen
}

/// Fills the heap up to `fill` of what the mutators may take (all but the
/// relocation reserve) with chained nodes (each also
/// rooted), `garbage` unrooted objects after each, then runs young cycles,
/// storing into every node through the root table between them. Returns
/// the pages whose evacuation the first cycle left incomplete.
fn scenario(fill: f64, garbage: usize) -> usize {
    let objects = SimpleObjects::new();
    let rt = common::builder(HEAP, Some(1))
        .collector(CollectorMode::Concurrent)
        .generations(Generations::YoungAndOld)
        .binding(objects.clone())
        .build()
        .unwrap();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let size = SimpleObjects::size_for(NODE, 6);
    let mut id = 1;
    let mut last: Option<ObjectReference> = None;
    while (rt.heap().usage().used as f64) < fill * (HEAP - RESERVE) as f64 {
        let addr = me.alloc(size).unwrap();
        // SAFETY: a fresh allocation.
        let node = unsafe { SimpleObjects::init(addr, size, NODE, id) };
        // SAFETY: `node` is fresh; `last` is the node before, current (no
        // call that may collect ran since it was read from the table).
        unsafe { SimpleObjects::set_slot(&me, node, 0, last) };
        roots.push(Some(node));
        id += 1;
        for _ in 0..garbage {
            let addr = me.alloc(size).unwrap();
            // SAFETY: a fresh allocation.
            unsafe { SimpleObjects::init(addr, size, 0, id) };
            id += 1;
        }
        last = roots.get(roots.len() - 1);
        assert_eq!(
            rt.gc_totals().cycles,
            0,
            "the maximum policy collects only when asked"
        );
    }
    let mut incomplete = 0;
    for cycle in 1..=3 {
        let stats = me.collect_young().unwrap();
        if cycle == 1 {
            // Not read through the chain now: the load barrier would heal
            // a stale slot the collector left.
            incomplete = stats.pages_evacuation_incomplete;
        } else {
            assert_eq!(check_chain(&me, &roots, cycle), roots.len());
        }
        // Store into every node through the table (forwarded), never
        // through the chain: a stale slot 0 stays stale unless the
        // collector heals it.
        for i in 0..roots.len() {
            let node = roots.get(i).unwrap();
            // SAFETY: a live node from the table, by the attached mutator.
            unsafe { SimpleObjects::set_slot(&me, node, 1, Some(node)) };
        }
    }
    drop(me);
    incomplete
}

#[test]
fn a_young_evacuation_that_runs_out_of_room_leaves_no_stale_slot_behind() {
    let name = "young evacuation failure";
    common::with_deadline(name, std::time::Duration::from_secs(120), || {
        let mut incomplete = 0;
        for (fill, garbage) in [(0.93, 1), (0.95, 1), (0.95, 2), (0.97, 1)] {
            incomplete += scenario(fill, garbage);
        }
        assert!(
            incomplete > 0,
            "no cycle ran out of room: the scenario no longer exercises the failure"
        );
    });
}
