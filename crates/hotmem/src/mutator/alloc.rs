//! The allocation paths: this thread's buffer (TLAB), then the shared
//! pages, then a collection and a retry.

use super::Mutator;
use crate::gc::{GcCause, in_collection};
use crate::{AllocError, GcError};
use hotmem_os::Address;
use hotmem_page::{Age, ObjectLayout, PageRequest};
use std::sync::atomic::Ordering;

/// Collections an allocation that finds the heap full may wait for before
/// it reports out of memory.
const ALLOC_GC_ROUNDS: usize = 3;

impl Mutator {
    /// Allocates `size` bytes (a new, young object) on this thread's NUMA
    /// partition. The memory is not zeroed: the embedder initializes it.
    /// When the heap is full this runs a collection (or waits for the one
    /// another thread runs) and retries, for up to three collections.
    ///
    /// **`alloc` may collect.** A collection moves objects and frees the
    /// unreachable ones, so after `alloc` returns, every reference the
    /// collector could not see is stale: a reference held only in a Rust
    /// local, or in a fresh object not yet linked from a root. Keep what
    /// must survive in a root the runtime scans (a [`Handle`](crate::Handle), a root the
    /// [`Binding`](crate::Binding) reports) and read it again afterwards;
    /// initialize a new object (its reference slots at least: null or
    /// valid) before the next call that may collect (`alloc`, `poll`,
    /// `collect`). The same holds for [`Mutator::poll`].
    ///
    /// # Errors
    /// [`AllocError::Layout`] for a size no page can hold;
    /// [`AllocError::OutOfMemory`] if the heap is still full after the
    /// collection. Neither leaves anything allocated.
    #[inline]
    pub fn alloc(&mut self, size: usize) -> Result<Address, AllocError> {
        self.alloc_aged(size, Age::EDEN)
    }

    /// [`Mutator::alloc`] with an explicit age (e.g. [`Age::OLD`] for
    /// objects known to live long).
    ///
    /// # Errors
    /// As [`Mutator::alloc`].
    #[inline]
    pub fn alloc_aged(&mut self, size: usize, age: Age) -> Result<Address, AllocError> {
        // A native region that was leaked (`mem::forget`) no longer borrows
        // `self`, but leaves the thread published as safe, where a
        // collection would retire its buffer and pages under it: leave it
        // first (one load and one branch when none was).
        self.handle.ensure_managed();
        let layout = ObjectLayout::new(size).map_err(AllocError::Layout)?;
        if age == Age::EDEN {
            if let Some(addr) = self.tlab.alloc(layout) {
                return Ok(addr);
            }
            return self.alloc_refill(layout);
        }
        self.alloc_shared(layout, Placement::Aged(age))
    }

    /// Allocates `size` bytes for an object that **never moves**: no
    /// collector evacuates it, in any mode, so a reference to it is never
    /// stale. A slot that only ever holds such references (or values that
    /// are not references) may be read without the load barrier of the
    /// concurrent collectors; that is what the space is for: a VM's
    /// functions, constants and interned names, which its interpreter
    /// reads on every instruction. The memory is not zeroed.
    ///
    /// The object is old from birth: initialize its reference slots
    /// through the store barrier ([`Mutator::store_ref`] or the
    /// [`BarrierSet`](crate::BarrierSet)), as for an object of
    /// [`Age::OLD`]. It lives in pages of its own, which are never
    /// compacted: a dead non-moving object's room comes back only when
    /// every object of its page is dead, and the first object takes a
    /// whole small page (2 MiB by default) out of the heap. Allocation
    /// takes a lock: this is for long-lived metadata, not for a program's
    /// objects.
    ///
    /// **It may collect**, as [`Mutator::alloc`] does, with the same rules.
    ///
    /// # Example
    /// ```
    /// use hotmem::Runtime;
    /// use hotmem::objects::SimpleObjects;
    ///
    /// let objects = SimpleObjects::new();
    /// let runtime = Runtime::builder().binding(objects.clone()).build()?;
    /// let mut me = runtime.attach_mutator()?;
    /// let size = SimpleObjects::size_for(0, 2);
    /// let addr = me.alloc_non_moving(size)?;
    /// // SAFETY: a fresh allocation of `size` bytes.
    /// let obj = unsafe { SimpleObjects::init(addr, size, 0, 1) };
    /// let roots = objects.root_table();
    /// roots.push(Some(obj));
    /// me.collect()?;
    /// assert_eq!(roots.get(0), Some(obj), "it did not move");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Mutator::alloc`].
    pub fn alloc_non_moving(&mut self, size: usize) -> Result<Address, AllocError> {
        // As in `alloc_aged`: a leaked native region is left first.
        self.handle.ensure_managed();
        let layout = ObjectLayout::new(size).map_err(AllocError::Layout)?;
        self.alloc_shared(layout, Placement::NonMoving)
    }

