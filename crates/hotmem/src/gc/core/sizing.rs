//! Heap sizing: when the next collection runs, so that a small program has
//! a small heap and a large one grows with its live set.
//!
//! The mutators take their pages through [`BudgetedPages`], which refuses a
//! page once the mutators have allocated the budget the policy gave them
//! since the last collection: the refusal looks like a full heap, so the
//! allocation path collects and retries as it does at the maximum. After
//! each collection [`Sizing::collected`] sets the next budget.
//! [`HeapSizing::Balanced`] sets the target and the young generation from
//! the rates (MemBalancer's rule, see [`mem_balancer`](super::mem_balancer)).
//! With [`HeapSizing::Adaptive`], the default:
//! - the heap's **target** is what survived the last full collection times
//!   the growth factor (clox's 2x), at least the initial size, at most the
//!   maximum; and while collections take more than
//!   [`AdaptiveSizing::gc_time_percent`] of the time, it grows by the
//!   growth factor after each one (G1 expands its heap on the same signal,
//!   its `GCTimeRatio`), so a program that allocates fast gets the room it
//!   needs;
//! - without generations, mutators may allocate up to the target;
//! - with generations, each young collection gives the young generation
//!   the room left below the target, within the young bounds, and the
//!   next collection is full once what survives reaches the target.
//!
//! With a soft maximum ([`soft_max`](super::soft_max)) the target stays
//! below it while collections take at most the time limit's share.
//!
//! Memory the heap no longer uses goes back to the OS after the uncommit
//! delay ([`RuntimeBuilder::uncommit_delay`](crate::RuntimeBuilder::uncommit_delay)),
//! also while no collection runs ([`uncommitter`](super::uncommitter)).

use super::generations::CollectionKind;
use super::mem_balancer::{BalancedSizing, Balancer, Cost};
use super::meta::NewPages;
use super::pacing::{CycleEnd, Pacing};
use super::soft_max::{HeapTarget, SoftMax};
use hotmem_page::{AllocPageError, NodeId, OwnedPage, Page, PageAllocator, PageRequest};
use hotmem_page::{PageSizes, PageSource, RejectedPage};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// When collections run and how far the heap grows between them.
///
/// ```
/// use hotmem::{AdaptiveSizing, HeapSizing, Runtime};
/// let rt = Runtime::builder()
///     .heap_sizing(HeapSizing::Adaptive(AdaptiveSizing {
///         initial: 4 << 20,
///         ..AdaptiveSizing::default()
///     }))
///     .build()?;
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum HeapSizing {
    /// Start small and grow with the live set: twice what survives, and
    /// by the square of that factor while collections take more than a
    /// share of the time (the default). It favours time: against
    /// [`HeapSizing::Balanced`] (with its first defaults, an 8 MiB start
    /// and `lambda` = 256 MiB), binary_trees (depth 20, 256 MiB) ran
    /// 0.90x the time in 1.44x the peak RSS, and the Lox VM's
    /// binary_trees.lox the same time in 3x the peak RSS.
    Adaptive(AdaptiveSizing),
    /// Collect only when the heap's maximum is exhausted: every program's
    /// heap grows to the maximum before its first collection (the policy
    /// before sizing existed; kept to compare with).
    Maximum,
    /// The headroom above the live set, and the young generation, from
    /// the allocation rate and the collections' lengths, as MemBalancer
    /// sets heap limits (see [`BalancedSizing`]). What the Lox VM runs
    /// on.
    Balanced(BalancedSizing),
}

impl Default for HeapSizing {
    fn default() -> Self {
        HeapSizing::Adaptive(AdaptiveSizing::default())
    }
}

/// The bounds and the growth of [`HeapSizing::Adaptive`], in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveSizing {
    /// The heap a runtime starts with: the first collection runs once the
    /// mutators have allocated this much. Default 8 MiB.
    pub initial: usize,
    /// After a full collection the heap may grow to this many times what
    /// survived before the next full one. Default 2.0 (clox's factor).
    pub growth: f64,
    /// The least a young generation gets between two young collections.
    /// Default 4 MiB.
    pub young_min: usize,
    /// The most a young generation gets (a bound for a young generation
    /// that should fit the caches). Default: no bound, all the room below
    /// the target: on binary-trees (depth 20, 256 MiB, this project's
    /// 2-core VM) a 16 MiB or 64 MiB bound left the mutators' time as it
    /// was and tripled the collections' (`binary_trees --young-max`).
    pub young_max: usize,
    /// While collections take more than this share of the time (in
    /// percent, measured since the target last changed), the target grows
    /// after each collection. Default 5.
    pub gc_time_percent: f64,
}

