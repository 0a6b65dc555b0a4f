//! [`Inner`]: the state one runtime's handles share.

use super::config::RuntimeConfig;
use super::gc_thread::GcThread;
use super::numa::NumaSummary;
use crate::GcError;
use crate::gc::barriers::BarrierSet;
use crate::gc::concurrent::ConcurrentState;
use crate::gc::in_collection;
use crate::gc::{CollectStats, CollectionKind, Collector, DriverContext, GcHeap, GcRequest};
use crate::log::Logger;
use crate::thread_stack::ThreadStack;
use hotmem_chunk::Metaspace;
use hotmem_nmt::Tracker;
use hotmem_os::Memory;
use hotmem_safepoint::Coordinator;
use hotmem_safepoint::SafeRegion;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// Everything a runtime is: its configuration, the memory (and its native
/// memory tracker) every part reserves through, the collected heap and its
/// collector, the metaspaces, the safepoint coordinator, the log.
pub(crate) struct Inner {
    pub(crate) config: RuntimeConfig,
    pub(crate) memory: Memory,
    pub(crate) nmt: Arc<Tracker>,
    /// The heap every collector works on.
    pub(crate) gc: GcHeap,
    /// The collector the configuration chose, compiled for the binding
    /// (none: the runtime allocates but cannot collect).
    pub(crate) collector: Option<Arc<dyn Collector>>,
    /// The collector's side of the barriers it needs.
    pub(crate) barriers: BarrierSet,
    /// With a concurrent collector: what the mutators that wait for its
    /// cycles share with it.
    pub(crate) concurrent: Option<Arc<ConcurrentState>>,
    pub(crate) safepoints: Coordinator,
    pub(crate) metaspace: Metaspace,
    pub(crate) numa: NumaSummary,
    #[cfg(feature = "numa")]
    pub(crate) topology: Option<Arc<hotmem_numa::Topology>>,
    /// The partition the next attaching thread gets, round robin (when its
    /// node is not known).
    pub(crate) next_partition: AtomicUsize,
    /// The GC worker threads' stacks, recorded in NMT while the pool lives.
    pub(crate) worker_stacks: Vec<ThreadStack>,
    pub(crate) log: Logger,
    /// Runs concurrent cycles (the concurrent collector only).
    pub(crate) gc_thread: GcThread,
}

impl Inner {
    /// What the collection driver needs besides the heap.
    pub(crate) fn driver_context(&self) -> DriverContext<'_> {
        DriverContext {
            safepoints: &self.safepoints,
            log: &self.log,
            metaspace: &self.metaspace,
        }
    }

    /// Runs the collection `request` asks for with the runtime's collector
    /// (see [`Collector::run`]): a stop-the-world collection on the calling
    /// thread (`region`: the calling mutator's safe region, when a mutator
    /// collects), or a concurrent cycle on the calling GC thread. Without
    /// a binding, [`GcError::NoBinding`].
    pub(crate) fn run_collector(
        &self,
        request: GcRequest,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        let cx = self.driver_context();
        if let Some(c) = &self.collector {
            return c.run(&self.gc, &cx, request, region);
        }
        if in_collection::inside(&self.gc) {
            return Err(GcError::InsideCollection);
        }
        self.gc.poison.check()?;
        let kind = request.kind.unwrap_or(CollectionKind::Full);
        cx.log
            .collection_failed(kind, request.cause, &GcError::NoBinding);
        if let Some(state) = &self.concurrent {
            // Allocations stalled for a cycle retry (and fail) now.
            state.memory_freed();
        }
        Err(GcError::NoBinding)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.gc_thread.stop();
        self.log.flush(&self.safepoints);
        for stack in self.worker_stacks.drain(..) {
            stack.release(&self.nmt);
        }
    }
}
