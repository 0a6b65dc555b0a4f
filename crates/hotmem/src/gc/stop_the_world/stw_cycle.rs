//! One stop-the-world collection as a list of phases over one
//! [`StwCycle`] value.
//!
//! In one pause, with the mutators' allocation retired (see the
//! [collector](super)):
//! 1. **start**: map the heap's pages (a live map each); in a young
//!    collection, rebuild the slots the store barrier remembered;
//! 2. **mark**: from the roots and the remembered slots, trace the live
//!    graph in parallel on the GC workers; then process the references
//!    that are not strong (the core's
//!    [`mark`](crate::gc::core::mark),
//!    [`root_scan`](crate::gc::core::root_scan) and
//!    [`weak_processing`](crate::gc::core::weak_processing));
//! 3. **select the relocation set**: the pages whose objects pack into
//!    fewer pages, each with a forwarding table; empty pages are freed at
//!    once (the core's [`select`](crate::gc::core::select) and
//!    [`free`](crate::gc::core::free));
//! 4. **relocate** ([`relocate`](super::relocate)): copy the selected
//!    pages' objects on workers bound to each page's NUMA node;
//! 5. **update** ([`update`](super::update)): every slot and root that may
//!    refer to a moved object gets the new address, and so do the weak
//!    references that survived;
//! 6. **free** the evacuated pages.
//!
//! This file holds the state the phases share beside the core's
//! [`Collection`], the order they run in, and the freeing at the end.

use crate::GcError;
use crate::error::BadReference;
use crate::gc::barriers::RememberedSet;
use crate::gc::core::collection::{Collection, CollectionRequest};
use crate::gc::core::collector_mode::CollectorMode;
use crate::gc::core::ephemeron_marking::EphemeronStart;
use crate::gc::core::free::{free_pages, zap_dead};
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::heap::GcHeap;
use crate::gc::core::mark::{MarkPolicy, Marker, Traced};
use crate::gc::core::phases::{GcPhase, PhaseTimes};
use crate::gc::core::root_scan::rebuild_slots;
use crate::gc::core::root_tables::RootTableVisit;
use crate::gc::core::stats::CollectStats;
use crate::gc::core::weak_processing::{EphemeronClearing, HandleClearing};
use crate::gc::core::workers::GcWorkers;
use crate::vm::{Binding, ObjectReference, Slot};
use crate::weak::FinalizerStart;
use hotmem_page::PageRef;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Whether a collection overwrites the dead objects of the young pages that
/// stay (promoted where they are). Nothing may read them: a binding that
/// did not report a slot, or an embedder that stored a reference into an
/// old object without the store barrier, then reads the pattern instead of
/// an object that looks intact until its page is reused. Debug builds only
/// (a write of every dead byte of those pages).
const ZAP_DEAD_YOUNG: bool = cfg!(debug_assertions);

/// Objects a phase handles on the collecting thread, without waking the
/// workers: marking traces this many here before it hands the rest over
/// (see [`Marker::trace_here`]), and relocation and the update run here
/// when they have at most this many objects to copy or slots to visit. A
/// young collection that finds a few survivors (a VM's loop that
/// allocates and drops) then wakes no worker, which cost it most of its
/// pause: the Lox VM's closures.lox, a few dozen objects per collection
/// on 2 workers, had Mark p50 0.136 ms, Relocate 0.088 ms and Update
/// 0.070 ms. Waking them for marking only moved the cost to the next
/// phase that did. A large collection hands over after about 0.1 ms.
pub(super) const ON_THIS_THREAD: u64 = 1024;

/// Bytes of objects relocation copies, or the update reads slots from, on
/// the collecting thread at most (with at most [`ON_THIS_THREAD`]
/// objects): a few large objects are still worth the workers.
pub(super) const ON_THIS_THREAD_BYTES: usize = 256 << 10;

/// Marking in a pause: no reference is stale, no page outside the map, and
/// the slots into young pages are remembered (an update that moved only
/// young pages visits those).
pub(super) struct InPause;

