//! Young cycles inside a full cycle's marking (generational ZGC runs young
//! collections while an old marking is in progress), when [`YoungInFull`]
//! asks for them (a stalled allocation, or every round): the marking
//! stops between two batches of objects, leaving its work in its queues,
//! a young cycle runs whole, and the marking goes on where it stopped.
//!
//! Why the full marking stays correct (it is snapshot-at-the-beginning):
//! - **Its snapshot is untouched.** A full cycle makes every page old at
//!   its Pause Mark Start, so a young cycle inside it marks, frees and
//!   promotes only pages allocated since: objects the full marking takes
//!   as live without examining them (the full cycle's own record of new
//!   pages, [`NewPages::contains_since_full`](crate::gc::core::meta::NewPages::contains_since_full),
//!   which the young cycle's record does not reset). Nothing of the full
//!   cycle's map is freed or moved before its own selection.
//! - **It gets every log.** The snapshot barrier stays on from the full
//!   cycle's mark start to its mark end, and every log the young cycle
//!   takes (at its mark start, in its rounds, at its mark end) is also
//!   marked by the full marking. The barrier filters with the young
//!   cycle's newer mark start: it logs more than the full marking needs,
//!   never less.
//! - **Its weak verdicts hold.** A weak set's lookup keeps what it returns
//!   alive while either marking has not reached it
//!   ([`SetMarking::suspend_full`](crate::weak::SetMarking::suspend_full)).
//!
//! The young cycle evacuates nothing: its young pages found empty are
//! freed and the others become old where they are (as a young cycle of
//! [`CollectorMode::ConcurrentNonMoving`](crate::CollectorMode)). So no
//! relocation set is installed or taken out of the load barrier while the
//! full cycle marks: the barrier keeps forwarding into the sets the full
//! marking heals, until its Pause Mark End. The young cycle's survivors
//! are the next full cycle's to compact.

use super::concurrent_cycle::ConcurrentCycle;
use super::{Bookkeeping, ConcurrentCollector};
use crate::GcError;
use crate::gc::core::driver::DriverContext;
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::heap::GcHeap;
use crate::gc::core::phases::PhaseTimes;
use crate::gc::core::stats::{ConcurrentPhases, GcCause};
use crate::gc::core::workers::GcWorkers;
use crate::vm::Binding;
use crate::weak::SetMarking;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// When a generational concurrent collector runs young cycles while a
/// full cycle marks ([`RuntimeBuilder::young_in_full`](crate::RuntimeBuilder::young_in_full)).
///
/// ```
/// use hotmem::{CollectorMode, Generations, Runtime, YoungInFull};
/// let rt = Runtime::builder()
///     .collector(CollectorMode::Concurrent)
///     .generations(Generations::YoungAndOld)
///     .young_in_full(YoungInFull::WhenStalled)
///     .build()?;
/// assert_eq!(rt.config().young_in_full(), YoungInFull::WhenStalled);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum YoungInFull {
    /// Never (the default): a full cycle's marking runs to its end first,
    /// and stalled allocations wait for it. The young cycles inside a full
    /// one evacuate nothing: what survives them is promoted where it is,
    /// and only the next full cycle reclaims it. On the demo (one mutator,
    /// 2 CPUs) [`YoungInFull::WhenStalled`] neither shortened the stalls
    /// nor raised the allocation rate, and ran 8% more full cycles.
    #[default]
    Never,
    /// When a mutator's allocation stalls and the mutators took at least
    /// a small page since the last mark start: the young pages found empty
    /// are freed before the full cycle ends. Not again in the same full
    /// cycle once one freed nothing.
    WhenStalled,
    /// After every round of the full cycle's Concurrent Mark, and when
    /// stalled as above: for tests and comparisons (a round of tracing
    /// ends at a point the program does not decide, but a full cycle
    /// always has at least one).
    EachRound,
}

/// What a full cycle needs to run young cycles inside its marking: the
/// collector, and the bookkeeping of the cycles it runs.
pub(super) struct YoungRunner<'a, 's, B: Binding> {
    pub(super) collector: &'a ConcurrentCollector<B>,
    pub(super) heap: &'a GcHeap,
    pub(super) cx: &'a DriverContext<'s>,
    pub(super) when: YoungInFull,
    /// The number the next young cycle gets (after the full cycle's).
    pub(super) next_number: AtomicU64,
}

impl<B: Binding> YoungRunner<'_, '_, B> {
    /// Whether young cycles run after each round of marking.
    pub(super) fn each_round(&self) -> bool {
        self.when == YoungInFull::EachRound
    }

    /// Whether a stalled allocation asks for a young cycle now, the
    /// mutators having taken `taken` bytes of pages since the heap was made
    /// and `since` at the last mark start.
    pub(super) fn stalled(&self, since: u64) -> bool {
        let state = &self.collector.state;
        let source = self.heap.mutator_alloc.source();
        let page = self.heap.mutator_alloc.page_sizes().small_page() as u64;
        self.when != YoungInFull::Never
            && state.stalled_now()
            && source.taken().saturating_sub(since) >= page
    }

    /// Runs one young cycle for `cause`, `full_log` marking for the full cycle every
    /// log it takes; records it as any cycle. Whether it freed memory.
    pub(super) fn run(
        &self,
        workers: &mut GcWorkers,
        cause: GcCause,
        full_log: &(dyn Fn(Vec<usize>) + Sync),
    ) -> Result<bool, GcError> {
        let (collector, heap) = (self.collector, self.heap);
        let generational = collector.generations.as_ref();
        let remembered = generational.map(|g| &*g.remembered);
        let number = self.next_number.fetch_add(1, Ordering::Relaxed);
        let before = Bookkeeping::before(heap, workers);
        let state = &*collector.state;
        state.cycle_started(CollectionKind::Young);
        // Taken back by the drop, after the young cycle swept the sets.
        let suspended = SetMarking::suspend_full(heap.weak.sets.live());
        let cycle = ConcurrentCycle {
            binding: &*collector.binding,
            kind: CollectionKind::Young,
            remembered,
            heap,
            cx: self.cx,
            barriers: &collector.barriers,
            state,
            moves: false,
            tables: collector.tables,
            number,
            ttsp: Duration::ZERO,
            phases: ConcurrentPhases::default(),
            times: PhaseTimes::new(collector.mode),
            young_inside: None,
            full_log: Some(full_log),
        };
        let result = cycle.run(workers, cause);
        drop(suspended);
        let freed = result
            .as_ref()
            .is_ok_and(|s| s.pages_freed_empty > 0 || s.used_after < s.used_before);
        collector.after_cycle(
            heap,
            self.cx,
            workers,
            before,
            (CollectionKind::Young, cause),
            &result,
        );
        state.cycle_started(CollectionKind::Full);
        result.map(|_| freed)
    }
}
