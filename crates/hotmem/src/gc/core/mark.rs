//! The mark phase: parallel marking with work stealing.
//!
//! Each marking worker owns a LIFO deque (depth-first: the gray set stays
//! small); roots go into a shared injector. A worker pops its own deque,
//! then steals a batch from the injector or another worker. Termination:
//! a worker counts itself active before it steals and inactive once its
//! deque is empty and stealing failed; it stops when it sees no active
//! worker and every queue empty (only an active worker can push, so no
//! work can appear after that). An object is marked by the thread that
//! sets its start bit in the page's live map, so one reached twice is
//! scanned once.
//!
//! What differs between collectors is a [`MarkPolicy`]: whether a slot may
//! hold a stale reference (healed as it is marked through), whether pages
//! outside the map hold live objects, whether slots into young pages are
//! remembered. Concurrent marking feeds the same queues from the mutators'
//! logs (see [`Marker::mark_root`]).

use super::binding_panic::panic_message;
use super::heap::GcHeap;
use super::in_collection;
use super::meta::HeapMap;
use super::workers::{GcWorkers, PARKED_CHECK};
use crate::error::{BadReference, GcError};
use crate::vm::{Binding, ObjectReference, Slot};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use hotmem_os::Address;
use parking_lot::Mutex;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// What a collector adds to the shared marker (mmtk-core's per-plan
/// tracing): each collector's policy is a type of its own, so that the
/// marker is compiled once per collector and a check that one collector
/// never needs costs it nothing.
pub(crate) trait MarkPolicy: Sync {
    /// Whether marking remembers the slots of marked objects that refer
    /// into young pages (one list per worker, see
    /// [`Marker::take_remembered`]), for an update that visits only those.
    const REMEMBER_YOUNG_SLOTS: bool;

    /// Where `r`'s object is now: `r`, unless references may be stale
    /// (the last cycle's relocation set) and `r` is one; an error for a
    /// stale reference to an object that was not relocated.
    fn current(&self, r: ObjectReference) -> Result<ObjectReference, BadReference>;

    /// [`MarkPolicy::current`] of `t`, just loaded from `slot`, which is
    /// healed (given the object's address now) if `t` was stale.
    fn heal<S: Slot>(&self, slot: &S, t: ObjectReference) -> Result<ObjectReference, BadReference>;

    /// Whether `r` lies in a page allocated since the heap map was made:
    /// its objects are live and marking does not examine them (a reference
    /// into one is no error).
    fn allocated_since_map(&self, r: ObjectReference) -> bool;
}

/// Objects a worker processes under one unwind guard (and between two
/// checks of the abort flag).
const BATCH: usize = 256;

/// Visits some roots (one root table's entries), passing each to the
/// function it is given, which marks it: what a worker of a concurrent
/// marking claims before it traces. Returns how many it visited.
pub(crate) type RootJob<'j> = Box<
    dyn Fn(&mut dyn FnMut(ObjectReference) -> Result<(), GcError>) -> Result<u64, GcError>
        + Sync
        + 'j,
>;

/// What [`Marker::trace_here`] traced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Traced {
    /// Everything: marking is complete.
    All,
    /// Its budget ran out first.
    Partly,
}

/// One marking phase.
pub(crate) struct Marker<'a, B: Binding, P: MarkPolicy> {
    binding: &'a B,
    map: &'a HeapMap,
    injector: Injector<ObjectReference>,
    stealers: Vec<Stealer<ObjectReference>>,
    deques: Vec<Mutex<Option<Worker<ObjectReference>>>>,
    /// Workers looking for work or working: written by every idle worker
    /// on every try, so on a cache line of its own. When a change of the
    /// struct's fields put it beside the fields every worker reads per
    /// object (`binding`, `map`, `young_only`), marking on 10 workers of
    /// 16 CPUs ran 3-8x slower (`binary_trees --depth 20`: 1.8k-5.3k
    /// objects per ms per worker against 13.5k-14.8k; a 2-CPU machine
    /// does not show it).
    active: CachePadded<AtomicUsize>,
    abort: AtomicBool,
    error: Mutex<Option<GcError>>,
    marked: AtomicU64,
    /// Per worker: the slots of marked objects that refer into young pages.
    remembered: Mutex<Vec<Vec<B::Slot>>>,
    /// A young collection: references to objects outside young pages are
    /// checked but neither marked nor followed (those objects are taken as
    /// live).
    young_only: bool,
    /// The collector's part (see [`MarkPolicy`]).
    policy: P,
}