impl Default for AdaptiveSizing {
    fn default() -> Self {
        AdaptiveSizing {
            initial: 8 << 20,
            growth: 2.0,
            young_min: 4 << 20,
            young_max: usize::MAX,
            gc_time_percent: 5.0,
        }
    }
}

impl HeapSizing {
    /// Checks the setting.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            HeapSizing::Maximum => Ok(()),
            HeapSizing::Adaptive(a) if !(a.growth >= 1.0 && a.growth.is_finite()) => Err(format!(
                "heap growth factor {} is not a finite number of at least 1",
                a.growth
            )),
            HeapSizing::Adaptive(a) if a.young_min > a.young_max => Err(format!(
                "young generation minimum {} exceeds its maximum {}",
                a.young_min, a.young_max
            )),
            HeapSizing::Adaptive(a) if !(a.gc_time_percent > 0.0 && a.gc_time_percent <= 100.0) => {
                Err(format!(
                    "GC time target {}% is not in (0, 100]",
                    a.gc_time_percent
                ))
            }
            HeapSizing::Adaptive(a) if a.initial == 0 || a.young_min == 0 => {
                Err("the initial heap and the young minimum must be positive".into())
            }
            HeapSizing::Adaptive(_) => Ok(()),
            HeapSizing::Balanced(b) => b.validate(),
        }
    }
}

/// The mutators' page source: the heap, less the pages the sizing policy
/// has not granted yet.
pub(crate) struct BudgetedPages {
    heap: Arc<PageAllocator>,
    /// With the concurrent collector: where pages allocated during marking
    /// are recorded (their objects are live).
    new_pages: Option<Arc<NewPages>>,
    /// The heap's maximum: a page larger than it is the heap's to refuse
    /// (a bad size), not the budget's.
    heap_max: usize,
    /// Bytes of pages the mutators may still take before the next
    /// collection; a page that does not fit is refused as if the heap were
    /// full.
    budget: AtomicIsize,
    /// Bytes of pages the mutators took since the sizing last asked
    /// ([`BudgetedPages::take_allocated`]).
    allocated: AtomicIsize,
    /// Bytes of pages the mutators took since the heap was made (less
    /// those given back undone): what a cycle's mutators took is the
    /// difference of two readings.
    taken: AtomicU64,
    /// Bytes of the heap the mutators leave free for the collector's
    /// relocation targets (see [`BudgetedPages::new`]).
    reserve: usize,
}

impl BudgetedPages {
    /// Pages for the mutators from `heap` (of at most `heap_max` bytes),
    /// `budget` bytes of them before the first collection, leaving
    /// `reserve` bytes of the heap to the collector: a collector that
    /// relocates while the mutators run needs free pages to copy into,
    /// and a mutator that took the last of them would leave the next
    /// cycle's evacuation incomplete (its pages stay, for want of
    /// targets), and the next one's, while each cycle's freed page goes
    /// to targets again (ZGC keeps a relocation reserve for the same
    /// reason). A mutator stalls at the reserve instead, and the cycle
    /// copies into it.
    pub(crate) fn new(
        heap: Arc<PageAllocator>,
        heap_max: usize,
        budget: usize,
        new_pages: Option<Arc<NewPages>>,
        reserve: usize,
    ) -> BudgetedPages {
        BudgetedPages {
            heap,
            new_pages,
            heap_max,
            budget: AtomicIsize::new(to_isize(budget)),
            allocated: AtomicIsize::new(0),
            taken: AtomicU64::new(0),
            reserve,
        }
    }

    /// Bytes of pages the mutators took since the heap was made.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Bytes of pages the mutators took since the last call.
    pub(crate) fn take_allocated(&self) -> usize {
        usize::try_from(self.allocated.swap(0, Ordering::Relaxed)).unwrap_or(0)
    }

    /// Sets the budget until the next collection.
    pub(crate) fn set(&self, bytes: usize) {
        self.budget.store(to_isize(bytes), Ordering::Relaxed);
    }

