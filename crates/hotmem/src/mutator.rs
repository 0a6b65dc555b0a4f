//! `Mutator`: a thread attached to the runtime.

use crate::binding::{ObjectReference, Slot};
use crate::gc::{CollectStats, GcCause};
use crate::generations::{CollectionKind, StoreBarrier};
use crate::handles::{Handle, HandleTable, PinGuard};
use crate::stacks::ThreadStack;
use crate::tlab::Tlab;
use crate::{AllocError, GcError, Runtime, reentry};
use hotmem_os::Address;
use hotmem_page::{Age, NodeId, ObjectLayout};
use hotmem_safepoint::{MutatorHandle, MutatorId, SafeRegion};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Collections an allocation that finds the heap full may wait for before
/// it reports out of memory.
const ALLOC_GC_ROUNDS: usize = 3;

/// A thread attached to a [`Runtime`]: it allocates objects, polls for
/// safepoints, and marks the regions where it runs native code. Not `Send`:
/// it belongs to the thread that attached. Dropping it detaches the thread.
///
/// Allocation needs `&mut self`, and so does a native region: a thread in
/// native code cannot allocate, which is what lets a collection at a
/// safepoint take over the allocation pages without waiting for it.
pub struct Mutator {
    runtime: Runtime,
    handle: MutatorHandle,
    partition: NodeId,
    stack: Option<ThreadStack>,
    handles: Arc<HandleTable>,
    /// This thread's allocation buffer (the collector empties it at
    /// safepoints).
    tlab: Arc<Tlab>,
    /// The store barrier's state (generational runtimes only).
    barrier: Option<StoreBarrier>,
}

impl std::fmt::Debug for Mutator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutator")
            .field("id", &self.handle.id())
            .field("partition", &self.partition)
            .finish()
    }
}

impl Mutator {
    pub(crate) fn new(runtime: Runtime, handle: MutatorHandle, partition: NodeId) -> Mutator {
        let stack = ThreadStack::record_current(&runtime.inner.nmt);
        let handles = runtime.inner.roots.new_table();
        let tlab = runtime.inner.tlabs.register();
        let barrier = runtime.inner.generations.as_ref().map(StoreBarrier::new);
        Mutator {
            barrier,
            handles,
            runtime,
            handle,
            partition,
            stack,
            tlab,
        }
    }