/// A worker counted in a marker's `active` count until this is dropped,
/// also if what it runs panics (the others would wait for it otherwise).
struct Active<'a>(&'a AtomicUsize);

impl<'a> Active<'a> {
    fn enter(active: &'a AtomicUsize) -> Active<'a> {
        active.fetch_add(1, Ordering::SeqCst);
        Active(active)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Live objects and bytes found on the current page, added to its live map
/// in one go when the worker moves to another page.
struct PageTally {
    page: usize,
    objects: usize,
    bytes: usize,
}

impl<'a, B: Binding, P: MarkPolicy> Marker<'a, B, P> {
    /// A marker of `map` on `workers` workers (`young_only`: only young
    /// pages are marked), with the collector's `policy`.
    pub(crate) fn new(
        binding: &'a B,
        map: &'a HeapMap,
        workers: usize,
        young_only: bool,
        policy: P,
    ) -> Self {
        let deques: Vec<Worker<ObjectReference>> =
            (0..workers).map(|_| Worker::new_lifo()).collect();
        Marker {
            binding,
            map,
            injector: Injector::new(),
            stealers: deques.iter().map(Worker::stealer).collect(),
            deques: deques.into_iter().map(|d| Mutex::new(Some(d))).collect(),
            active: CachePadded::new(AtomicUsize::new(0)),
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            marked: AtomicU64::new(0),
            remembered: Mutex::new(Vec::new()),
            young_only,
            policy,
        }
    }

    /// Where `r`'s object is now (see [`MarkPolicy::current`]).
    #[inline]
    fn current(&self, r: ObjectReference) -> Result<ObjectReference, BadReference> {
        self.policy.current(r)
    }

    /// Whether `r` lies in a page allocated since the map was made.
    #[inline]
    fn in_new_page(&self, r: ObjectReference) -> bool {
        self.policy.allocated_since_map(r)
    }

    /// Objects marked so far.
    pub(crate) fn marked(&self) -> u64 {
        self.marked.load(Ordering::Relaxed)
    }

    /// The slots of marked objects that referred into young pages (see
    /// `PageGc::young`), one list per worker.
    pub(crate) fn take_remembered(&self) -> Vec<Vec<B::Slot>> {
        std::mem::take(&mut *self.remembered.lock())
    }

    /// Marks a root (from the collecting thread): true if this call marked
    /// it (it is traced by the next [`Marker::trace`]); an error names the
    /// slot.
    pub(crate) fn mark_root(
        &self,
        r: ObjectReference,
        slot: Option<Address>,
    ) -> Result<bool, GcError> {
        self.mark_root_into(r, slot, |r| self.injector.push(r))
    }

    /// [`Marker::mark_root`], pushing what it marked with `push` (a
    /// worker's own deque, from which the others steal).
    fn mark_root_into(
        &self,
        r: ObjectReference,
        slot: Option<Address>,
        push: impl FnOnce(ObjectReference),
    ) -> Result<bool, GcError> {
        let invalid = |reason| GcError::InvalidReference {
            value: r.get(),
            slot,
            holder: None,
            reason,
        };
        let r = self.current(r).map_err(invalid)?;
        let (pi, wi) = match self.map.locate(r) {
            Ok(at) => at,
            Err(_) if self.in_new_page(r) => return Ok(false),
            Err(reason) => return Err(invalid(reason)),
        };
        if self.young_only && !self.map.pages[pi].young {
            return Ok(false);
        }
        if self.map.pages[pi].live.mark(wi) {
            push(r);
            return Ok(true);
        }
        Ok(false)
    }

    /// Marks what `slot` holds (a root slot, or a remembered slot of an old
    /// object, from the collecting thread), healing the slot first if it
    /// holds a stale reference ([`MarkPolicy::heal`]): true if this call
    /// marked it.
    pub(crate) fn mark_slot<S: Slot>(&self, slot: &S) -> Result<bool, GcError> {
        let Some(r) = slot.load() else {
            return Ok(false);
        };
        let r = self
            .policy
            .heal(slot, r)
            .map_err(|reason| GcError::InvalidReference {
                value: r.get(),
                slot: Some(slot.address()),
                holder: None,
                reason,
            })?;
        self.mark_root(r, Some(slot.address()))
    }

    /// Whether `r` is live now: marked, or (in a young collection) outside
    /// the young pages, or (concurrent marking) allocated since mark start.
    /// Not a reference to an object: not live.
    pub(crate) fn is_live(&self, r: ObjectReference) -> bool {
        let Ok(r) = self.current(r) else {
            return false;
        };
        match self.map.locate(r) {
            Ok((pi, wi)) => {
                let page = &self.map.pages[pi];
                (self.young_only && !page.young) || page.live.is_marked(wi)
            }
            Err(_) => self.in_new_page(r),
        }
    }

    /// Whether `r` refers to an object: in a mapped page, or (concurrent
    /// marking) in a page allocated since mark start.
    pub(crate) fn is_object(&self, r: ObjectReference) -> bool {
        let Ok(r) = self.current(r) else {
            return false;
        };
        self.map.locate(r).is_ok() || self.in_new_page(r)
    }

    /// The heap map it marks.
    pub(crate) fn map(&self) -> &'a HeapMap {
        self.map
    }

    /// Whether only young objects are marked.
    pub(crate) fn young_only(&self) -> bool {
        self.young_only
    }

    /// Traces what was marked since the last round on the workers (the
    /// roots, or objects retained by reference processing), to the end.
    pub(crate) fn trace(&self, heap: &GcHeap, workers: &mut GcWorkers) -> Result<(), GcError> {
        self.trace_concurrently(heap, workers, &|| usize::MAX, &[], &|| false)
            .map(drop)
    }

    /// [`Marker::trace`] while the mutators run: on as many workers as
    /// `allowed()` says at each moment (at least one). The others wait
    /// (checking every [`PARKED_CHECK`]) and join when it allows more: a
    /// concurrent cycle marks on a quarter of the CPUs, and on all of
    /// them while an allocation stalls (the stalled mutators' CPUs are
    /// idle meanwhile). Each worker first claims `roots` jobs one at a
    /// time, until none is left, then traces; returns how many roots the
    /// jobs visited. Tracing stops early, its work left in the queues for
    /// the next call ([`Marker::pending`]), once `pause_tracing()` says so
    /// (asked between two batches of objects): a full cycle lets a young
    /// one run meanwhile. The root jobs are always finished.
    pub(crate) fn trace_concurrently(
        &self,
        heap: &GcHeap,
        workers: &mut GcWorkers,
        allowed: &(dyn Fn() -> usize + Sync),
        roots: &[RootJob<'_>],
        pause_tracing: &(dyn Fn() -> bool + Sync),
    ) -> Result<u64, GcError> {
        let done = AtomicBool::new(false);
        let next_job = AtomicUsize::new(0);
        let visited = AtomicU64::new(0);
        let items = (0..self.deques.len())
            .map(|i| (heap.partitions[i % heap.partitions.len()], i))
            .collect();
        workers.run(items, |i| {
            let _inside = in_collection::enter(heap);
            // Worker 0 always marks; the others while they are allowed to.
            while i >= allowed().max(1) {
                if done.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(PARKED_CHECK);
            }
            if !roots.is_empty() {
                self.mark_roots_claimed(i, roots, &next_job, &visited);
            }
            self.work_up_to(i, u64::MAX, pause_tracing);
            done.store(true, Ordering::Release);
        })?;
        match self.take_error() {
            Some(e) => Err(e),
            None => Ok(visited.into_inner()),
        }
    }

    /// Runs the jobs of `roots` that worker `me` claims (`next` is the
    /// next unclaimed), adding what they visited to `visited`. What they
    /// mark goes onto the worker's own deque, which the others steal from
    /// (a shared queue that every worker pushes onto made marking slower
    /// than one thread marking the tables alone). Meanwhile the worker
    /// counts as active: the others, finding every queue empty, keep
    /// looking for the roots it pushes instead of ending the round. (They
    /// would still be traced, by this worker's own [`Marker::work_up_to`] after
    /// its jobs, but by it alone.)
    fn mark_roots_claimed(
        &self,
        me: usize,
        roots: &[RootJob<'_>],
        next: &AtomicUsize,
        visited: &AtomicU64,
    ) {
        let Some(local) = self.deques.get(me).and_then(|d| d.lock().take()) else {
            return;
        };
        {
            let _active = Active::enter(&self.active);
            let mut mark = |r| self.mark_root_into(r, None, |r| local.push(r)).map(drop);
            while !self.abort.load(Ordering::Relaxed) {
                let Some(job) = roots.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                match job(&mut mark) {
                    Ok(n) => {
                        visited.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => self.fail(e),
                }
            }
        }
        *self.deques[me].lock() = Some(local);
    }

    fn fail(&self, e: GcError) {
        let mut slot = self.error.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
        self.abort.store(true, Ordering::SeqCst);
    }

    /// The first error a worker found.
    fn take_error(&self) -> Option<GcError> {
        self.error.lock().take()
    }

    fn all_empty(&self) -> bool {
        self.injector.is_empty() && self.stealers.iter().all(Stealer::is_empty)
    }

    /// Whether objects marked are waiting to be traced: a tracing that
    /// stopped early left them (see [`Marker::trace_concurrently`]).
    pub(crate) fn pending(&self) -> bool {
        !self.all_empty()
    }

    fn steal(&self, local: &Worker<ObjectReference>, me: usize) -> Option<ObjectReference> {
        loop {
            let mut retry = false;
            match self.injector.steal_batch_and_pop(local) {
                Steal::Success(r) => return Some(r),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let n = self.stealers.len();
            for k in 1..n {
                match self.stealers[(me + k) % n].steal_batch_and_pop(local) {
                    Steal::Success(r) => return Some(r),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// Traces on the calling thread alone what is left to trace, up to
    /// about `budget` objects: what a pause has left after a concurrent
    /// marking is usually a few objects, and waking every worker for them
    /// costs the pause more than they do (each worker must run before the
    /// phase ends). [`Traced::Partly`] if work is left for
    /// [`Marker::trace`].
    pub(crate) fn trace_here(&self, heap: &GcHeap, budget: u64) -> Result<Traced, GcError> {
        {
            let _inside = in_collection::enter(heap);
            self.work_up_to(0, budget, &|| false);
        }
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        Ok(match self.all_empty() {
            true => Traced::All,
            false => Traced::Partly,
        })
    }

    /// Runs marking worker `me` until marking is complete (or failed), or
    /// until it marked `budget` objects or more, or once `stop()` says so
    /// (what it holds left in its deque, for other workers to steal or for
    /// its next run). Its deque is taken for the run and put back after,
    /// so that a later round (reference processing) can run it again.
    fn work_up_to(&self, me: usize, budget: u64, stop: &dyn Fn() -> bool) {
        let Some(local) = self.deques.get(me).and_then(|d| d.lock().take()) else {
            return;
        };
        let mut tally = PageTally {
            page: usize::MAX,
            objects: 0,
            bytes: 0,
        };
        let mut marked = 0u64;
        let mut remembered = Vec::new();
        let mut active = false;
        let mut idle = 0u32;
        loop {
            if self.abort.load(Ordering::Relaxed) || marked >= budget || stop() {
                break;
            }
            let next = match local.pop() {
                Some(r) => Some(r),
                None => {
                    if !active {
                        self.active.fetch_add(1, Ordering::SeqCst);
                        active = true;
                    }
                    self.steal(&local, me)
                }
            };
            let Some(r) = next else {
                self.active.fetch_sub(1, Ordering::SeqCst);
                active = false;
                if self.active.load(Ordering::SeqCst) == 0 && self.all_empty() {
                    break;
                }
                idle += 1;
                if idle < 32 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
                continue;
            };
            idle = 0;
            // One unwind guard for a batch of objects, not one per object.
            let mut done = 0u64;
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                self.drain(r, &local, &mut tally, &mut remembered, &mut done)
            }));
            marked += done;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(e)) => self.fail(e),
                Err(payload) => self.fail(GcError::ObjectModelPanicked(panic_message(&*payload))),
            }
        }
        if active {
            self.active.fetch_sub(1, Ordering::SeqCst);
        }
        self.flush(&tally);
        self.marked.fetch_add(marked, Ordering::Relaxed);
        self.remembered.lock().push(remembered);
        *self.deques[me].lock() = Some(local);
    }

    fn flush(&self, t: &PageTally) {
        if t.page != usize::MAX && t.objects > 0 {
            self.map.pages[t.page].live.add(t.objects, t.bytes);
        }
    }

    /// Processes `first`, then what it leads to, up to [`BATCH`] objects:
    /// the child an object marked last is processed next without a trip
    /// through the deque, the others are pushed for this worker or thieves.
    /// Counts the objects done in `done` (also when one fails).
    #[inline]
    fn drain(
        &self,
        first: ObjectReference,
        local: &Worker<ObjectReference>,
        tally: &mut PageTally,
        remembered: &mut Vec<B::Slot>,
        done: &mut u64,
    ) -> Result<(), GcError> {
        let mut next = Some(first);
        for _ in 0..BATCH {
            let Some(r) = next.take().or_else(|| local.pop()) else {
                return Ok(());
            };
            next = self.process(r, local, tally, remembered)?;
            *done += 1;
        }
        if let Some(r) = next {
            local.push(r);
        }
        Ok(())
    }

    /// The page of the marked object `r` and its size, checked against the
    /// room left in its page; records the object's last word in the live
    /// map.
    #[inline]
    fn size_and_end(&self, r: ObjectReference) -> Result<(usize, usize), GcError> {
        // Validated when it was marked.
        let Ok((pi, wi)) = self.map.locate(r) else {
            unreachable!("a marked object was located when it was marked")
        };
        let page = &self.map.pages[pi];
        let raw = self.binding.object_size(r);
        let size = raw.checked_add(7).map(|s| s & !7).unwrap_or(0);
        let room = page.top - r.get();
        if size == 0 || size > room {
            return Err(GcError::InvalidObjectSize {
                object: r,
                size: raw,
                room,
            });
        }
        page.live
            .set_end(if page.large { 0 } else { wi + size / 8 - 1 });
        Ok((pi, size))
    }

    /// Sizes and scans one marked object, marking what it references: the
    /// last newly marked child is returned, the others pushed.
    #[inline]
    fn process(
        &self,
        r: ObjectReference,
        local: &Worker<ObjectReference>,
        tally: &mut PageTally,
        remembered: &mut Vec<B::Slot>,
    ) -> Result<Option<ObjectReference>, GcError> {
        let map = self.map;
        let (pi, size) = self.size_and_end(r)?;
        if tally.page != pi {
            self.flush(tally);
            *tally = PageTally {
                page: pi,
                objects: 0,
                bytes: 0,
            };
        }
        tally.objects += 1;
        tally.bytes += size;
        let mut bad = None;
        let mut next: Option<ObjectReference> = None;
        let invalid = |t: ObjectReference, slot: &B::Slot, reason| GcError::InvalidReference {
            value: t.get(),
            slot: Some(slot.address()),
            holder: Some(r),
            reason,
        };
        self.binding.scan_object(r, &mut |slot: B::Slot| {
            let Some(t) = slot.load() else { return };
            let t = match self.policy.heal(&slot, t) {
                Ok(t) => t,
                Err(reason) => {
                    bad.get_or_insert(invalid(t, &slot, reason));
                    return;
                }
            };
            match map.locate(t) {
                Ok((tpi, twi)) => {
                    let target = &map.pages[tpi];
                    if target.young {
                        if P::REMEMBER_YOUNG_SLOTS {
                            remembered.push(slot);
                        }
                    } else if self.young_only {
                        return;
                    }
                    if target.live.mark(twi) {
                        if let Some(previous) = next.replace(t) {
                            local.push(previous);
                        }
                    }
                }
                Err(_) if self.in_new_page(t) => {}
                Err(reason) => {
                    bad.get_or_insert(invalid(t, &slot, reason));
                }
            }
        });
        match bad {
            Some(e) => {
                if let Some(t) = next {
                    local.push(t);
                }
                Err(e)
            }
            None => Ok(next),
        }
    }
}
