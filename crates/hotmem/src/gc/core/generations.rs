//! Young and old objects, as the core and the embedder name them: whether
//! a runtime has generations ([`Generations`]) and which objects one
//! collection marked ([`CollectionKind`]). A leaf: it imports nothing from
//! the crate.
//!
//! What carries generations between collections lives with the collector
//! that has them: the store barrier's remembered set and its table of old
//! pages in `gc/barriers/remembered_set.rs`, the choice of young or full
//! collections in the stop-the-world collector
//! (`gc/stop_the_world/generational_policy.rs`).

use serde::Serialize;

/// Whether the heap is split into young and old objects.
///
/// ```
/// use hotmem::{Generations, Runtime};
/// let rt = Runtime::builder()
///     .heap_max(64 << 20)
///     .generations(Generations::YoungAndOld)
///     .build()
///     .unwrap();
/// assert_eq!(rt.config().generations(), Generations::YoungAndOld);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Generations {
    /// Every collection marks the whole heap. The store barrier records
    /// nothing.
    Single,
    /// Young collections (the default), with a full one when what survives reaches the
    /// heap's target (see [`HeapSizing`](crate::HeapSizing)). Every store of a reference into an object that may be old must
    /// go through [`Mutator::store_ref`](crate::Mutator::store_ref), and the
    /// binding must rebuild slots from their addresses
    /// ([`Binding::slot_at`](crate::Binding::slot_at)); a binding that
    /// cannot gets full collections only. With both collectors: the
    /// stop-the-world one's young collections evacuate or promote in their
    /// pause, the concurrent one's young cycles mark while the mutators run
    /// (see [`CollectorMode::Concurrent`](crate::CollectorMode::Concurrent)).
    #[default]
    YoungAndOld,
}

/// Which objects a collection marked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CollectionKind {
    /// Only young objects, from the roots and the remembered slots.
    Young,
    /// Every object reachable from the roots.
    Full,
}
