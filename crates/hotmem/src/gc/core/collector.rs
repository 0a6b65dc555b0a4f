//! [`Collector`]: what the runtime asks of the collector it runs, and
//! [`Constraints`]: what a collector declares of itself (mmtk-core's
//! `PlanConstraints`). Each collector implements both in its own folder,
//! monomorphized for one [`Binding`](crate::Binding) and type-erased
//! behind the trait: one virtual call per collection, none per object.

use super::driver::{DriverContext, GcRequest};
use super::heap::GcHeap;
use super::stats::CollectStats;
use crate::GcError;
use hotmem_safepoint::SafeRegion;
use std::any::Any;

/// One collector, whatever the binding.
pub(crate) trait Collector: Send + Sync {
    /// Runs the collection `request` asks for on the calling thread, unless
    /// `request.seen_epoch` is given and a collection has finished since
    /// (then `Ok(None)`). A collector that stops the world for all of its
    /// work stops it here (`region`: the calling mutator's safe region,
    /// when a mutator collects; it stays borrowed until the pause ends); a
    /// concurrent one runs a cycle on the calling thread, the runtime's GC
    /// thread, between its pauses.
    fn run(
        &self,
        heap: &GcHeap,
        cx: &DriverContext<'_>,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError>;

    /// An allocation still found the heap full after a collection (the
    /// generational collector's next collection is then full).
    fn room_not_made(&self) {}

    /// The binding, for [`Runtime::binding`](crate::Runtime::binding).
    fn binding(&self) -> &(dyn Any + Send + Sync);
}

/// The mutators' barriers a collector needs (their code is in
/// `gc/barriers/`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NeededBarriers {
    /// The store barrier remembers slots of old objects given young
    /// references (a generational collector).
    pub(crate) remembered_set: bool,
    /// The store barriers log the references they overwrite while marking
    /// runs (snapshot at the beginning: concurrent marking).
    pub(crate) snapshot: bool,
    /// The load barrier forwards and heals references into the pages being
    /// evacuated (relocation while the mutators run).
    pub(crate) load: bool,
}

/// When a collector moves objects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Moves {
    /// In its pauses only: every slot is updated while the mutators are
    /// stopped.
    InPauses,
    /// While the mutators run: a slot is healed with a compare-and-swap,
    /// which the binding's slots must make atomic
    /// ([`Slot::COMPARE_EXCHANGE`](crate::Slot::COMPARE_EXCHANGE)).
    WhileMutatorsRun,
    /// Never: a page is reclaimed once empty.
    Never,
}

/// What a collector asks of the mutators and the binding, and how it
/// collects: declared once, in the collector's folder.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Constraints {
    /// The barriers the mutators run for it.
    pub(crate) barriers: NeededBarriers,
    /// When it moves objects.
    pub(crate) moves: Moves,
    /// Whether it collects young and old objects apart
    /// ([`Generations::YoungAndOld`](crate::Generations)); `false`:
    /// single-generation only.
    pub(crate) generational: bool,
    /// Whether its work runs while the mutators run, on the runtime's GC
    /// thread (the mutators then wait for a cycle instead of running one).
    pub(crate) concurrent: bool,
}
