//! [`Heap`]: the VM's side of the hotmem heap, through its mutator:
//! allocation (and the collections the VM asks for before it, see
//! [`Pacing`]), the barriers' load and store paths, polls.

use hotmem::{AllocError, BarrierKind, BarrierSet, CollectorMode, Mutator, PinGuard, Runtime};
use std::collections::HashMap;

use super::super::error::HeapError;
use super::super::value::Value;
use super::barriers;
use super::slot::ValueSlot;
use crate::cli::GcMode;

/// Which collection `--gc-stress` runs next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum StressNext {
    Young,
    Full,
}

/// Who decides when to collect.
#[derive(Debug)]
enum Pacing {
    /// The VM, at every allocation, young and full in turn
    /// (`--gc-stress`).
    Stress(StressNext),
    /// The runtime: the stop-the-world collector collects when the heap's
    /// sizing says so (`HeapSizing::Balanced`, MemBalancer's rule: the VM's
    /// own policy, gone, was no faster and used more memory), and the
    /// concurrent one paces its cycles itself.
    Collector,
}

/// The mutator the VM allocates through, the barriers it takes (`B`, the
/// set its runtime's collector names), and how collections are driven.
pub(crate) struct Heap<B: BarrierSet> {
    me: Mutator,
    barriers: B,
    pacing: Pacing,
    /// What [`Heap::keep_in_place`] pinned, by address (the concurrent
    /// copy only).
    pins: HashMap<usize, PinGuard>,
}

impl<B: BarrierSet> Heap<B> {
    /// The heap through `me`, the calling thread's mutator, with
    /// `barriers`, its runtime's set; collections at every allocation if
    /// `gc` is [`GcMode::Stress`] and the collector stops the world.
    pub(crate) fn new(me: Mutator, gc: GcMode, barriers: B) -> Heap<B> {
        debug_assert_eq!(me.runtime().barrier_kind(), B::KIND, "the runtime's set");
        let collector = me.runtime().config().collector();
        let pacing = match collector {
            CollectorMode::StopTheWorld if gc == GcMode::Stress => {
                Pacing::Stress(StressNext::Young)
            }
            _ => Pacing::Collector,
        };
        Heap {
            me,
            barriers,
            pacing,
            pins: HashMap::new(),
        }
    }

    /// The barrier set the VM's code was compiled for.
    pub(crate) fn barrier_kind(&self) -> hotmem::BarrierKind {
        B::KIND
    }

    /// The mutator (to make shadow stacks, to poll).
    pub(crate) fn mutator(&self) -> &Mutator {
        &self.me
    }

    /// The mutator, to enter a native region.
    pub(crate) fn mutator_mut(&mut self) -> &mut Mutator {
        &mut self.me
    }

    /// The runtime.
    pub(crate) fn runtime(&self) -> &Runtime {
        self.me.runtime()
    }

    /// Allocates `bytes` (a multiple of 8) for a new object and returns its
    /// address. **May collect**: every object address held outside a root
    /// is stale afterwards, and the shadow stacks must be published
    /// before. The memory is not initialized.
    ///
    /// # Errors
    /// [`HeapError::OutOfMemory`] when the heap stays full after
    /// collecting; [`HeapError::Collector`] if a collection failed.
    #[inline(always)]
    pub(crate) fn alloc(&mut self, bytes: usize) -> Result<usize, HeapError> {
        match &mut self.pacing {
            Pacing::Stress(_) => self.stress_collect()?,
            Pacing::Collector => {}
        }
        match self.me.alloc(bytes) {
            Ok(addr) => Ok(addr.get()),
            Err(error) => Err(self.alloc_failed(bytes, error)),
        }
    }

