//! [`Heap`]: the VM's side of the hotmem heap, through its mutator:
//! allocation (and the collections the VM asks for before it, see
//! [`Pacing`]), the barriers' load and store paths, polls.

use hotmem::{AllocError, CollectorMode, Mutator, Runtime};

use super::super::error::HeapError;
use super::super::value::Value;
use super::barriers::BarrierMode;
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

/// The mutator the VM allocates through, the barriers it takes, and how
/// collections are driven.
pub(crate) struct Heap {
    me: Mutator,
    barriers: BarrierMode,
    pacing: Pacing,
}

impl Heap {
    /// The heap through `me`, the calling thread's mutator: the barriers
    /// the runtime's collector needs; collections at every allocation if
    /// `gc` is [`GcMode::Stress`] and the collector stops the world.
    pub(crate) fn new(me: Mutator, gc: GcMode) -> Heap {
        let collector = me.runtime().config().collector();
        let pacing = match collector {
            CollectorMode::StopTheWorld if gc == GcMode::Stress => {
                Pacing::Stress(StressNext::Young)
            }
            _ => Pacing::Collector,
        };
        Heap {
            me,
            barriers: BarrierMode::of(collector),
            pacing,
        }
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
        // SAFETY: the caller's slot; `me` is the VM's mutator.
        unsafe { self.barriers.load(&self.me, word) }
    }

    /// Writes `value` into `word`, a slot of a heap object: the VM's one
    /// store path for values (see `barriers`).
    ///
    /// # Safety
    /// As [`Heap::load`]; `value` is valid now.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, word: *mut u64, value: Value) {
        // SAFETY: the caller's slot and value; `me` is the VM's mutator.
        unsafe { self.barriers.store(&self.me, word, value) }
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

    use hotmem::{CollectorMode, Generations, Runtime};

    use super::super::LoxBinding;
    use super::{BarrierMode, Heap, Pacing};
    use crate::cli::GcMode;

    /// A heap on a small runtime with `collector`, driven as `gc` says.
    fn heap(collector: CollectorMode, gc: GcMode) -> Heap {
        let generations = match collector {
            CollectorMode::StopTheWorld => Generations::YoungAndOld,
            _ => Generations::Single,
        };
        let runtime = Runtime::builder()
            .binding(Arc::new(LoxBinding::default()))
            .collector(collector)
            .generations(generations)
            .heap_max(16 << 20)
            .build()
            .unwrap();
        Heap::new(runtime.attach_mutator().unwrap(), gc)
    }

    #[test]
    fn the_runtimes_collector_decides_the_barriers_and_who_collects() {
        let h = heap(CollectorMode::StopTheWorld, GcMode::Normal);
        assert_eq!(h.barriers, BarrierMode::StoreOnly);
        assert!(matches!(h.pacing, Pacing::Collector));
        let h = heap(CollectorMode::StopTheWorld, GcMode::Stress);
        assert_eq!(h.barriers, BarrierMode::StoreOnly);
        assert!(matches!(h.pacing, Pacing::Stress(_)));
        // The command line's mode does not decide: the runtime's does.
        for gc in [
            GcMode::Normal,
            GcMode::Stress,
            GcMode::Concurrent,
            GcMode::ConcurrentGenerational,
            GcMode::ConcurrentGenerationalPaced,
        ] {
            let h = heap(CollectorMode::Concurrent, gc);
            assert_eq!(h.barriers, BarrierMode::LoadAndStore);
            assert!(matches!(h.pacing, Pacing::Collector));
        }
    }
}
