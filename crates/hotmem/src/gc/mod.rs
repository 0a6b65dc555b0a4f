//! The collector: what happens between "the heap is full" and "the mutators
//! run again". A shared core and the collectors over it, as mmtk-core
//! keeps its plans over a shared policy and scheduler, and ZGC keeps
//! `zGeneration` apart from `zDriver`:
//!
//! - [`core`]: what every collector uses (the heap it works on, the
//!   phases: roots, mark, weak processing, relocation-set selection,
//!   forwarding, free, statistics; the pauses, the record and the log
//!   around them; sizing, allocation buffers, workers, side tables). It
//!   imports no collector and no barrier.
//! - [`barriers`]: the mutators' barriers, each beside the collector's
//!   side it feeds (the remembered set, the snapshot logs, the relocation
//!   index); imports the core.
//! - [`stop_the_world`], [`concurrent`]: the collectors, siblings, each in
//!   a folder of its own with its cycle, its state and its constraints
//!   (the barriers it needs, whether it moves, generations); each imports
//!   the core and the barriers, never the other. A new collector adds a
//!   folder and a line in [`make_collector`].
//!
//! The embedder's side (what a binding reports) is in [`crate::vm`], the
//! public entry points of the barriers on [`Mutator`](crate::Mutator).

pub(crate) mod barriers;
pub(crate) mod concurrent;
pub(crate) mod core;
pub(crate) mod stop_the_world;

pub use self::core::collector_mode::CollectorMode;
pub use self::core::generations::{CollectionKind, Generations};
pub use self::core::mem_balancer::BalancedSizing;
pub use self::core::root_tables::RootTableVisit;
pub use self::core::sizing::{AdaptiveSizing, HeapSizing};
pub use self::core::soft_max::HeapTarget;
pub use self::core::stats::{
    CollectStats, ConcurrentPhases, GcCause, GcTotals, RefStats, StallTotal, StallsByCycle,
    StrengthCounts, UpdateScope, YoungSurvival,
};
pub use self::core::tlab::{TlabStats, Tlabs};
pub use self::core::workers::{PhaseSummary, WorkerBinding};
pub use concurrent::YoungInFull;

pub(crate) use self::core::collector::{Collector, Constraints, Moves};
pub(crate) use self::core::driver::{DriverContext, GcRequest};
pub(crate) use self::core::heap::GcHeap;
pub(crate) use self::core::in_collection;
pub(crate) use self::core::non_moving::NonMovingSpace;
pub(crate) use self::core::poison::Poison;
pub(crate) use self::core::record::GcRecord;
pub(crate) use self::core::sizing::{BudgetedPages, Sizing};
pub(crate) use self::core::soft_max::{self as soft_max, DEFAULT_TIME_LIMIT_PERCENT, SoftMax};
pub(crate) use self::core::tlab::{Tlab, TlabShared, TlabSizing};
pub(crate) use self::core::uncommitter::Uncommitter;
pub(crate) use self::core::workers::GcWorkers;

use barriers::BarrierSet;
use concurrent::{ConcurrentCollector, ConcurrentState};
use std::sync::Arc;
use stop_the_world::StopTheWorld;

/// What the collector chosen by `mode` asks and does, with `generations`.
pub(crate) fn constraints(mode: CollectorMode, generations: Generations) -> Constraints {
    match mode {
        CollectorMode::StopTheWorld => stop_the_world::constraints(generations),
        CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving => {
            concurrent::constraints(mode, generations)
        }
    }
}

/// Why the collector chosen by `mode` cannot run with a binding whose
/// slots compare-and-swap atomically or not (every collector runs with
/// either [`Generations`]).
pub(crate) fn check(mode: CollectorMode, heals_atomically: bool) -> Result<(), String> {
    match mode {
        CollectorMode::StopTheWorld => Ok(()),
        CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving => {
            concurrent::check(mode, heals_atomically)
        }
    }
}

/// A binding, type-erased until the runtime is built, when it makes the
/// collector the configuration chose, monomorphized for it.
pub(crate) trait CollectorFactory: Send + Sync {
    /// Whether the binding's slots compare-and-swap atomically
    /// ([`Slot::COMPARE_EXCHANGE`](crate::Slot::COMPARE_EXCHANGE)).
    fn heals_atomically(&self) -> bool;

    /// The collector `mode` chooses for this binding, with the barriers
    /// its mutators run and (a concurrent one) the state its waiting
    /// mutators share.
    fn make(
        &self,
        mode: CollectorMode,
        tables: RootTableVisit,
        young_in_full: YoungInFull,
        barriers: &BarrierSet,
        concurrent: Option<&Arc<ConcurrentState>>,
    ) -> Arc<dyn Collector>;
}

/// The collectors of binding `B`.
pub(crate) struct ForBinding<B: crate::Binding>(pub(crate) Arc<B>);

impl<B: crate::Binding> CollectorFactory for ForBinding<B> {
    fn heals_atomically(&self) -> bool {
        <B::Slot as crate::Slot>::COMPARE_EXCHANGE
    }

    fn make(
        &self,
        mode: CollectorMode,
        tables: RootTableVisit,
        young_in_full: YoungInFull,
        barriers: &BarrierSet,
        concurrent: Option<&Arc<ConcurrentState>>,
    ) -> Arc<dyn Collector> {
        let binding = self.0.clone();
        make_collector(binding, mode, (tables, young_in_full), barriers, concurrent)
    }
}

/// The collector `mode` chooses for `binding` (a concurrent one visits
/// the root tables where `tables` says).
fn make_collector<B: crate::Binding>(
    binding: Arc<B>,
    mode: CollectorMode,
    (tables, young_in_full): (RootTableVisit, YoungInFull),
    barriers: &BarrierSet,
    concurrent: Option<&Arc<ConcurrentState>>,
) -> Arc<dyn Collector> {
    match mode {
        CollectorMode::StopTheWorld => {
            Arc::new(StopTheWorld::new(binding, barriers.remembered.clone()))
        }
        CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving => {
            let made = "made from the concurrent collector's constraints";
            Arc::new(ConcurrentCollector::new(
                binding,
                mode,
                tables,
                barriers.concurrent.clone().expect(made),
                concurrent.expect(made).clone(),
                barriers.remembered.clone(),
                young_in_full,
            ))
        }
    }
}