    /// Bytes of pages the mutators may still take before the next
    /// collection (0 when overdrawn).
    pub(crate) fn remaining(&self) -> usize {
        usize::try_from(self.budget.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Adds `bytes` to the budget: after a collection, an allocation that
    /// the new budget still refuses (one larger than it) gets its room, as
    /// long as the heap has it.
    pub(crate) fn grant(&self, bytes: usize) {
        self.budget.fetch_add(to_isize(bytes), Ordering::Relaxed);
    }

    /// Bytes of the heap the mutators may still take pages of, whatever
    /// the budget says: the heap's free bytes less the collector's
    /// relocation reserve.
    pub(crate) fn room(&self) -> usize {
        (self.heap_max)
            .saturating_sub(self.heap.used_bytes())
            .saturating_sub(self.reserve)
    }

    fn refund(&self, bytes: usize) {
        self.budget.fetch_add(to_isize(bytes), Ordering::Relaxed);
    }
}

fn to_isize(bytes: usize) -> isize {
    isize::try_from(bytes).unwrap_or(isize::MAX)
}

impl PageSource for BudgetedPages {
    fn page_sizes(&self) -> PageSizes {
        self.heap.page_sizes()
    }

    fn nodes(&self) -> &[NodeId] {
        self.heap.nodes()
    }

    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError> {
        let size = to_isize(request.size);
        if request.size > self.heap_max {
            return self.heap.alloc_page(request);
        }
        // The reserve is checked before the page is taken: mutators racing
        // here may take a little of it, which only delays their stall.
        let into_reserve = self.reserve > 0
            && (self.heap.used_bytes())
                .saturating_add(request.size)
                .saturating_add(self.reserve)
                > self.heap_max;
        if into_reserve || self.budget.fetch_sub(size, Ordering::Relaxed) < size {
            if !into_reserve {
                self.refund(request.size);
            }
            return Err(AllocPageError::HeapExhausted {
                page_type: request.page_type,
                size: request.size,
                node: request.node,
            });
        }
        let page = self
            .heap
            .alloc_page(request)
            .inspect_err(|_| self.refund(request.size))?;
        if let Some(n) = &self.new_pages {
            n.allocated(page.range().start().get(), page.size());
        }
        self.allocated.fetch_add(size, Ordering::Relaxed);
        self.taken.fetch_add(request.size as u64, Ordering::Relaxed);
        Ok(page)
    }

    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        let size = page.size();
        self.heap.undo_alloc_page(page)?;
        self.refund(size);
        self.allocated.fetch_sub(to_isize(size), Ordering::Relaxed);
        self.taken.fetch_sub(size as u64, Ordering::Relaxed);
        Ok(())
    }

    fn page_installed(&self, page: &Page) {
        self.heap.page_installed(page)
    }
}

/// The policy's state between collections.
pub(crate) struct Sizing {
    policy: HeapSizing,
    heap_max: usize,
    /// The heap's target: what survived the last full collection times the
    /// growth factor, within the bounds.
    target: AtomicUsize,
    /// Pause time and wall time since the target last changed.
    window: Mutex<Window>,
    /// With the concurrent collector: when the next cycle starts.
    pacing: Pacing,
    /// With [`HeapSizing::Balanced`]: the rates it sizes from.
    balancer: Option<Mutex<Balancer>>,
    /// The soft maximum, if the runtime has one.
    soft: Option<SoftMax>,
}

/// Collection time over a stretch of wall time.
struct Window {
    since: Instant,
    pause_ns: u64,
}

impl Sizing {
    pub(crate) fn new(policy: HeapSizing, heap_max: usize, soft: Option<SoftMax>) -> Sizing {
        let target = match policy {
            HeapSizing::Adaptive(a) => a.initial.min(heap_max),
            HeapSizing::Balanced(b) => b.initial.min(heap_max),
            HeapSizing::Maximum => heap_max,
        };
        let target = soft.as_ref().map_or(target, |s| target.min(s.bytes()));
        let balancer = match policy {
            HeapSizing::Balanced(b) => Some(Mutex::new(Balancer::new(b, Instant::now()))),
            _ => None,
        };
        Sizing {
            policy,
            heap_max,
            target: AtomicUsize::new(target),
            window: Mutex::new(Window {
                since: Instant::now(),
                pause_ns: 0,
            }),
            pacing: Pacing::new(target / 2),
            balancer,
            soft,
        }
    }

    /// The target, the soft maximum and how often it was set aside.
    pub(crate) fn heap_target(&self) -> HeapTarget {
        HeapTarget {
            bytes: self.target(),
            soft_max: self.soft.as_ref().map(SoftMax::bytes),
            over_soft_max: self.soft.as_ref().map_or(0, SoftMax::times_over),
        }
    }

