//! The hostile-embedder suite: random sequences of public calls from
//! several threads at once, against what the crate's soundness contract
//! promises, in every collector.
//!
//! A case ([`Case`]) is a collector mode, a seed, and optionally a panic
//! planted in one binding callback ([`PanicPlan`]). Its mutator threads
//! allocate, link and unlink objects through the barriers, enter and leak
//! native regions, keep shadow-stack words and pins, register and take
//! finalizers, make weak handles and ephemerons and set handles, each from
//! references that are current where they read them; its outsider threads
//! (no mutators) clone handles, read and upgrade weak handles, drop
//! everything, and collect. Shared pools hold every handle with the id of
//! the object it must name.
//!
//! What must hold (the model): every handle, uncleared weak handle and
//! ephemeron names an intact object with its recorded id, and everything
//! they reach is intact (checked at safepoints during the run and at its
//! end); every reference read through the load barrier is an intact
//! object; pinned objects stay where they were; every collection succeeds,
//! except with the planted panic's error or, after it, the runtime's
//! poison; no thread panics and the case ends (a hang fails it under the
//! caller's deadline).
//!
//! Short cases run in `cargo xtask test` (`examples/tests/hostile.rs`);
//! `cargo run --release -p hotmem-examples --example hostile -- --secs N`
//! runs random cases for N seconds (`cargo xtask soak` does, after the
//! runtime soak).

mod binding;
mod ops;
mod world;

pub use binding::{Callback, Hostile, PanicPlan};

use hotmem::objects::SimpleObjects;
use hotmem::{CollectorMode, Generations, NumaConfig, Runtime};
use ops::{MutatorThread, Rng, outsider_step};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use world::World;

/// The collectors a case runs with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Stop-the-world, full collections only.
    StopTheWorld,
    /// Stop-the-world, young and full collections.
    Generational,
    /// Concurrent marking and relocation.
    Concurrent,
    /// Concurrent marking, nothing moves.
    ConcurrentNonMoving,
    /// Concurrent young and full cycles.
    ConcurrentGenerational,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 5] = [
        Mode::StopTheWorld,
        Mode::Generational,
        Mode::Concurrent,
        Mode::ConcurrentNonMoving,
        Mode::ConcurrentGenerational,
    ];
}

/// One case of the suite.
#[derive(Copy, Clone, Debug)]
pub struct Case {
    /// The collector.
    pub mode: Mode,
    /// Where each thread's ops come from.
    pub seed: u64,
    /// Ops per thread.
    pub ops: usize,
    /// Mutator threads.
    pub mutators: usize,
    /// Threads that are no mutators.
    pub outsiders: usize,
    /// A panic planted in the binding, if any.
    pub panic: Option<PanicPlan>,
}

/// What a case did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Collections that succeeded, and that failed (with the planted
    /// panic's error, or the poison after it).
    pub collections_ok: u64,
    /// See `collections_ok`.
    pub collections_failed: u64,
    /// Checks at a safepoint.
    pub checks: u64,
    /// Whether the planted panic went off.
    pub panicked: bool,
    /// Whether the runtime said it was poisoned.
    pub poisoned: bool,
    /// Native regions the runtime found leaked.
    pub leaked_regions: u64,
}

/// The runtime of a case: two GC workers, of which the concurrent
/// collectors' phases take one or both (by the case's seed), so that the
/// phases' work sharing (tables and pages claimed one job at a time,
/// marking's work stealing) runs on two workers outside allocation stalls
/// too, also on a 2-CPU machine.
fn runtime(mode: Mode, seed: u64, binding: Arc<Hostile>) -> Result<Runtime, String> {
    let b = Runtime::builder()
        .heap_max(32 << 20)
        .numa(NumaConfig::Off)
        .gc_workers(2)
        .concurrent_gc_workers(1 + (seed >> 4) as usize % 2)
        .binding(binding);
    let b = match mode {
        Mode::StopTheWorld => b
            .collector(CollectorMode::StopTheWorld)
            .generations(Generations::Single),
        // Young and full collections on the sizing the Lox VM runs on,
        // below a soft maximum that the time limit may set aside.
        Mode::Generational => b
            .collector(CollectorMode::StopTheWorld)
            .generations(Generations::YoungAndOld)
            .heap_sizing(hotmem::HeapSizing::Balanced(Default::default()))
            .soft_max_heap(16 << 20),
        // Cached pages uncommitted as soon as the uncommitter looks (every
        // 10 ms), while the mutators allocate.
        Mode::Concurrent => b
            .collector(CollectorMode::Concurrent)
            .generations(Generations::Single)
            .uncommit_delay(std::time::Duration::ZERO),
        Mode::ConcurrentNonMoving => b
            .collector(CollectorMode::ConcurrentNonMoving)
            .generations(Generations::Single),
        // Young cycles inside full ones never, on stalls, or after every
        // round of the full marking, by the seed.
        Mode::ConcurrentGenerational => b
            .collector(CollectorMode::Concurrent)
            .generations(Generations::YoungAndOld)
            .soft_max_heap(16 << 20)
            .young_in_full(match (seed >> 5) % 3 {
                0 => hotmem::YoungInFull::Never,
                1 => hotmem::YoungInFull::Paced,
                _ => hotmem::YoungInFull::EachRound,
            }),
    };
    b.build().map_err(|e| e.to_string())
}

/// Runs `case`: its threads to the end, then the final checks.
///
/// # Errors
/// What broke the contract, or a thread's panic.
pub fn run(case: &Case) -> Result<Outcome, String> {
    let binding = Arc::new(Hostile::new(SimpleObjects::new(), case.panic));
    let world = World::new(runtime(case.mode, case.seed, binding.clone())?, binding);
    let w = &world;
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let mut threads = Vec::new();
        for t in 0..case.mutators {
            let seed = case.seed ^ (t as u64 + 1) << 32;
            threads.push(s.spawn(move || {
                let mut rng = Rng::new(seed);
                let mut m = MutatorThread::new(w)?;
                for _ in 0..case.ops {
                    m.step(&mut rng)?;
                }
                Ok(())
            }));
        }
        for t in 0..case.outsiders {
            let seed = case.seed ^ (t as u64 + 101) << 32;
            threads.push(s.spawn(move || {
                let mut rng = Rng::new(seed);
                for _ in 0..case.ops {
                    outsider_step(w, &mut rng)?;
                }
                Ok(())
            }));
        }
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|p| Err(format!("a thread panicked: {}", message(&*p))))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    world.check_at_safepoint()?;
    world.collected(world.rt.collect())?;
    world.check_at_safepoint()?;
    Ok(Outcome {
        collections_ok: world.collections_ok.load(Ordering::Relaxed),
        collections_failed: world.collections_failed.load(Ordering::Relaxed),
        checks: world.checks.load(Ordering::Relaxed),
        panicked: world.binding.fired(),
        poisoned: world.poisoned.load(Ordering::Relaxed),
        leaked_regions: world.rt.safepoints().leaked_regions(),
    })
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
