//! [`CollectorMode`]: which collector a runtime runs (a leaf: it imports
//! nothing from the crate, so that the phase list and the log can name
//! collectors).

use serde::Serialize;

/// Which collector the runtime runs.
///
/// ```
/// use hotmem::{CollectorMode, Runtime};
/// let rt = Runtime::builder().collector(CollectorMode::ConcurrentNonMoving).build()?;
/// assert_eq!(rt.config().collector(), CollectorMode::ConcurrentNonMoving);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CollectorMode {
    /// Every collection stops the mutators for all of its work. It asks
    /// nothing of the embedder's loads: objects move only while the
    /// mutators are stopped, and the collector updates every slot then.
    StopTheWorld,
    /// The default. Marking and relocation run while the mutators run,
    /// between three short pauses (mark start: the roots; mark end: the
    /// mutators' logs and the weak references; relocate start: the roots
    /// into the pages to evacuate), on the runtime's GC thread and
    /// workers. A cycle
    /// starts early enough, from the allocation rate and the last cycle's
    /// duration, that mutators rarely wait for it (an allocation that
    /// must wait is an allocation stall, counted in
    /// [`GcTotals::stalls`](crate::GcTotals::stalls)).
    ///
    /// What it asks of the embedder:
    /// - every load of a reference from a heap slot goes through the load
    ///   barrier ([`Mutator::load_ref`](crate::Mutator::load_ref)): objects
    ///   move while the mutators run, and a slot may hold an old copy's
    ///   address until the barrier (or the next cycle's marking) heals it;
    /// - every store into a heap slot goes through the store barriers
    ///   ([`Mutator::store_ref`](crate::Mutator::store_ref),
    ///   [`Mutator::before_overwrite`](crate::Mutator::before_overwrite));
    /// - slots load, store and compare-and-swap atomically
    ///   ([`Slot::COMPARE_EXCHANGE`](crate::Slot::COMPARE_EXCHANGE)): the
    ///   runtime refuses to build otherwise.
    ///
    /// With [`Generations::YoungAndOld`](crate::Generations::YoungAndOld)
    /// most cycles are young: they mark, concurrently too, only what was
    /// allocated since the last cycle began, from the roots and the slots
    /// the store barrier remembered, evacuate the mostly-dead young pages
    /// to old pages and promote the others where they are; full cycles mark
    /// and relocate the whole heap. The log calls them `Minor Collection`
    /// and `Major Collection`. Both are the default.
    ///
    /// ```
    /// use hotmem::objects::SimpleObjects;
    /// use hotmem::{CollectionKind, CollectorMode, Generations, Runtime};
    /// let rt = Runtime::builder()
    ///     .collector(CollectorMode::Concurrent)
    ///     .generations(Generations::YoungAndOld)
    ///     .binding(SimpleObjects::new())
    ///     .build()?;
    /// assert_eq!(rt.collect_young()?.kind, CollectionKind::Young);
    /// assert_eq!(rt.collect()?.kind, CollectionKind::Full);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[default]
    Concurrent,
    /// Marking runs while the mutators run, as with
    /// [`CollectorMode::Concurrent`], but nothing moves: a page is
    /// reclaimed once marking finds it empty, and the heap may fragment.
    /// With one generation the mutators keep the pages they allocate in
    /// across cycles, so that what survives each cycle shares pages; with
    /// two, every cycle starts them new pages. For an embedder whose loads
    /// do not all go through the load barrier (or whose slots cannot
    /// compare-and-swap); the store barriers are still required. With
    /// generations, as `Concurrent`'s young cycles.
    ConcurrentNonMoving,
}

impl CollectorMode {
    /// Whether marking runs while the mutators run.
    pub fn is_concurrent(self) -> bool {
        matches!(
            self,
            CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving
        )
    }
}