    /// Allocates `size` bytes (a new, young object) on this thread's NUMA
    /// partition. The memory is not zeroed: the embedder initializes it.
    /// When the heap is full this runs a collection (or waits for the one
    /// another thread runs) and retries, for up to three collections.
    ///
    /// **`alloc` may collect.** A collection moves objects and frees the
    /// unreachable ones, so after `alloc` returns, every reference the
    /// collector could not see is stale: a reference held only in a Rust
    /// local, or in a fresh object not yet linked from a root. Keep what
    /// must survive in a root the runtime scans (a [`Handle`], a root the
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
        let layout = ObjectLayout::new(size).map_err(AllocError::Layout)?;
        if age == Age::EDEN {
            if let Some(addr) = self.tlab.alloc(layout) {
                return Ok(addr);
            }
            return self.alloc_refill(layout);
        }
        self.alloc_shared(layout, age)
    }

    /// A young object that did not fit the buffer: a new buffer if the
    /// object is small enough for one, else the shared path.
    #[cold]
    #[inline(never)]
    fn alloc_refill(&mut self, layout: ObjectLayout) -> Result<Address, AllocError> {
        let tlabs = &self.runtime.inner.tlabs;
        let Some(sizing) = tlabs.sizing.filter(|s| layout.footprint() <= s.max_object) else {
            return self.alloc_shared(layout, Age::EDEN);
        };
        let buffer = ObjectLayout::new(sizing.size).expect("a TLAB size is a valid layout");
        let inner = &self.runtime.inner;
        // The old buffer's end goes back to its page first: the new buffer
        // is then usually carved right where it was.
        inner.tlabs.give_back(&self.tlab, &inner.mutator_alloc);
        match inner
            .mutator_alloc
            .alloc_object(buffer, Age::EDEN, self.partition)
        {
            Ok(start) => {
                self.tlab.refill(start, sizing.size);
                inner.tlabs.count_refill();
                Ok(self
                    .tlab
                    .alloc(layout)
                    .expect("an object of at most an eighth of a new buffer fits it"))
            }
            // No room for a buffer: the object alone may still fit, and if
            // not, the shared path collects and retries.
            Err(_) => self.alloc_shared(layout, Age::EDEN),
        }
    }

    /// The shared path: the per-CPU (small) or per-age (medium) page of the
    /// partition, or a page of its own (large); collects when the heap is
    /// full.
    #[inline]
    fn alloc_shared(&mut self, layout: ObjectLayout, age: Age) -> Result<Address, AllocError> {
        let result =
            match self
                .runtime
                .inner
                .mutator_alloc
                .alloc_object(layout, age, self.partition)
            {
                Ok(addr) => Ok(addr),
                Err(e) => self.alloc_slow(layout, age, e),
            };
        if let (Ok(addr), Some(g)) = (&result, &self.runtime.inner.generations) {
            g.allocated(addr.get(), layout.size(), age);
        }
        result
    }

    #[cold]
    #[inline(never)]
    fn alloc_slow(
        &mut self,
        layout: ObjectLayout,
        age: Age,
        e: hotmem_page::AllocError,
    ) -> Result<Address, AllocError> {
        if !e.is_heap_exhausted() || self.runtime.inner.config.collector.is_none() {
            return Err(self.oom_or(layout, e));
        }
        if reentry::inside(&*self.runtime.inner) {
            return Err(AllocError::InsideCollection);
        }
        // Collect and retry. With many allocating threads, what one
        // collection frees can be taken by others before this thread
        // retries, so a few rounds are allowed; the allocation fails only
        // when collections no longer make room for it.
        let mut last = e;
        for _ in 0..ALLOC_GC_ROUNDS {
            let seen = self.runtime.inner.gc_epoch.load(Ordering::Acquire);
            // Collect, unless another thread finished a collection since our
            // attempt failed. Whatever the outcome, the retry decides.
            let _ = self.collect_inner(GcCause::AllocationFailure, None, Some(seen));
            match self
                .runtime
                .inner
                .mutator_alloc
                .alloc_object(layout, age, self.partition)
            {
                Ok(addr) => return Ok(addr),
                Err(e) if e.is_heap_exhausted() => {
                    // A young collection did not make room: mark everything
                    // next time.
                    if let Some(g) = &self.runtime.inner.generations {
                        g.ask_full();
                    }
                    last = e;
                }
                Err(e) => return Err(AllocError::Heap(e)),
            }
        }
        Err(self.oom_or(layout, last))
    }

    fn oom_or(&self, layout: ObjectLayout, e: hotmem_page::AllocError) -> AllocError {
        if e.is_heap_exhausted() {
            let heap = &self.runtime.inner.heap;
            AllocError::OutOfMemory {
                size: layout.size(),
                used: heap.usage().used,
                max_capacity: self.runtime.inner.config.heap_max,
            }
        } else {
            AllocError::Heap(e)
        }
    }

    /// The safepoint poll: one load and one branch unless a safepoint or a
    /// handshake is pending. Call it on the back-edges of long loops. A
    /// collection may run while the thread stops here: see
    /// [`Mutator::alloc`] for what that means for unrooted references.
    #[inline]
    pub fn poll(&self) {
        self.handle.poll();
    }

    /// Enters native code: safepoints (and collections) no longer wait for
    /// this thread until the guard is dropped; leaving stops the thread if a
    /// safepoint is in progress. The guard borrows the mutator, so nothing
    /// is allocated while in native code.
    pub fn enter_native(&mut self) -> SafeRegion<'_> {
        self.handle.enter_native()
    }

    /// Runs a collection from this thread. The thread counts as blocked
    /// meanwhile, so the collection does not wait for it.
    ///
    /// # Errors
    /// [`GcError`]; the heap stays consistent.
    pub fn collect(&mut self) -> Result<CollectStats, GcError> {
        let stats = self.collect_inner(GcCause::Explicit, Some(CollectionKind::Full), None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    /// [`Runtime::collect_young`] from this thread.
    ///
    /// # Errors
    /// As [`Mutator::collect`].
    pub fn collect_young(&mut self) -> Result<CollectStats, GcError> {
        let stats = self.collect_inner(GcCause::Explicit, Some(CollectionKind::Young), None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    fn collect_inner(
        &mut self,
        cause: GcCause,
        wanted: Option<CollectionKind>,
        seen: Option<u64>,
    ) -> Result<Option<CollectStats>, GcError> {
        let runtime = self.runtime.clone();
        let mut blocked = self.handle.enter_blocked();
        runtime.collect_cause(cause, wanted, seen, Some(&mut blocked))
    }

    /// A root for `obj` that the runtime scans and updates itself (the
    /// handle-scope helper for embedders that keep references in Rust
    /// locals): read it with [`Handle::get`] after anything that may
    /// collect. Dropping it drops the root.
    pub fn handle(&self, obj: ObjectReference) -> Handle {
        self.handles.add_handle(obj)
    }

    /// Pins `obj` for native code: it stays alive and never moves (its page
    /// is not evacuated) until the guard is dropped.
    pub fn pin(&self, obj: ObjectReference) -> PinGuard {
        self.runtime.inner.roots.pins.pin(obj)
    }

    /// The load barrier: reads a reference field through it. A plain load
    /// today (collections stop the world). Concurrent relocation attaches
    /// here: a reference into a page being evacuated is forwarded through
    /// the page's forwarding table (relocating the object if no worker has
    /// yet) and the slot healed with the new address.
    #[inline]
    pub fn load_ref<S: Slot>(&self, slot: S) -> Option<ObjectReference> {
        slot.load()
    }

    /// The store barrier: writes a reference field through it.
    ///
    /// With [`Generations::YoungAndOld`](crate::Generations::YoungAndOld),
    /// a store into an old object of a reference to a young one also
    /// remembers the slot's address, which the next young collection treats
    /// as a root (and updates when the young object moves). Every store of a
    /// reference into an object that may be old must come through here; a
    /// store into an object allocated since the last call that may collect
    /// (young, unless allocated old or large) need not. With
    /// [`Generations::Single`](crate::Generations::Single) it is a plain
    /// store.
    ///
    /// Concurrent (SATB) marking attaches here too: while marking is
    /// active, the value being overwritten is pushed to this thread's
    /// marking buffer first, so the snapshot at the start of marking stays
    /// reachable.
    #[inline]
    pub fn store_ref<S: Slot>(&self, slot: S, value: ObjectReference) {
        slot.store(value);
        if let Some(barrier) = &self.barrier {
            barrier.stored(slot.address().get(), value.get());
        }
    }

    /// This thread's id for handshakes.
    pub fn id(&self) -> MutatorId {
        self.handle.id()
    }

    /// The heap partition (NUMA node) this thread allocates in.
    pub fn partition(&self) -> NodeId {
        self.partition
    }

    /// The runtime this thread is attached to.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

impl Drop for Mutator {
    fn drop(&mut self) {
        let id = self.handle.id();
        self.runtime.inner.mutators.lock().retain(|&m| m != id);
        let inner = &self.runtime.inner;
        inner.tlabs.give_back(&self.tlab, &inner.mutator_alloc);
        inner.tlabs.unregister(&self.tlab);
        if let Some(stack) = self.stack.take() {
            stack.release(&self.runtime.inner.nmt);
        }
    }
}