impl MarkPolicy for InPause {
    const REMEMBER_YOUNG_SLOTS: bool = true;

    #[inline]
    fn current(&self, r: ObjectReference) -> Result<ObjectReference, BadReference> {
        Ok(r)
    }

    #[inline]
    fn heal<S: Slot>(&self, _: &S, t: ObjectReference) -> Result<ObjectReference, BadReference> {
        Ok(t)
    }

    #[inline]
    fn allocated_since_map(&self, _: ObjectReference) -> bool {
        false
    }
}

/// One stop-the-world collection in progress: the core's collection, the
/// slots to start and to update from, and what relocation found.
pub(super) struct StwCycle<'a, B: Binding> {
    pub(super) c: Collection<'a, B>,
    /// The slots the store barrier remembered, rebuilt by the binding
    /// (young collections only): roots of the marking, updated afterwards.
    pub(super) barrier_slots: Vec<B::Slot>,
    /// Per marking worker: the slots of marked objects that refer into
    /// young pages (the update visits only these when only young pages
    /// moved).
    pub(super) remembered: Vec<Vec<B::Slot>>,
    /// Per page: every live object was copied away.
    pub(super) evacuated: Vec<bool>,
    /// Slots found during the update without a forwarding entry, pointing
    /// at an unmarked object in an evacuated page (a binding bug).
    pub(super) inconsistent: AtomicU64,
    /// The declared phases' times, as they run.
    pub(super) times: PhaseTimes,
}

impl<'a, B: Binding> StwCycle<'a, B> {
    /// Runs one collection of `heap` with binding `binding`: its phases in
    /// order. The caller holds the collection lock and the safepoint, and
    /// has retired the mutators' allocation pages and buffers.
    /// `remembered`: the store barrier's set, with generations.
    pub(super) fn run(
        binding: &'a B,
        heap: &'a GcHeap,
        workers: &mut GcWorkers,
        request: CollectionRequest,
        remembered: Option<&RememberedSet>,
    ) -> Result<CollectStats, GcError> {
        let started = Instant::now();
        let mut cycle =
            StwCycle::start(binding, heap, workers.count().max(1), request, remembered)?;
        cycle.mark(workers)?;
        cycle.c.select_relocation_set();
        cycle.free_empty_pages();
        cycle.relocate(workers)?;
        // From here on references are rewritten: a failure leaves some naming
        // the copies and some the originals, and poisons the runtime.
        heap.poison.on_error(cycle.update_references(workers))?;
        heap.poison.on_error(cycle.forward_weak_refs())?;
        cycle.zap_dead_young();
        cycle.free_evacuated_pages()?;
        let times = cycle.times.clone();
        let mut stats = cycle.c.finish();
        stats.count_phase_times(&times);
        stats.pause_ns = started.elapsed().as_nanos() as u64;
        Ok(stats)
    }

    /// Maps the heap and takes the remembered slots: the state marking
    /// starts from.
    fn start(
        binding: &'a B,
        heap: &'a GcHeap,
        mark_workers: usize,
        request: CollectionRequest,
        remembered: Option<&RememberedSet>,
    ) -> Result<Self, GcError> {
        // The slots the store barrier remembered since the last collection:
        // taken by every collection of a generational runtime (each one ends
        // with no young page left), used by a young one.
        let slots = remembered.map(|r| r.take_remembered()).unwrap_or_default();
        let old = remembered.map(|r| &*r.old);
        let mut c = Collection::start(binding, heap, request, mark_workers, |start| {
            old.is_some_and(|t| t.is_old(start))
        });
        let barrier_slots = match c.kind {
            CollectionKind::Young => rebuild_slots(binding, &c.map, &slots)?.unwrap_or_else(|| {
                // The binding cannot rebuild its slots: mark everything.
                c.become_full();
                Vec::new()
            }),
            CollectionKind::Full => Vec::new(),
        };
        // SAFETY: at the safepoint, between phases: the mutators are
        // stopped and the GC workers idle, so nobody allocates with the GC
        // allocator.
        unsafe { c.retire_target_pages() };
        let pages = c.map.pages.len();
        Ok(StwCycle {
            c,
            barrier_slots,
            remembered: Vec::new(),
            evacuated: vec![false; pages],
            inconsistent: AtomicU64::new(0),
            times: PhaseTimes::new(CollectorMode::StopTheWorld),
        })
    }