    /// [`Heap::alloc`] for an object that the slots the VM reads without
    /// the load barrier ([`Heap::peek`]) may hold: a function, a string
    /// constant, a class, a class's methods' table. In the concurrent copy
    /// it is allocated in the runtime's non-moving space
    /// ([`Mutator::alloc_non_moving`]), old (a reference stored into it,
    /// even first, takes the store barrier), and never moves; in the
    /// stop-the-world copy, which has no load barrier to skip, as `alloc`.
    /// **May collect.**
    ///
    /// # Errors
    /// As [`Heap::alloc`].
    pub(crate) fn alloc_non_moving(&mut self, bytes: usize) -> Result<usize, HeapError> {
        if B::KIND == BarrierKind::StopTheWorld {
            return self.alloc(bytes);
        }
        match self.me.alloc_non_moving(bytes) {
            Ok(addr) => Ok(addr.get()),
            Err(error) => Err(self.alloc_failed(bytes, error)),
        }
    }

    #[cold]
    #[inline(never)]
    fn stress_collect(&mut self) -> Result<(), HeapError> {
        let Pacing::Stress(next) = &mut self.pacing else {
            return Ok(());
        };
        let result = match next {
            StressNext::Young => self.me.collect_young(),
            StressNext::Full => self.me.collect(),
        };
        *next = match next {
            StressNext::Young => StressNext::Full,
            StressNext::Full => StressNext::Young,
        };
        result.map(drop).map_err(HeapError::Collector)
    }

    #[cold]
    #[inline(never)]
    fn alloc_failed(&self, bytes: usize, error: AllocError) -> HeapError {
        match error {
            AllocError::OutOfMemory { max_capacity, .. } => HeapError::OutOfMemory {
                bytes,
                heap_max: max_capacity,
            },
            AllocError::Layout(_) => HeapError::OutOfMemory {
                bytes,
                heap_max: self.runtime().config().heap_max(),
            },
            other => HeapError::Allocator(other),
        }
    }

    /// Reads the value in `word`, a slot of a heap object: the VM's one
    /// load path for references (see `barriers`).
    ///
    /// # Safety
    /// `word` is a slot of a live object, read before the next call that
    /// may collect.
    #[inline(always)]
    pub(crate) unsafe fn load(&self, word: *mut u64) -> Value {
        // SAFETY: the caller's slot; `me` is the VM's mutator and
        // `barriers` the set its runtime handed out (`Heap::new`'s caller
        // got it from `Runtime::barrier_set`).
        unsafe { barriers::load(self.barriers, &self.me, word) }
    }

    /// Reads the value in `word`, a slot that holds a number, a literal
    /// or a reference to an object that never moves (allocated with
    /// [`Heap::alloc_non_moving`], or kept by [`Heap::keep_in_place`]),
    /// without the load barrier: such a reference is never stale. The
    /// slots the VM reads this way: a function's constants, a closure's
    /// function, a table's keys, an instance's class, a class's methods'
    /// table (see `loader`).
    ///
    /// # Safety
    /// As [`Heap::load`], and the slot holds nothing else (in the
    /// concurrent copy: the stop-the-world copy has no load barrier to
    /// skip).
    #[inline(always)]
    pub(crate) unsafe fn peek(&self, word: *mut u64) -> Value {
        // SAFETY: the caller's slot of a live object.
        let value = Value::from_bits(unsafe { ValueSlot::new(word) }.load_bits());
        debug_assert!(
            B::KIND == BarrierKind::StopTheWorld
                || !value.is_object()
                || !self.barriers.may_be_stale(&self.me, value.addr()),
            "a slot read without the load barrier holds a reference that may be stale \
             (its object is neither non-moving nor pinned)"
        );
        value
    }

