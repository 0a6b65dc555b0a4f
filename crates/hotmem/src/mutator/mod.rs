//! [`Mutator`]: a thread attached to the runtime. It allocates
//! ([`alloc`]), polls for safepoints, holds handles and pins, and reads and
//! writes references through the barriers ([`barrier`]).

mod alloc;
mod barrier;
mod barrier_set;

pub use barrier_set::{
    BarrierKind, BarrierSet, ConcurrentBarrierSet, StopTheWorldBarriers, WithBarriers,
};

use crate::error::ShadowStackError;
use crate::gc::barriers::MutatorBarriers;
use crate::gc::{CollectStats, CollectionKind, GcCause, GcRequest, Tlab};
use crate::roots::{Commit, Handle, HandleTable, PinGuard, ShadowStack};
use crate::thread_stack::ThreadStack;
use crate::vm::ObjectReference;
use crate::{GcError, Runtime};
use hotmem_page::NodeId;
use hotmem_safepoint::{MutatorHandle, MutatorId, SafeRegion};
use std::sync::Arc;

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
    /// This thread's side of the collector's barriers.
    barriers: MutatorBarriers,
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
        let gc = &runtime.inner.gc;
        let handles = gc.roots.new_table();
        let tlab = gc.tlabs.register();
        let barriers = runtime.inner.barriers.for_mutator(&tlab);
        Mutator {
            barriers,
            handles,
            runtime,
            handle,
            partition,
            stack,
            tlab,
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

    /// Leaves a leaked native region, if any (see
    /// [`MutatorHandle::ensure_managed`](hotmem_safepoint::MutatorHandle::ensure_managed)):
    /// whether it did.
    #[inline]
    pub(crate) fn ensure_managed(&self) -> bool {
        self.handle.ensure_managed()
    }

    /// Whether [`Mutator::poll`] would stop or run something now: the
    /// poll's check without its work. An interpreter that keeps heap
    /// addresses in locals publishes them (to its shadow stack) and polls
    /// only when this says so, then reloads them:
    ///
    /// ```
    /// # let rt = hotmem::Runtime::builder().build()?;
    /// # let me = rt.attach_mutator()?;
    /// if me.poll_pending() {
    ///     // publish the cached references, poll, reload them
    ///     me.poll();
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn poll_pending(&self) -> bool {
        self.handle.poll_pending()
    }

    /// Enters native code: safepoints (and collections) no longer wait for
    /// this thread until the guard is dropped; leaving stops the thread if a
    /// safepoint is in progress. The guard borrows the mutator, so nothing
    /// is allocated while in native code. A guard leaked with `mem::forget`
    /// leaves the thread counted as safe until its next poll, allocation or
    /// region, which leave the native state first (see [`SafeRegion`]).
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
        kind: Option<CollectionKind>,
        seen_epoch: Option<u64>,
    ) -> Result<Option<CollectStats>, GcError> {
        let runtime = self.runtime.clone();
        if runtime.is_concurrent() {
            // The concurrent collector's pauses must not wait for this
            // thread: it waits for the cycle as blocked, unless the wait
            // would close a deadlock through another runtime.
            let blocked = self.handle.enter_blocked();
            blocked.check_wait().map_err(GcError::Safepoint)?;
            return runtime.concurrent_cycle(cause, kind).map(Some);
        }
        let mut blocked = self.handle.enter_blocked();
        let request = GcRequest {
            cause,
            kind,
            seen_epoch,
        };
        runtime.collect_request(request, Some(&mut blocked))
    }

    /// A root for `obj` that the runtime scans and updates itself (the
    /// handle-scope helper for embedders that keep references in Rust
    /// locals): read it with [`Handle::get`] after anything that may
    /// collect. Dropping it drops the root.
    pub fn handle(&self, obj: ObjectReference) -> Handle {
        // In managed code (a leaked native region is left first): no pause
        // runs while the handle is made.
        let _ = self.handle.ensure_managed();
        self.handles.add_handle(obj)
    }

    /// Takes every object queued for finalization (registered with
    /// [`Runtime::register_finalizer`] and found unreachable by a
    /// collection), each in a [`Handle`] of this thread: run their
    /// finalizers with them. An object stays alive while its handle does;
    /// store it somewhere reachable to resurrect it.
    pub fn take_finalizable(&self) -> Vec<Handle> {
        // The objects leave the queue (a root) for handles (roots) with no
        // pause in between: in managed code, a leaked region left first.
        let _ = self.handle.ensure_managed();
        let queued = self.runtime.inner.gc.weak.finalizers.take_queue();
        queued
            .into_iter()
            .map(|r| self.handles.add_handle(r))
            .collect()
    }

    /// A new [`ShadowStack`] of (at least) `words` words: roots of this
    /// mutator that the runtime scans and updates in place, decoded by the
    /// binding's [`Binding::slot_at`](crate::Binding::slot_at). Every word
    /// is committed at once ([`Mutator::new_growing_shadow_stack`] commits
    /// them as the stack grows).
    ///
    /// # Errors
    /// [`ShadowStackError`] if the size is zero or the memory cannot be
    /// mapped.
    pub fn new_shadow_stack(&self, words: usize) -> Result<ShadowStack, ShadowStackError> {
        self.shadow_stack(words, Commit::All)
    }

    /// A new [`ShadowStack`] that may grow to (at least) `words` words,
    /// of which only the first page is committed: an interpreter's value
    /// stack, whose deepest recursion is rare, commits (and NMT counts)
    /// what it reaches. Before writing past [`ShadowStack::capacity`], the
    /// embedder calls [`ShadowStack::grow`].
    ///
    /// ```
    /// # use hotmem::{Runtime, NumaConfig};
    /// # let rt = Runtime::builder().numa(NumaConfig::Off).build()?;
    /// let me = rt.attach_mutator()?;
    /// let stack = me.new_growing_shadow_stack(1 << 20)?;
    /// assert!(stack.capacity() < stack.max_capacity());
    /// let words = stack.grow(100_000)?;
    /// assert!(words >= 100_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Mutator::new_shadow_stack`].
    pub fn new_growing_shadow_stack(&self, words: usize) -> Result<ShadowStack, ShadowStackError> {
        self.shadow_stack(words, Commit::AsItGrows)
    }

    fn shadow_stack(&self, words: usize, commit: Commit) -> Result<ShadowStack, ShadowStackError> {
        let stack = ShadowStack::new(&self.runtime.inner.memory, words, commit)?;
        self.runtime.inner.gc.roots.add_stack(&stack);
        Ok(stack)
    }

    /// Pins `obj` for native code: it stays alive and never moves (its page
    /// is not evacuated) until the guard is dropped.
    pub fn pin(&self, obj: ObjectReference) -> PinGuard {
        let _ = self.handle.ensure_managed();
        self.runtime.inner.gc.roots.pins.pin(obj)
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
        let gc = &self.runtime.inner.gc;
        gc.roots.detach(self.handle.id());
        gc.tlabs.give_back(&self.tlab, &gc.mutator_alloc);
        gc.tlabs.unregister(&self.tlab);
        if let Some(stack) = self.stack.take() {
            stack.release(&self.runtime.inner.nmt);
        }
    }
}