    /// The least budget the policy gives the mutators.
    fn young_min(&self) -> usize {
        match self.policy {
            HeapSizing::Adaptive(a) => a.young_min,
            HeapSizing::Balanced(b) => b.young_min,
            HeapSizing::Maximum => AdaptiveSizing::default().young_min,
        }
    }

    /// With the concurrent collector: whether a cycle should start now,
    /// with `remaining` bytes of budget left.
    #[inline]
    pub(crate) fn should_start_cycle(&self, remaining: usize) -> bool {
        self.pacing.should_start(remaining)
    }

    /// Bytes of pages taken during the last concurrent cycle of `kind`,
    /// if one ran.
    pub(crate) fn taken_during(&self, kind: CollectionKind) -> Option<u64> {
        self.pacing.taken_during(kind)
    }

    /// After a concurrent cycle of kind `ran` during which `allocated`
    /// bytes of pages were taken (the allocation rate times the cycle's
    /// length), granting the mutators `budget`, with `next` the kind of
    /// the next cycle (`None`: one generation): the next cycle starts
    /// early enough for the mutators to allocate what they did during the
    /// last cycle of that kind and half again (see [`pacing`](super::pacing)),
    /// and at least a quarter of the target before the budget runs out;
    /// with two generations, no more than half the budget (the young
    /// generation's size: under balanced sizing a quarter of the target
    /// was more than all of it, and young cycles ran back to back, each
    /// freeing 2 MiB).
    pub(crate) fn concurrent_cycle(
        &self,
        ran: CollectionKind,
        allocated: u64,
        budget: usize,
        next: Option<CollectionKind>,
    ) {
        let floor = match next {
            Some(_) => (self.target() / 4).min(budget / 2),
            None => self.target() / 4,
        };
        self.pacing.cycle_ended(CycleEnd {
            ran,
            allocated,
            next: next.unwrap_or(CollectionKind::Full),
            floor,
        });
    }

    /// Whether collections took more than `percent` of the time since the
    /// target last changed, counting one more of `pause_ns` that ended at
    /// `now`.
    fn gc_time_over(&self, percent: f64, pause_ns: u64, now: Instant) -> bool {
        let mut w = self.window.lock();
        w.pause_ns += pause_ns;
        let wall = now.duration_since(w.since).as_nanos().max(1) as f64;
        w.pause_ns as f64 * 100.0 > percent * wall
    }

    /// Starts a new window: the target changed at `now`.
    fn restart_window(&self, now: Instant) {
        *self.window.lock() = Window {
            since: now,
            pause_ns: 0,
        };
    }

    /// The budget the mutators start with.
    pub(crate) fn initial_budget(&self) -> usize {
        match self.policy {
            HeapSizing::Adaptive(_) | HeapSizing::Balanced(_) => {
                self.target.load(Ordering::Relaxed)
            }
            HeapSizing::Maximum if self.soft.is_some() => self.target(),
            HeapSizing::Maximum => usize::MAX,
        }
    }

    /// The heap's target now.
    pub(crate) fn target(&self) -> usize {
        self.target.load(Ordering::Relaxed)
    }

    /// After a collection of `kind` that left `used` bytes in use: the new
    /// target (after a full collection, or when collections take too much
    /// of the time), the mutators' next budget, and the use at which a
    /// generational runtime's next collection is full.
    #[cfg(test)]
    pub(crate) fn collected(&self, kind: CollectionKind, used: usize, generational: bool) -> Next {
        self.collected_at(kind, used, generational, Cost::paused(0), 0, Instant::now())
    }

    /// [`Sizing::collected`] for a collection that cost `cost` and ended
    /// at `now`, the mutators having taken `allocated` bytes of pages since
    /// the last one ended.
    pub(crate) fn collected_at(
        &self,
        kind: CollectionKind,
        used: usize,
        generational: bool,
        cost: Cost,
        allocated: usize,
        now: Instant,
    ) -> Next {
        let next = self.policy_next(kind, used, generational, cost, allocated, now);
        match &self.soft {
            Some(soft) if soft.holds_after(cost.machine_ns, now) => {
                self.within_soft_max(soft.bytes(), next, used, now)
            }
            _ => next,
        }
    }

