//! Instructions of the load barrier on a mutator-only loop, for callgrind:
//! a walk of a tree of 2^16 objects that reads each reference slot, with
//! no collection running, on one side at a time:
//!
//! - `raw`: each slot read directly (`SimpleObjects::slot`): no barrier;
//! - `stw`: through `Mutator::load_ref` with the stop-the-world collector
//!   (the barrier is one test of the mutator's concurrent state);
//! - `idle`: through `load_ref` with the concurrent collector and no
//!   relocation set installed (no cycle has run);
//! - `installed`: through `load_ref` with the concurrent collector after a
//!   cycle that relocated, its set installed (as it is from one cycle's
//!   Pause Relocate Start to the next cycle's Pause Mark End, most of the
//!   time with back-to-back cycles): each load also looks its address up
//!   in the set's table.
//!
//! A third argument `set` reads through the runtime's barrier set instead
//! (`BarrierSet::load_ref` in code run by `Runtime::with_barriers`,
//! compiled once per set): `stw set` has no barrier code at all, `idle
//! set` and `installed set` the concurrent set's.
//!
//! Every side walks the same way (an explicit stack; the two slots of an
//! object are the words after its 32-byte header) and differs only in how
//! a slot is read: `SimpleSlot::load` or `Mutator::load_ref` of the same
//! slot. Run each side at two round
//! counts; the difference divided by the extra loads is the count per
//! load, with setup and teardown cancelled out:
//!
//! ```text
//! cargo bench -p hotmem-benches --bench load_barrier_instructions --no-run
//! B=$(ls -t target/release/deps/load_barrier_instructions-* | grep -v '\.d$' | head -1)
//! for side in raw stw idle installed; do for r in 10 20; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $r $side 2>&1 | grep refs
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $r $side set 2>&1 | grep refs
//! done; done   # (refs at 20 - refs at 10) / (10 * LOADS) = instructions per load
//! ```
//!
//! Without valgrind it prints the wall time per load (not the comparison:
//! instructions are).

#![allow(missing_docs)]

#[path = "common/barrier_args.rs"]
mod barrier_args;
use barrier_args::Path;

use hotmem::objects::{HEADER, Ids, RootTable, SimpleObjects, build};
use hotmem::{
    Address, BarrierSet, CollectorMode, Generations, Mutator, ObjectReference, Runtime, SimpleSlot,
    Slot, WithBarriers,
};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The tree's depth: 2^(DEPTH+1) - 1 objects, each but the leaves with two
/// references.
const DEPTH: u32 = 15;
/// Reference slots a walk reads (two per object: leaves hold nulls).
const LOADS: u64 = 2 * ((1 << (DEPTH + 1)) - 1);

#[derive(Copy, Clone, PartialEq, Eq)]
enum Side {
    Raw,
    Stw,
    Idle,
    Installed,
}

/// `rounds` walks through the runtime's barrier set.
struct SetWalks<'a> {
    me: &'a Mutator,
    root: ObjectReference,
    rounds: u64,
}

impl WithBarriers for SetWalks<'_> {
    type Output = u64;
    fn run<B: BarrierSet>(self, b: B) -> u64 {
        let mut seen = 0;
        for _ in 0..self.rounds {
            seen += walk(self.root, |o, i| b.load_ref(self.me, slot(o, i)));
        }
        seen
    }
}

/// The side `arg` names.
fn side(arg: Option<&str>) -> Result<Side, String> {
    match arg {
        None | Some("installed") => Ok(Side::Installed),
        Some("raw") => Ok(Side::Raw),
        Some("stw") => Ok(Side::Stw),
        Some("idle") => Ok(Side::Idle),
        Some(other) => Err(format!(
            "side {other}: expected raw, stw, idle or installed"
        )),
    }
}

/// Walks the tree at `root`, reading slot `i` of an object with
/// `load(obj, i)`; the objects seen.
fn walk(
    root: ObjectReference,
    load: impl Fn(ObjectReference, usize) -> Option<ObjectReference>,
) -> u64 {
    let mut stack = vec![root];
    let mut seen = 0;
    while let Some(o) = stack.pop() {
        seen += 1;
        for i in 0..2 {
            if let Some(c) = load(o, i) {
                stack.push(c);
            }
        }
    }
    seen
}

/// Slot `i` of tree object `o`.
#[inline]
fn slot(o: ObjectReference, i: usize) -> SimpleSlot {
    // SAFETY: `o` is an object of the tree, live and rooted, with two
    // slots after its header; nothing polls or allocates during a walk.
    unsafe { SimpleSlot::new(Address::new(o.get() + HEADER + 8 * i)) }
}

fn runtime(side: Side, objects: &Arc<SimpleObjects>) -> Runtime {
    let collector = match side {
        Side::Raw | Side::Stw => CollectorMode::StopTheWorld,
        Side::Idle | Side::Installed => CollectorMode::Concurrent,
    };
    barrier_args::runtime(collector, Generations::Single, objects)
}

/// The tree (root 0 of `roots`); for `installed`, then a cycle that
/// relocates sparse pages of garbage-ridden objects, leaving its set
/// installed.
fn setup(side: Side, me: &mut Mutator, roots: &RootTable) {
    let mut ids = Ids::from(1);
    build::tree(me, roots, DEPTH, 0, &mut ids).expect("the tree");
    if side == Side::Installed {
        build::object(me, roots, 4096, 0, ids.next()).expect("an array");
        for i in 0..4096 {
            let e = build::object(me, roots, 0, 30, ids.next()).expect("an element");
            roots.pop();
            let array = roots.get(1).expect("rooted");
            if i % 16 == 0 {
                // SAFETY: both live; no poll since the allocation.
                unsafe { SimpleObjects::set_slot(me, array, i, Some(e)) };
            }
        }
        let stats = me.collect().expect("a cycle");
        assert!(
            stats.concurrent.is_some_and(|c| c.relocation_set_pages > 0),
            "the cycle relocated nothing: {stats:?}"
        );
    }
}

fn main() -> ExitCode {
    let (rounds, side, path) = match barrier_args::parse_or_exit(side) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let objects = SimpleObjects::new();
    let rt = runtime(side, &objects);
    let mut me = rt.attach_mutator().expect("a mutator");
    let roots = objects.root_table();
    setup(side, &mut me, &roots);
    let root = roots.get(0).expect("the tree");
    let me = &me;
    let start = Instant::now();
    let mut seen = 0;
    match (side, path) {
        (Side::Raw, _) => {
            for _ in 0..rounds {
                seen += walk(root, |o, i| slot(o, i).load());
            }
        }
        (_, Path::Mutator) => {
            for _ in 0..rounds {
                seen += walk(root, |o, i| me.load_ref(slot(o, i)));
            }
        }
        (_, Path::Set) => seen = rt.with_barriers(SetWalks { me, root, rounds }),
    }
    let took = start.elapsed();
    assert_eq!(seen, rounds * (LOADS / 2), "every object once per walk");
    println!(
        "{} loads in {rounds} walks: {:.2} ns per load (wall time; instructions are the comparison)",
        rounds * LOADS,
        took.as_nanos() as f64 / (rounds * LOADS) as f64
    );
    ExitCode::SUCCESS
}
