//! [`Heap`]: the VM's side of the hotmem heap: allocation (with the
//! `--gc-stress` collections), and the one load path and one store path
//! that every reference read from, or written into, a heap object takes.

use hotmem::{AllocError, Mutator, Runtime};

use super::binding::ValueSlot;
use super::error::HeapError;
use super::policy::{Next, Policy};
use super::value::Value;
use crate::cli::GcMode;

/// Which collection `--gc-stress` runs next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum StressNext {
    Young,
    Full,
}

/// The mutator the VM allocates through, and how collections are driven.
pub(crate) struct Heap {
    me: Mutator,
    mode: GcMode,
    next: StressNext,
    policy: Policy,
}

impl Heap {
    /// The heap of `runtime`, for the calling thread.
    pub(crate) fn new(me: Mutator, mode: GcMode) -> Heap {
        Heap {
            me,
            mode,
            next: StressNext::Young,
            policy: Policy::default(),
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
        match self.mode {
            GcMode::Stress => self.stress_collect()?,
            // The concurrent collector paces its cycles itself.
            GcMode::Concurrent => {}
            _ => {
                if self.policy.count(bytes) {
                    self.policy_collect()?;
                }
            }
        }
        match self.me.alloc(bytes) {
            Ok(addr) => Ok(addr.get()),
            Err(error) => Err(self.alloc_failed(bytes, error)),
        }
    }

    #[cold]
    #[inline(never)]
    fn policy_collect(&mut self) -> Result<(), HeapError> {
        let stats = match self.policy.next() {
            Next::Young => self.me.collect_young(),
            Next::Full => self.me.collect(),
        }
        .map_err(HeapError::Collector)?;
        self.policy.collected(&stats);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn stress_collect(&mut self) -> Result<(), HeapError> {
        let result = match self.next {
            StressNext::Young => self.me.collect_young(),
            StressNext::Full => self.me.collect(),
        };
        self.next = match self.next {
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
    /// load path for references, through the runtime's load barrier.
    ///
    /// # Safety
    /// `word` is a slot of a live object, read before the next call that
    /// may collect.
    #[inline(always)]
    pub(crate) unsafe fn load(&self, word: *mut u64) -> Value {
        // SAFETY: the caller's slot of a live object.
        let slot = unsafe { ValueSlot::new(word) };
        // One load of the word; the barrier only for a reference.
        let value = Value::from_bits(slot.load_bits());
        if self.mode == GcMode::Concurrent {
            return self.load_concurrent(slot, value);
        }
        value
    }

    /// [`Heap::load`] with the concurrent collector: the load barrier on a
    /// reference. Out of line: its code inlined at every load slowed the
    /// interpreter in every mode (fields.lox 1.3 s -> 2.2 s with the
    /// generational collector, where it never runs).
    #[inline(never)]
    fn load_concurrent(&self, slot: ValueSlot, value: Value) -> Value {
        match value.as_object() {
            Some(obj) => Value::object(self.me.after_load(&slot, obj).get()),
            None => value,
        }
    }

    /// Writes `value` into `word`, a slot of a heap object, through the
    /// runtime's store barriers: `store_ref` for a reference; for a
    /// number or a literal, `before_overwrite` (the concurrent collector's
    /// snapshot needs the reference it may overwrite) and an atomic store
    /// (GC workers may read the word meanwhile).
    ///
    /// # Safety
    /// As [`Heap::load`].
    #[inline(always)]
    pub(crate) unsafe fn store(&self, word: *mut u64, value: Value) {
        // SAFETY: the caller's slot of a live object.
        let slot = unsafe { ValueSlot::new(word) };
        match value.as_object() {
            Some(obj) => self.me.store_ref(slot, obj),
            None => {
                self.me.before_overwrite(&slot);
                slot.store_bits(value.bits());
            }
        }
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