    /// `next` kept under the soft maximum `soft`: the target no higher,
    /// the budget no more than the room below it (at least the young
    /// minimum, so that the mutators go on and the time limit can set the
    /// soft maximum aside if the live set does not fit), full collections
    /// once what survives reaches it.
    fn within_soft_max(&self, soft: usize, next: Next, used: usize, now: Instant) -> Next {
        if self.target() > soft {
            self.target.store(soft, Ordering::Relaxed);
            self.restart_window(now);
        }
        let room = soft.saturating_sub(used).max(self.young_min());
        Next {
            budget: next.budget.min(room),
            full_at: next.full_at.min(soft),
        }
    }

    /// What the sizing policy decides, before the soft maximum.
    fn policy_next(
        &self,
        kind: CollectionKind,
        used: usize,
        generational: bool,
        cost: Cost,
        allocated: usize,
        now: Instant,
    ) -> Next {
        // Adaptive sizing's share of time in collections counts a
        // concurrent cycle's whole length, as it did before costs had two
        // figures.
        let pause_ns = cost.length_ns;
        let a = match self.policy {
            HeapSizing::Adaptive(a) => a,
            HeapSizing::Balanced(b) => {
                return self.balanced(b, kind, used, generational, cost, allocated, now);
            }
            HeapSizing::Maximum => {
                return Next {
                    budget: usize::MAX,
                    full_at: self.heap_max / 2,
                };
            }
        };
        let floor = a.initial.min(self.heap_max);
        let old = self.target();
        let mut target = old;
        if kind == CollectionKind::Full || !generational {
            // What the live set asks for: the target may shrink too.
            target = ((used as f64 * a.growth) as usize).clamp(floor, self.heap_max);
        }
        if self.gc_time_over(a.gc_time_percent, pause_ns, now) {
            // Collections cost too much: grow fast (by the square of the
            // factor), and never shrink meanwhile.
            let grown = ((old as f64 * a.growth * a.growth) as usize).min(self.heap_max);
            target = target.max(grown);
        }
        if target != old {
            self.target.store(target, Ordering::Relaxed);
            self.restart_window(now);
        }
        let target = self.target();
        let room = self.heap_max.saturating_sub(used);
        let below_target = target.saturating_sub(used);
        let budget = if generational {
            below_target.clamp(a.young_min, a.young_max)
        } else {
            below_target.max(a.young_min)
        };
        Next {
            budget: budget.min(room),
            full_at: target,
        }
    }
}

impl Sizing {
    /// [`Sizing::collected_at`] with [`HeapSizing::Balanced`]: after a
    /// full collection (every one without generations) the target is what
    /// survived plus a full collection's headroom; the mutators' budget is
    /// a young collection's headroom (within the young bounds and below the
    /// target) with generations, the room below the target without.
    #[allow(clippy::too_many_arguments)]
    fn balanced(
        &self,
        b: BalancedSizing,
        kind: CollectionKind,
        used: usize,
        generational: bool,
        cost: Cost,
        allocated: usize,
        now: Instant,
    ) -> Next {
        let balancer = self.balancer.as_ref().expect("made with the policy");
        let mut balancer = balancer.lock();
        balancer.observe(kind, cost, allocated, now);
        let floor = b.initial.min(self.heap_max);
        if kind == CollectionKind::Full || !generational {
            let full = balancer.headroom(CollectionKind::Full);
            let target = used.saturating_add(full).clamp(floor, self.heap_max);
            self.target.store(target, Ordering::Relaxed);
        }
        let target = self.target();
        let below_target = target.saturating_sub(used).max(b.young_min);
        let young = balancer
            .headroom(CollectionKind::Young)
            .clamp(b.young_min, b.young_max);
        let budget = match generational {
            true => young.min(below_target),
            false => below_target,
        };
        // A young collection that leaves less room below the target than
        // the young generation's headroom, before any full collection
        // sized the target (it is still the initial size), makes the next
        // one full. Otherwise a live set that fills the initial size
        // without growing kept the young generation at its minimum and
        // never reached a full collection: the Lox VM's methods.lox ran
        // 2442 young cycles of 2 MiB each in 2 s, or 28 cycles in a heap
        // sized by a full one, depending on when its first full ran.
        let squeezed = generational
            && kind == CollectionKind::Young
            && !balancer.seen_full()
            && young > below_target;
        let room = self.heap_max.saturating_sub(used);
        Next {
            budget: budget.min(room),
            full_at: if squeezed { used } else { target },
        }
    }
}

/// What the policy decided after a collection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Next {
    /// Bytes of pages the mutators may take before the next collection.
    pub(crate) budget: usize,
    /// A generational runtime's next collection is full once this much of
    /// the heap is in use after a young one.
    pub(crate) full_at: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::core::mem_balancer::BalancedSizing;
    use crate::gc::core::soft_max::SoftMax;