    /// Makes sure `value`'s object (if it is one) never moves, so that the
    /// slots holding it may be read with [`Heap::peek`]: in the concurrent
    /// copy, an object outside the non-moving space (an interned string
    /// made before it became a constant, by an earlier line of the REPL
    /// say) is pinned for as long as the heap lives, once; its page then
    /// stays where it is, garbage and all (a page per such string at
    /// most: a script's own constants are all loaded before it runs, so
    /// only strings made by earlier scripts can be found). Nothing in the
    /// stop-the-world copy, whose loads have no barrier. `value` is valid
    /// now (read through the barrier, or just made).
    pub(crate) fn keep_in_place(&mut self, value: Value) {
        if B::KIND == BarrierKind::StopTheWorld {
            return;
        }
        let Some(obj) = value.as_object() else {
            return;
        };
        if self.pins.contains_key(&obj.get()) || self.runtime().is_non_moving(obj) {
            return;
        }
        // A pinned object keeps its address: the key stays right.
        self.pins.insert(obj.get(), self.me.pin(obj));
    }

    /// Writes `value` into `word`, a slot of a heap object: the VM's one
    /// store path for values (see `barriers`).
    ///
    /// # Safety
    /// As [`Heap::load`]; `value` is valid now.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, word: *mut u64, value: Value) {
        // SAFETY: the caller's slot and value; `me` is the VM's mutator and
        // `barriers` its runtime's set, as in `Heap::load`.
        unsafe { barriers::store(self.barriers, &self.me, word, value) }
    }

    /// A full collection now. **Collects**: publish the stacks first.
    ///
    /// # Errors
    /// The collector's.
    pub(crate) fn collect(&mut self) -> Result<hotmem::CollectStats, hotmem::GcError> {
        self.me.collect()
    }

    /// The safepoint poll: **may collect** (publish the stacks first).
    #[inline(always)]
    pub(crate) fn poll(&self) {
        self.me.poll();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hotmem::{
        BarrierKind, BarrierSet, CollectorMode, ConcurrentBarrierSet, Generations, Runtime,
        StopTheWorldBarriers,
    };

    use super::super::LoxBinding;
    use super::{Heap, Pacing};
    use crate::cli::GcMode;

    /// A small runtime with `collector`.
    fn runtime(collector: CollectorMode) -> Runtime {
        let generations = match collector {
            CollectorMode::StopTheWorld => Generations::YoungAndOld,
            _ => Generations::Single,
        };
        Runtime::builder()
            .binding(Arc::new(LoxBinding))
            .collector(collector)
            .generations(generations)
            .heap_max(16 << 20)
            .build()
            .unwrap()
    }

    /// A heap on `runtime` with its barrier set `B`, driven as `gc` says.
    fn heap<B: BarrierSet>(runtime: &Runtime, gc: GcMode) -> Heap<B> {
        let barriers = runtime.barrier_set::<B>().unwrap();
        Heap::new(runtime.attach_mutator().unwrap(), gc, barriers)
    }

    #[test]
    fn the_runtimes_collector_decides_the_barriers_and_who_collects() {
        let rt = runtime(CollectorMode::StopTheWorld);
        assert_eq!(rt.barrier_kind(), BarrierKind::StopTheWorld);
        assert!(rt.barrier_set::<ConcurrentBarrierSet>().is_err());
        let h = heap::<StopTheWorldBarriers>(&rt, GcMode::Normal);
        assert!(matches!(h.pacing, Pacing::Collector));
        drop(h);
        let h = heap::<StopTheWorldBarriers>(&rt, GcMode::Stress);
        assert!(matches!(h.pacing, Pacing::Stress(_)));
        // The command line's mode does not decide: the runtime's does.
        for gc in [
            GcMode::Normal,
            GcMode::Stress,
            GcMode::Concurrent,
            GcMode::ConcurrentGenerational,
            GcMode::ConcurrentGenerationalPaced,
        ] {
            let rt = runtime(CollectorMode::Concurrent);
            assert_eq!(rt.barrier_kind(), BarrierKind::Concurrent);
            assert!(rt.barrier_set::<StopTheWorldBarriers>().is_err());
            let h = heap::<ConcurrentBarrierSet>(&rt, gc);
            assert!(matches!(h.pacing, Pacing::Collector));
        }
    }
}
