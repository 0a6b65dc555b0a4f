//! [`Inner`]: the state one runtime's handles share.

use super::config::RuntimeConfig;
use super::gc_thread::GcThread;
use super::numa::NumaSummary;
use crate::gc::{DriverContext, GcHeap};
use crate::log::Logger;
use crate::thread_stack::ThreadStack;
use hotmem_chunk::Metaspace;
use hotmem_nmt::Tracker;
use hotmem_os::Memory;
use hotmem_safepoint::Coordinator;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// Everything a runtime is: its configuration, the memory (and its native
/// memory tracker) every part reserves through, the collected heap, the
/// metaspaces, the safepoint coordinator, the log.
pub(crate) struct Inner {
    pub(crate) config: RuntimeConfig,
    pub(crate) memory: Memory,
    pub(crate) nmt: Arc<Tracker>,
    /// The heap and everything that collects it.
    pub(crate) gc: GcHeap,
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