    /// A young object that did not fit the buffer: a new buffer if the
    /// object is small enough for one, else the shared path.
    #[cold]
    #[inline(never)]
    fn alloc_refill(&mut self, layout: ObjectLayout) -> Result<Address, AllocError> {
        let tlabs = &self.runtime.inner.gc.tlabs;
        let Some(sizing) = tlabs.sizing.filter(|s| layout.footprint() <= s.max_object) else {
            return self.alloc_shared(layout, Placement::Aged(Age::EDEN));
        };
        let buffer = ObjectLayout::new(sizing.size).expect("a TLAB size is a valid layout");
        let gc = &self.runtime.inner.gc;
        // The old buffer's end goes back to its page first: the new buffer
        // is then usually carved right where it was.
        gc.tlabs.give_back(&self.tlab, &gc.mutator_alloc);
        match gc
            .mutator_alloc
            .alloc_object(buffer, Age::EDEN, self.partition)
        {
            Ok(start) => {
                self.tlab.refill(start, sizing.size);
                gc.tlabs.count_refill();
                self.runtime.pace();
                Ok(self
                    .tlab
                    .alloc(layout)
                    .expect("an object of at most an eighth of a new buffer fits it"))
            }
            // No room for a buffer: the object alone may still fit, and if
            // not, the shared path collects and retries.
            Err(_) => self.alloc_shared(layout, Placement::Aged(Age::EDEN)),
        }
    }

    /// The shared path: the per-CPU (small) or per-age (medium) page of the
    /// partition, or a page of its own (large); collects when the heap is
    /// full.
    #[inline]
    fn alloc_shared(
        &mut self,
        layout: ObjectLayout,
        place: Placement,
    ) -> Result<Address, AllocError> {
        let result = match self.try_alloc(layout, place) {
            Ok(addr) => Ok(addr),
            Err(e) => self.alloc_slow(layout, place, e),
        };
        if let (Ok(addr), Some(store)) = (&result, &self.barriers.store) {
            store.allocated(addr.get(), layout.size(), place.age());
        }
        if result.is_ok() {
            self.runtime.pace();
        }
        result
    }