    const MIB: usize = 1 << 20;

    /// The mutators stop one small page short of the heap's maximum, and
    /// the room they are told of after a cycle is what they may take: a
    /// stalled allocation that finds only the reserve free must ask for a
    /// full cycle, not read the reserve as room.
    #[test]
    fn the_mutators_room_leaves_the_relocation_reserve() {
        let memory = hotmem_os::Memory::new();
        let config = hotmem_page::HeapConfig::new(8 * MIB);
        let heap = Arc::new(PageAllocator::new(&memory, config).unwrap());
        let small = heap.page_sizes().small_page();
        let pages = BudgetedPages::new(heap.clone(), 8 * MIB, 8 * MIB, None, small);
        assert_eq!(pages.room(), 8 * MIB - small);
        let request = PageRequest::small(&heap.page_sizes(), hotmem_page::Age::EDEN, NodeId::ZERO);
        let mut taken = Vec::new();
        while let Ok(page) = pages.alloc_page(request) {
            taken.push(page);
        }
        assert_eq!(taken.len() * small, 8 * MIB - small, "all but the reserve");
        assert_eq!(pages.room(), 0);
        assert!(
            pages.remaining() > 0,
            "refused at the reserve, not the budget"
        );
        // The collector's targets come from the heap itself: the reserve.
        taken.push(heap.alloc_page(request).expect("the reserve"));
        assert_eq!(pages.room(), 0);
        for page in taken {
            heap.free_page(page).unwrap();
        }
        assert_eq!(pages.room(), 8 * MIB - small);
    }

    #[test]
    fn the_target_follows_the_live_set_within_its_bounds() {
        let s = Sizing::new(HeapSizing::default(), 256 * MIB, None);
        assert_eq!(s.initial_budget(), 8 * MIB);
        // A small live set: the initial size stays the floor.
        let next = s.collected(CollectionKind::Full, MIB, false);
        assert_eq!((s.target(), next.budget), (8 * MIB, 7 * MIB));
        // 50 MiB survive: the heap may reach 100 MiB.
        let next = s.collected(CollectionKind::Full, 50 * MIB, false);
        assert_eq!((s.target(), next.budget), (100 * MIB, 50 * MIB));
        // Near the maximum: the budget is what the heap has left, at least
        // the young minimum below it.
        let next = s.collected(CollectionKind::Full, 250 * MIB, false);
        assert_eq!((s.target(), next.budget), (256 * MIB, 6 * MIB));
    }

    #[test]
    fn young_collections_keep_the_target_and_bound_the_young_generation() {
        let bounded = AdaptiveSizing {
            young_max: 64 * MIB,
            ..AdaptiveSizing::default()
        };
        let s = Sizing::new(HeapSizing::Adaptive(bounded), 1024 * MIB, None);
        s.collected(CollectionKind::Full, 100 * MIB, true);
        assert_eq!(s.target(), 200 * MIB);
        let next = s.collected(CollectionKind::Young, 110 * MIB, true);
        assert_eq!(
            next,
            Next {
                budget: 64 * MIB,
                full_at: 200 * MIB
            }
        );
        let next = s.collected(CollectionKind::Young, 198 * MIB, true);
        assert_eq!(next.budget, 4 * MIB, "at least the young minimum");
        assert_eq!(s.target(), 200 * MIB, "young collections do not move it");
    }

    #[test]
    fn the_target_grows_while_collections_take_too_much_of_the_time() {
        let s = Sizing::new(HeapSizing::default(), 1024 * MIB, None);
        let t0 = Instant::now();
        s.restart_window(t0);
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        // 1 ms of pause in 100 ms: 1%, the target stays at its floor.
        s.collected_at(
            CollectionKind::Young,
            MIB,
            true,
            Cost::paused(1_000_000),
            0,
            at(100),
        );
        assert_eq!(s.target(), 8 * MIB);
        // 10 ms more in the next 10 ms: 11 of 110 ms, 10%: it grows by the
        // square of the factor.
        s.collected_at(
            CollectionKind::Young,
            MIB,
            true,
            Cost::paused(10_000_000),
            0,
            at(110),
        );
        assert_eq!(s.target(), 32 * MIB);
        // A new window: 1 of 100 ms does not grow it again.
        s.collected_at(
            CollectionKind::Young,
            MIB,
            true,
            Cost::paused(1_000_000),
            0,
            at(210),
        );
        assert_eq!(s.target(), 32 * MIB);
    }

