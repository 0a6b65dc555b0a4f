//! Young cycles inside a full cycle's marking (generational ZGC runs young
//! collections while an old marking is in progress), when [`YoungInFull`]
//! asks for them (when one is due by the young pacing or an allocation
//! stalls, or after every round): the marking stops between two batches
//! of objects, leaving its work in its queues, a young cycle runs whole,
//! and the marking goes on where it stopped. The full marking's workers
//! are idle meanwhile: the two never run at once.
//!
//! Why the full marking stays correct (it is snapshot-at-the-beginning):
//! - **Its snapshot is untouched.** A full cycle makes every page old at
//!   its Pause Mark Start, so a young cycle inside it marks, frees,
//!   evacuates and promotes only pages allocated since, and copies into
//!   pages allocated since: objects the full marking takes as live
//!   without examining them (the full cycle's own record of new pages,
//!   [`NewPages::contains_since_full`](crate::gc::core::meta::NewPages::contains_since_full),
//!   which a young cycle's record does not reset, and which records the
//!   GC's target pages too, [`GcPages`](crate::gc::core::gc_pages::GcPages)).
//!   Nothing of the full cycle's map is freed or moved before its own
//!   selection. A stale reference into a young set that the full marking
//!   meets lies in such a page too: it is not followed.
//! - **It gets every log.** The snapshot barrier stays on from the full
//!   cycle's mark start to its mark end, and every log a young cycle
//!   takes (at its mark start, in its rounds, at its mark end) is also
//!   marked by the full marking. The barrier filters with the young
//!   cycle's newer mark start: it logs more than the full marking needs,
//!   never less.
//! - **Its weak verdicts hold.** A weak set's lookup keeps what it returns
//!   alive while either marking has not reached it
//!   ([`SetMarking::suspend_full`](crate::weak::SetMarking::suspend_full)).
//!
//! The load barrier holds a third relocation set for these young cycles
//! ([`SetOwner::YoungInFull`](crate::gc::barriers::SetOwner)): the young
//! set of before the full cycle stays installed until the full Pause Mark
//! End (the full cycle took the remembered slots that would heal it, and
//! heals them itself), and each young cycle inside takes the last one's
//! out at its own Pause Mark End, as young cycles between full ones do.
//! The full cycle leaves its young cycles' last set installed (its
//! marking heals only into the sets installed when it began): the next
//! young cycle takes it out, and until one has run, the next full cycle
//! runs no young cycle inside.

use super::concurrent_cycle::ConcurrentCycle;
use super::{Bookkeeping, ConcurrentCollector};
use crate::GcError;
use crate::gc::core::driver::DriverContext;
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::heap::GcHeap;
use crate::gc::core::stats::GcCause;
use crate::gc::core::workers::GcWorkers;
use crate::vm::Binding;
use crate::weak::SetMarking;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// When a generational concurrent collector runs young cycles while a
/// full cycle marks ([`RuntimeBuilder::young_in_full`](crate::RuntimeBuilder::young_in_full)).
///
/// ```
/// use hotmem::{CollectorMode, Generations, Runtime, YoungInFull};
/// let rt = Runtime::builder()
///     .collector(CollectorMode::Concurrent)
///     .generations(Generations::YoungAndOld)
///     .young_in_full(YoungInFull::Paced)
///     .build()?;
/// assert_eq!(rt.config().young_in_full(), YoungInFull::Paced);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum YoungInFull {
    /// Never (the default): a full cycle's marking runs to its end first,
    /// and stalled allocations wait for it. On the demo with one mutator
    /// on 2 CPUs (`--threads 1 --secs 6`, three interleaved runs)
    /// [`YoungInFull::Paced`] stalled longer (338-444 ms against 266-341)
    /// at an equal or lower allocation rate: there, full cycles last
    /// 3-5 ms and start with the heap nearly full, so a young cycle inside
    /// one has no room to evacuate into. Kept off until it pays where
    /// full markings are long.
    #[default]
    Never,
    /// When a young cycle is due: the mutators took a small page since
    /// the last mark start, and the budget left falls to what they took
    /// during the last young cycle and half again (the pacing of young
    /// cycles between full ones), or an allocation stalls. Not again in
    /// the same full cycle once one freed nothing.
    Paced,
    /// After every round of the full cycle's Concurrent Mark, and when due
    /// as above: for tests and comparisons (a round of tracing
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

    /// Whether a young cycle is due now, the mutators having taken `since`
    /// bytes of pages (since the heap was made) at the last mark start:
    /// they took a small page since, and an allocation stalls or the
    /// budget left falls to what they took during the last young cycle,
    /// and half again (the pacing of young cycles between full ones).
    pub(super) fn due(&self, since: u64) -> bool {
        let source = self.heap.mutator_alloc.source();
        let page = self.heap.mutator_alloc.page_sizes().small_page();
        if self.when == YoungInFull::Never || source.taken().saturating_sub(since) < page as u64 {
            return false;
        }
        let during = self.heap.sizing.taken_during(CollectionKind::Young);
        let margin = during.map_or(page, |b| usize::try_from(b).unwrap_or(usize::MAX));
        self.collector.state.stalled_now() || source.remaining() <= margin.saturating_mul(3) / 2
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
        let number = self.next_number.fetch_add(1, Ordering::Relaxed);
        let before = Bookkeeping::before(heap, workers);
        let state = &*collector.state;
        state.cycle_started(CollectionKind::Young);
        // Taken back by the drop, after the young cycle swept the sets.
        let suspended = SetMarking::suspend_full(heap.weak.sets.live());
        let cycle = ConcurrentCycle {
            full_log: Some(full_log),
            ..collector.cycle(heap, self.cx, CollectionKind::Young, number)
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
