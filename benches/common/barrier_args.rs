//! What the barrier instruction benches (`load_barrier_instructions`,
//! `store_barrier_instructions`) share: their command line, `ROUNDS SIDE
//! [set]` (each bench naming its sides), and their runtime.

use hotmem::objects::SimpleObjects;
use hotmem::{CollectorMode, Generations, HeapSizing, NumaConfig, Runtime};
use std::process::ExitCode;
use std::sync::Arc;

/// A runtime with `collector` and `generations` over `objects` where no
/// collection starts on its own: what runs between two is the barriers.
pub(crate) fn runtime(
    collector: CollectorMode,
    generations: Generations,
    objects: &Arc<SimpleObjects>,
) -> Runtime {
    Runtime::builder()
        .heap_max(256 << 20)
        .numa(NumaConfig::Off)
        .gc_workers(1)
        .collector(collector)
        .generations(generations)
        .heap_sizing(HeapSizing::Maximum)
        .binding(objects.clone())
        .build()
        .expect("a runtime")
}

/// How a barrier-taking side reaches the barrier.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Path {
    /// The `Mutator` method: the runtime's barriers tested at every call.
    Mutator,
    /// The `BarrierSet` method, in code run by `Runtime::with_barriers`:
    /// the set's code compiled in.
    Set,
}

/// `ROUNDS SIDE [set]` (cargo's `--bench` dropped): the rounds (10 when
/// absent), the side parsed by `side` (`None` when absent), the path; the
/// error as text.
pub(crate) fn parse<S>(
    side: impl Fn(Option<&str>) -> Result<S, String>,
) -> Result<(u64, S, Path), String> {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let rounds = match args.next() {
        Some(r) => r.parse().map_err(|e| format!("rounds: {e}"))?,
        None => 10,
    };
    let side = side(args.next().as_deref())?;
    let path = match args.next().as_deref() {
        None => Path::Mutator,
        Some("set") => Path::Set,
        Some(other) => return Err(format!("{other}: expected `set` or nothing")),
    };
    Ok((rounds, side, path))
}

/// [`parse`], or the exit code of a bad command line (its error printed).
pub(crate) fn parse_or_exit<S>(
    side: impl Fn(Option<&str>) -> Result<S, String>,
) -> Result<(u64, S, Path), ExitCode> {
    parse(side).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}
