//! Instructions of the store barriers on a store-heavy loop, for callgrind:
//! an old holder of reference slots (1024, or `SLOTS=N` in the
//! environment) into which a mutator stores, over and over, in turn,
//! references to young objects (each store is an old-to-young
//! store the remembered set must see), with no collection running. Two
//! generations on every side; one side at a time:
//!
//! - `raw`: each slot written directly (`SimpleSlot::store`): no barrier;
//! - `stw`: through `Mutator::store_ref` with the stop-the-world collector
//!   (the remembered-set barrier, behind a test of the mutator's
//!   concurrent state);
//! - `concurrent`: through `Mutator::store_ref` with the concurrent
//!   collector, no cycle running (the snapshot barrier's test of marking,
//!   then the remembered-set barrier).
//!
//! A third argument `set` stores through the runtime's barrier set instead
//! (`BarrierSet::store_ref` in code run by `Runtime::with_barriers`): the
//! stop-the-world set has the remembered-set barrier only.
//!
//! Run each side at two round counts; the difference divided by the extra
//! stores is the count per store, with setup and teardown cancelled out:
//!
//! ```text
//! cargo bench -p hotmem-benches --bench store_barrier_instructions --no-run
//! B=$(ls -t target/release/deps/store_barrier_instructions-* | grep -v '\.d$' | head -1)
//! for side in raw "stw" "stw set" "concurrent" "concurrent set"; do for r in 10 20; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $r $side 2>&1 | grep refs
//! done; done   # (refs at 20 - refs at 10) / (10 * STORES) = instructions per store
//! ```
//!
//! Without valgrind it prints the wall time per store (not the comparison:
//! instructions are).

#![allow(missing_docs)]

#[path = "common/barrier_args.rs"]
mod barrier_args;
use barrier_args::Path;

use hotmem::objects::{HEADER, Ids, SimpleObjects, build};
use hotmem::{
    Address, BarrierSet, CollectionKind, CollectorMode, Generations, Mutator, ObjectReference,
    Runtime, SimpleSlot, Slot, WithBarriers,
};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The holder's reference slots unless `SLOTS` says otherwise.
const DEFAULT_SLOTS: usize = 1024;
/// Young objects whose references are stored.
const TARGETS: usize = 64;
/// Stores per round.
const STORES: u64 = 1 << 16;

/// The holder's reference slots: `SLOTS` in the environment (a power of
/// two, 1 to 65536), or 1024.
fn slots() -> usize {
    std::env::var("SLOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n: &usize| n.is_power_of_two() && *n <= STORES as usize)
        .unwrap_or(DEFAULT_SLOTS)
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Side {
    Raw,
    Stw,
    Concurrent,
}

/// The side `arg` names.
fn side(arg: Option<&str>) -> Result<Side, String> {
    match arg {
        None | Some("stw") => Ok(Side::Stw),
        Some("raw") => Ok(Side::Raw),
        Some("concurrent") => Ok(Side::Concurrent),
        Some(other) => Err(format!("side {other}: expected raw, stw or concurrent")),
    }
}

/// Slot `i` of the holder.
#[inline]
fn slot(holder: ObjectReference, i: usize) -> SimpleSlot {
    // SAFETY: the holder is live and rooted, with `SLOTS` slots after its
    // header; nothing polls or allocates during the stores.
    unsafe { SimpleSlot::new(Address::new(holder.get() + HEADER + 8 * i)) }
}

/// One round: `STORES` stores, the holder's `n` slots in turn, with the
/// targets in turn.
#[inline]
fn round(
    holder: ObjectReference,
    n: usize,
    targets: &[ObjectReference],
    mut store: impl FnMut(SimpleSlot, ObjectReference),
) {
    for k in 0..(STORES as usize / n) {
        for i in 0..n {
            store(slot(holder, i), targets[(i + k) % TARGETS]);
        }
    }
}

/// `rounds` rounds through the runtime's barrier set.
struct SetStores<'a> {
    me: &'a Mutator,
    holder: ObjectReference,
    n: usize,
    targets: &'a [ObjectReference],
    rounds: u64,
}

impl WithBarriers for SetStores<'_> {
    type Output = ();
    fn run<B: BarrierSet>(self, b: B) {
        for _ in 0..self.rounds {
            round(self.holder, self.n, self.targets, |s, t| {
                b.store_ref(self.me, s, t)
            });
        }
    }
}

fn runtime(side: Side, objects: &Arc<SimpleObjects>) -> Runtime {
    let collector = match side {
        Side::Raw | Side::Stw => CollectorMode::StopTheWorld,
        Side::Concurrent => CollectorMode::Concurrent,
    };
    barrier_args::runtime(collector, Generations::YoungAndOld, objects)
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
    let mut ids = Ids::from(1);
    // The holder, old after a full collection; then young targets.
    let n = slots();
    build::object(&mut me, &roots, n, 0, ids.next()).expect("the holder");
    let full = me.collect().expect("a full collection");
    assert!(
        full.kind == CollectionKind::Full || full.concurrent.is_some(),
        "the holder is old"
    );
    for _ in 0..TARGETS {
        build::object(&mut me, &roots, 0, 2, ids.next()).expect("a target");
    }
    let holder = roots.get(0).expect("the holder");
    let targets: Vec<ObjectReference> = (1..=TARGETS)
        .map(|i| roots.get(i).expect("a target"))
        .collect();
    let me = &me;
    let start = Instant::now();
    match (side, path) {
        (Side::Raw, _) => {
            for _ in 0..rounds {
                round(holder, n, &targets, |s, t| s.store(t));
            }
        }
        (_, Path::Mutator) => {
            for _ in 0..rounds {
                round(holder, n, &targets, |s, t| me.store_ref(s, t));
            }
        }
        (_, Path::Set) => rt.with_barriers(SetStores {
            me,
            holder,
            n,
            targets: &targets,
            rounds,
        }),
    }
    let took = start.elapsed();
    println!(
        "{} stores into {n} slots in {rounds} rounds: {:.2} ns per store (wall time; instructions are the comparison)",
        rounds * STORES,
        took.as_nanos() as f64 / (rounds * STORES) as f64
    );
    ExitCode::SUCCESS
}