    /// One attempt in `place`'s pages, without collecting.
    #[inline]
    fn try_alloc(
        &self,
        layout: ObjectLayout,
        place: Placement,
    ) -> Result<Address, hotmem_page::AllocError> {
        let gc = &self.runtime.inner.gc;
        match place {
            Placement::Aged(age) => gc.mutator_alloc.alloc_object(layout, age, self.partition),
            Placement::NonMoving => {
                (gc.non_moving).alloc(gc.mutator_alloc.source(), layout, self.partition)
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_slow(
        &mut self,
        layout: ObjectLayout,
        place: Placement,
        e: hotmem_page::AllocError,
    ) -> Result<Address, AllocError> {
        let gc = &self.runtime.inner.gc;
        if !e.is_heap_exhausted() || self.runtime.inner.collector.is_none() {
            return Err(self.oom_or(layout, e));
        }
        if in_collection::inside(gc) {
            return Err(AllocError::InsideCollection);
        }
        gc.poison.check().map_err(AllocError::Collection)?;
        // Collect and retry. With many allocating threads, what one
        // collection frees can be taken by others before this thread
        // retries, so a few rounds are allowed; the allocation fails only
        // when collections no longer make room for it.
        if self.runtime.is_concurrent() {
            return self.alloc_stalled(layout, place);
        }
        let mut last = e;
        for _ in 0..ALLOC_GC_ROUNDS {
            let seen = self.runtime.inner.gc.epoch.load(Ordering::Acquire);
            // Collect, unless another thread finished a collection since our
            // attempt failed. Whatever the outcome, the retry decides, but
            // for a collection that cannot run at all.
            if let Err(e @ (GcError::Safepoint(_) | GcError::Poisoned { .. })) =
                self.collect_inner(GcCause::AllocationFailure, None, Some(seen))
            {
                return Err(AllocError::Collection(e));
            }
            match self.retry_after_collection(layout, place) {
                Ok(addr) => return Ok(addr),
                Err(e) if e.is_heap_exhausted() => {
                    // A young collection did not make room: mark everything
                    // next time.
                    if let Some(c) = &self.runtime.inner.collector {
                        c.room_not_made();
                    }
                    last = e;
                }
                Err(e) => return Err(AllocError::Heap(e)),
            }
        }
        Err(self.oom_or(layout, last))
    }

    /// With the concurrent collector, an allocation that finds the heap
    /// full stalls: the thread (blocked, so that the cycles' pauses do not
    /// wait for it) asks for a cycle and waits until a cycle frees memory
    /// (its empty pages go back right after marking, before relocation),
    /// then retries. A retry that still finds no room after a cycle that
    /// ended with less room than its page asks for the next cycle to be
    /// full. It reports out of memory once the cycle that ran
    /// when it stalled and [`ALLOC_GC_ROUNDS`] more have finished without
    /// making room. The stall is counted and timed.
    fn alloc_stalled(
        &mut self,
        layout: ObjectLayout,
        place: Placement,
    ) -> Result<Address, AllocError> {
        let runtime = self.runtime.clone();
        let state = (runtime.inner.concurrent.as_ref()).expect("a concurrent runtime");
        let waited = std::time::Instant::now();
        let running = state.running();
        let _stalled = state.stall();
        let first = runtime.inner.gc_thread.finished();
        let result = loop {
            let seen = state.freed_count();
            if let Err(e) = runtime.inner.gc.poison.check() {
                break Err(AllocError::Collection(e));
            }
            {
                let blocked = self.handle.enter_blocked();
                // The cycle's pauses wait for every mutator in managed
                // code: a wait that closes a deadlock through another
                // runtime is an error instead.
                if let Err(e) = blocked.check_wait() {
                    break Err(AllocError::Collection(GcError::Safepoint(e)));
                }
                runtime.request_concurrent_cycle(GcCause::AllocationStall, None);
                state.wait_freed_past(seen);
            }
            match self.retry_after_collection(layout, place) {
                Ok(addr) => break Ok(addr),
                Err(e) if e.is_heap_exhausted() => {
                    let cycles = runtime.inner.gc_thread.finished() - first;
                    // A cycle ended (not only freed its empty pages) with
                    // less room than this allocation's page: the next one
                    // marks everything. A young cycle that did make room,
                    // though other mutators took it first, is followed by
                    // young ones.
                    if cycles > 0
                        && self.page_bytes(layout, place).unwrap_or(layout.size())
                            > state.room_at_end()
                        && let Some(c) = &runtime.inner.collector
                    {
                        c.room_not_made();
                    }
                    if cycles > ALLOC_GC_ROUNDS as u64 {
                        break Err(self.oom_or(layout, e));
                    }
                }
                Err(e) => break Err(AllocError::Heap(e)),
            }
        };
        runtime.count_stall(waited.elapsed(), running);
        result
    }

    /// The bytes of the page an allocation of `layout` needs (a small or
    /// medium page, or its large page); `None` if no page can hold it.
    fn page_bytes(&self, layout: ObjectLayout, place: Placement) -> Option<usize> {
        let sizes = self.runtime.inner.gc.mutator_alloc.page_sizes();
        PageRequest::for_object(&sizes, layout, place.age(), self.partition)
            .ok()
            .map(|r| r.size)
    }

    /// The allocation after a collection. If the sizing policy's budget
    /// still refuses it (an object larger than the budget) while the heap
    /// has room, the budget grows by the page it needs.
    fn retry_after_collection(
        &mut self,
        layout: ObjectLayout,
        place: Placement,
    ) -> Result<Address, hotmem_page::AllocError> {
        let gc = &self.runtime.inner.gc;
        let first = self.try_alloc(layout, place);
        let Err(e) = &first else { return first };
        let page = self.page_bytes(layout, place);
        let room = gc.mutator_alloc.source().room();
        match page {
            Some(bytes) if e.is_heap_exhausted() && bytes <= room => {
                gc.mutator_alloc.source().grant(bytes);
                self.try_alloc(layout, place)
            }
            _ => first,
        }
    }

    fn oom_or(&self, layout: ObjectLayout, e: hotmem_page::AllocError) -> AllocError {
        if e.is_heap_exhausted() {
            let (size, used) = (layout.size(), self.runtime.inner.gc.pages.usage().used);
            let max_capacity = self.runtime.inner.config.heap_max;
            self.runtime
                .inner
                .log
                .out_of_memory(size, used, max_capacity);
            AllocError::OutOfMemory {
                size,
                used,
                max_capacity,
            }
        } else {
            AllocError::Heap(e)
        }
    }
}

/// Where an allocation goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Placement {
    /// The mutators' pages of this age (moving).
    Aged(Age),
    /// The non-moving space (old).
    NonMoving,
}

impl Placement {
    /// The age the store barrier and the page request see.
    fn age(self) -> Age {
        match self {
            Placement::Aged(age) => age,
            Placement::NonMoving => Age::OLD,
        }
    }
}