    #[test]
    fn balanced_sizing_puts_the_headroom_over_the_live_set_and_sizes_the_young_generation() {
        let s = Sizing::new(
            HeapSizing::Balanced(BalancedSizing::for_tests()),
            1024 * MIB,
            None,
        );
        assert_eq!(s.initial_budget(), 8 * MIB);
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        // A first full collection of 4 ms, whose length is not a sample,
        // after 16 MiB allocated in 16 ms (the same rate as below).
        let first = |s: &Sizing, generational| {
            let cost = Cost::paused(4_000_000);
            s.collected_at(
                CollectionKind::Full,
                50 * MIB,
                generational,
                cost,
                16 * MIB,
                at(20),
            )
        };
        first(&s, true);
        // A full collection of 20 ms after 80 MiB allocated in 80 ms of
        // mutator time: 100 MiB survive, the headroom is
        // sqrt(256 MiB * 1 MiB/ms * 20 ms) = 71.6 MiB.
        let next = s.collected_at(
            CollectionKind::Full,
            100 * MIB,
            true,
            Cost::paused(20_000_000),
            80 * MIB,
            at(120),
        );
        let target = s.target() as f64 / MIB as f64;
        assert!((target - 171.6).abs() < 1.0, "{target}");
        // No young collection seen yet: the young generation from the
        // full one's length, below the target.
        assert_eq!(next.full_at, s.target());
        assert!(next.budget <= s.target() - 100 * MIB, "{}", next.budget);
        // Young collections of 1 ms at the same rate: the young
        // generation shrinks towards sqrt(256 MiB * 1 MiB/ms * 1 ms) = 16 MiB.
        let mut now = 120;
        let mut next = next;
        for _ in 0..8 {
            now += 17;
            next = s.collected_at(
                CollectionKind::Young,
                110 * MIB,
                true,
                Cost::paused(1_000_000),
                16 * MIB,
                at(now),
            );
        }
        let young = next.budget as f64 / MIB as f64;
        assert!((young - 16.0).abs() < 1.5, "{young}");
        assert!(
            (s.target() as f64 / MIB as f64 - 171.6).abs() < 1.0,
            "young ones keep the target"
        );
        // Without generations: the budget is the room below the target.
        let single = Sizing::new(
            HeapSizing::Balanced(BalancedSizing::for_tests()),
            1024 * MIB,
            None,
        );
        first(&single, false);
        let next = single.collected_at(
            CollectionKind::Full,
            100 * MIB,
            false,
            Cost::paused(20_000_000),
            80 * MIB,
            at(120),
        );
        assert_eq!(next.budget, single.target() - 100 * MIB);
    }

    #[test]
    fn a_young_generation_squeezed_by_the_initial_size_asks_for_a_full_collection() {
        let s = Sizing::new(
            HeapSizing::Balanced(BalancedSizing::for_tests()),
            1024 * MIB,
            None,
        );
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        // 7 MiB survive a young collection in the initial 8 MiB: 1 MiB of
        // room, less than the young generation's headroom. No full
        // collection sized the target yet: the next one is full.
        let next = s.collected_at(
            CollectionKind::Young,
            7 * MIB,
            true,
            Cost::paused(1_000_000),
            8 * MIB,
            at(10),
        );
        assert_eq!(s.target(), 8 * MIB);
        assert!(next.full_at <= 7 * MIB, "{next:?}");
        // The full one sizes the target from what survived; a young one
        // squeezed after it keeps the full one's verdict.
        s.collected_at(
            CollectionKind::Full,
            7 * MIB,
            true,
            Cost::paused(1_000_000),
            2 * MIB,
            at(20),
        );
        let target = s.target();
        let next = s.collected_at(
            CollectionKind::Young,
            target - MIB,
            true,
            Cost::paused(1_000_000),
            8 * MIB,
            at(30),
        );
        assert_eq!(next.full_at, target);
    }

    #[test]
    fn the_maximum_policy_never_limits() {
        let s = Sizing::new(HeapSizing::Maximum, 64 * MIB, None);
        assert_eq!(s.initial_budget(), usize::MAX);
        let next = s.collected(CollectionKind::Young, 60 * MIB, true);
        assert_eq!(
            next,
            Next {
                budget: usize::MAX,
                full_at: 32 * MIB
            }
        );
    }