    /// Marks the live graph: the roots on this thread, then the trace
    /// (on this thread up to [`ON_THIS_THREAD`] objects, the rest on the
    /// GC workers), into each page's live map; then the references that are
    /// not strong.
    fn mark(&mut self, workers: &mut GcWorkers) -> Result<(), GcError> {
        let running = self.times.start(GcPhase::Mark);
        let c = &self.c;
        let count = c.stats.mark_workers;
        let marker = Marker::new(c.binding, &c.map, count, c.young_only(), InPause);
        c.mark_roots(
            &marker,
            &self.barrier_slots,
            RootTableVisit::InPause,
            |_| {},
        )?;
        if marker.trace_here(c.heap, ON_THIS_THREAD)? == Traced::Partly {
            marker.trace(c.heap, workers)?;
        }
        self.times.stop(running);
        let c = &self.c;
        let mut refs = c
            .process_weak_refs(
                &marker,
                workers,
                HandleClearing::InPause,
                EphemeronStart::All,
                EphemeronClearing::InPause,
                FinalizerStart::All,
            )?
            .stats;
        refs.weak_set = c.sweep_weak_sets(&marker);
        let marked = marker.marked();
        let remembered = marker.take_remembered();
        drop(marker);
        let stats = &mut self.c.stats;
        stats.refs = refs;
        stats.objects_marked = marked;
        stats.live_objects = marked;
        self.remembered = remembered;
        Ok(())
    }

    /// Frees the pages where marking found nothing (room for the
    /// relocation's targets).
    fn free_empty_pages(&mut self) {
        // SAFETY: at the safepoint, after marking, with both object
        // allocators retired (the mutators' by the collector before the
        // cycle, the GC's at its start) and the non-moving space's empty
        // pages let go of (`Collection::unused`): nobody allocates in these
        // pages, and nothing reachable refers into them (every reference from a
        // root or a live object was checked to point at a marked object).
        unsafe { self.c.free_empty_pages() };
    }

    /// Overwrites the dead objects of the young pages that stay, in debug
    /// builds (see [`ZAP_DEAD_YOUNG`]).
    fn zap_dead_young(&self) {
        if !ZAP_DEAD_YOUNG {
            return;
        }
        for (pi, p) in self.c.map.pages.iter().enumerate() {
            if p.young && !self.evacuated[pi] && p.live.live_objects() > 0 {
                // SAFETY: at the safepoint after the update: marking is
                // complete, the page stays (not evacuated), the mutators
                // are stopped and the workers done.
                unsafe { zap_dead(&self.c.map, pi) };
            }
        }
    }

    /// Frees the evacuated pages that no slot still refers to, then reports
    /// slots the binding showed only to the update.
    fn free_evacuated_pages(&mut self) -> Result<(), GcError> {
        let to_free: Vec<PageRef> = (self.c.map.pages.iter().enumerate())
            .filter(|(pi, p)| self.evacuated[*pi] && !p.keep.load(Ordering::Relaxed))
            .map(|(_, p)| p.page.clone())
            .collect();
        // SAFETY: still at the safepoint; every live object of these pages
        // was copied and every slot of every live object and every root
        // that referred to one was updated to the copy (a reference found
        // without a forwarding entry kept its page out of this list); the
        // workers are done and these pages were retired before the
        // relocation, so nobody allocates in them or uses their memory.
        self.c.stats.pages_evacuated = unsafe { free_pages(&self.c.heap.pages, &to_free) };
        match self.inconsistent.load(Ordering::Relaxed) {
            0 => Ok(()),
            slots => Err(GcError::InconsistentBinding { slots }),
        }
    }
}