    #[test]
    fn bad_settings_are_refused() {
        let bad = |a: AdaptiveSizing| HeapSizing::Adaptive(a).validate().is_err();
        let d = AdaptiveSizing::default();
        assert!(bad(AdaptiveSizing { growth: 0.5, ..d }));
        assert!(bad(AdaptiveSizing {
            growth: f64::NAN,
            ..d
        }));
        assert!(bad(AdaptiveSizing {
            young_min: 128 * MIB,
            young_max: 64 * MIB,
            ..d
        }));
        assert!(bad(AdaptiveSizing { initial: 0, ..d }));
        assert!(HeapSizing::default().validate().is_ok());
    }

    #[test]
    fn a_generational_concurrent_cycle_starts_within_half_the_young_budget() {
        let s = Sizing::new(HeapSizing::Maximum, 256 * MIB, None);
        let target = s.target();
        // Single generation: a quarter of the target, or what the mutators
        // took during the cycle and half again.
        s.concurrent_cycle(CollectionKind::Full, 0, 16 * MIB, None);
        assert!(!s.should_start_cycle(target / 4 + 1));
        assert!(s.should_start_cycle(target / 4));
        // Two generations and a young budget smaller than a quarter of the
        // target: the cycle starts with half the budget left, not at once.
        s.concurrent_cycle(
            CollectionKind::Young,
            0,
            16 * MIB,
            Some(CollectionKind::Young),
        );
        assert!(!s.should_start_cycle(8 * MIB + 1));
        assert!(s.should_start_cycle(8 * MIB));
        // A fast allocator still gets what it took last time and half.
        let young = Some(CollectionKind::Young);
        s.concurrent_cycle(CollectionKind::Young, 12 * MIB as u64, 16 * MIB, young);
        assert!(s.should_start_cycle(18 * MIB));
        assert!(!s.should_start_cycle(18 * MIB + 1));
    }

    #[test]
    fn a_soft_maximum_holds_until_collections_take_more_than_the_limit() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let soft = SoftMax::new(64 * MIB, 50.0, t0);
        let s = Sizing::new(HeapSizing::default(), 1024 * MIB, Some(soft));
        let full = |used, cost_ms: u64, end| {
            let cost = Cost::paused(cost_ms * 1_000_000);
            s.collected_at(CollectionKind::Full, used, false, cost, 0, end)
        };
        // 50 MiB survive: the policy's 100 MiB is held to 64.
        let next = full(50 * MIB, 1, at(1_000));
        assert_eq!((s.target(), next.budget), (64 * MIB, 14 * MIB));
        // 100 MiB survive, more than the soft maximum: the mutators get the
        // young minimum, and collections come back to back.
        let next = full(100 * MIB, 5, at(1_010));
        assert_eq!((s.target(), next.budget), (64 * MIB, 4 * MIB));
        assert_eq!(s.heap_target().over_soft_max, 0);
        // Once they take more than half of the last second, the soft
        // maximum is set aside: the policy sizes from the live set.
        let mut end = 1_010;
        let mut next = next;
        while s.heap_target().over_soft_max == 0 {
            end += 2;
            next = full(100 * MIB, 2, at(end));
            assert!(end < 3_000, "the limit never set it aside");
        }
        assert!(s.target() > 64 * MIB && next.budget > 4 * MIB, "{next:?}");
        assert_eq!(s.heap_target().soft_max, Some(64 * MIB));
        // A quiet second later the soft maximum holds again.
        let next = full(60 * MIB, 1, at(end + 2_000));
        assert_eq!((s.target(), next.budget), (64 * MIB, 4 * MIB));
        assert_eq!(next.full_at, 64 * MIB);
    }

    #[test]
    fn with_the_maximum_policy_a_soft_maximum_is_where_collections_start() {
        let t0 = Instant::now();
        let soft = SoftMax::new(32 * MIB, 50.0, t0);
        let s = Sizing::new(HeapSizing::Maximum, 256 * MIB, Some(soft));
        assert_eq!(s.initial_budget(), 32 * MIB);
        let end = t0 + std::time::Duration::from_secs(1);
        let next = s.collected_at(
            CollectionKind::Full,
            10 * MIB,
            false,
            Cost::paused(1),
            0,
            end,
        );
        assert_eq!(next.budget, 22 * MIB);
    }
}
