//! [`Runtime`]: the parts, built from one configuration and wired together.
//!
//! - [`builder`] and [`config`]: what a runtime is built from;
//! - [`build`]: the parts made and wired; [`numa`]: the NUMA side;
//! - [`inner`]: the state the runtime's handles share;
//! - [`collect`]: collections and other safepoint operations asked for by
//!   the embedder;
//! - [`class_loader`], [`safepoints`], [`part_views`], [`report`], [`weak`]
//!   (weak handles, ephemerons, finalizers): what the runtime hands out.

mod build;
pub(crate) mod builder;
pub(crate) mod class_loader;
mod collect;
pub(crate) mod config;
mod gc_thread;
pub(crate) mod inner;
pub(crate) mod numa;
pub(crate) mod part_views;
pub(crate) mod report;
pub(crate) mod safepoints;
mod weak;

use crate::gc::TlabStats;
use crate::gc::in_collection;
use crate::gc::{GcTotals, HeapTarget};
use crate::roots::Handle;
use crate::vm::ObjectReference;
use crate::{AttachError, ClassLoader, Mutator, Report};
use builder::RuntimeBuilder;
use config::RuntimeConfig;
use hotmem_chunk::ArenaKind;
use hotmem_os::Memory;
use hotmem_page::NodeId;
use inner::Inner;
use numa::NumaSummary;
use part_views::{HeapView, MetaspaceView, NmtView};
use safepoints::Safepoints;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A managed runtime's memory system: a heap of pages, two metaspaces, native
/// memory tracking of all of it, safepoints, and GC workers, wired together.
/// Cloning is cheap and shares the runtime.
///
/// See the [crate documentation](crate) for an example.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .field("numa", &self.inner.numa)
            .finish()
    }
}

impl Runtime {
    /// A builder with the defaults.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    /// Attaches the calling thread as a mutator: it allocates, polls for
    /// safepoints and marks its native regions through the returned handle.
    /// Its stack is recorded in native memory tracking (tag Thread Stack)
    /// until the handle is dropped.
    ///
    /// # Errors
    /// [`AttachError::Register`] with the safepoint coordinator's refusal
    /// (e.g. the thread is already attached);
    /// [`AttachError::InsideCollection`] from an binding callback.
    pub fn attach_mutator(&self) -> Result<Mutator, AttachError> {
        if in_collection::inside(&self.inner.gc) {
            return Err(AttachError::InsideCollection);
        }
        let handle = self
            .inner
            .safepoints
            .register()
            .map_err(AttachError::Register)?;
        self.inner.gc.roots.attach(handle.id());
        Ok(Mutator::new(
            self.clone(),
            handle,
            self.partition_for_current_thread(),
        ))
    }

    fn partition_for_current_thread(&self) -> NodeId {
        #[cfg(feature = "numa")]
        if let Some(t) = &self.inner.topology {
            if t.is_this_system() {
                if let Ok(node) = t.current_node() {
                    if self.inner.gc.partitions.contains(&node) {
                        return node;
                    }
                }
            }
        }
        let i = self.inner.next_partition.fetch_add(1, Ordering::Relaxed);
        let partitions = &self.inner.gc.partitions;
        partitions[i % partitions.len()]
    }

    /// A root that any thread may hold: keeps `obj` alive and follows it
    /// when it moves (read it with [`Handle::get`] after anything that may
    /// collect). Dropping it drops the root.
    pub fn global_handle(&self, obj: ObjectReference) -> Handle {
        self.inner.gc.roots.global_handle(obj)
    }

    /// The binding the runtime was built with
    /// ([`RuntimeBuilder::binding`]), if it is a `B`.
    ///
    /// ```
    /// # use hotmem::{NumaConfig, Runtime, objects::SimpleObjects};
    /// let model = SimpleObjects::new();
    /// let rt = Runtime::builder().numa(NumaConfig::Off).binding(model.clone()).build()?;
    /// assert!(std::ptr::eq(rt.binding::<SimpleObjects>().unwrap(), &*model));
    /// # Ok::<(), hotmem::BuildError>(())
    /// ```
    pub fn binding<B: crate::Binding>(&self) -> Option<&B> {
        let collector = self.inner.collector.as_ref()?;
        collector.binding().downcast_ref::<B>()
    }

    /// A class loader of `kind`: its class and non-class metadata arenas,
    /// which return their chunks to the metaspaces when it is dropped.
    pub fn class_loader(&self, kind: ArenaKind) -> ClassLoader {
        ClassLoader::new(self.inner.metaspace.loader(kind))
    }

    /// The report: gc,stats, collections, safepoints, metaspace, NMT summary
    /// and the annotated OS memory map.
    pub fn report(&self) -> Report {
        Report::of(self)
    }

    /// The native memory tracker that observes every reservation of this
    /// runtime, read-only (the runtime's memory records into it). The view
    /// may outlive the runtime, to check that everything was released.
    pub fn nmt(&self) -> NmtView {
        NmtView::new(self.inner.nmt.clone())
    }

    /// The memory (with NMT attached) the runtime reserves through; an
    /// embedder's own reservations made through it are tracked too.
    pub fn memory(&self) -> &Memory {
        &self.inner.memory
    }

    /// The heap sizing policy's target now, the soft maximum
    /// ([`RuntimeBuilder::soft_max_heap`]) and how often collections set
    /// it aside for taking more than the time limit.
    pub fn heap_target(&self) -> HeapTarget {
        self.inner.gc.sizing.heap_target()
    }

    /// The heap, read-only (only the collector frees its pages).
    pub fn heap(&self) -> HeapView<'_> {
        let gc = &self.inner.gc;
        let remembered = self.inner.barriers.remembered.as_deref();
        HeapView::new(&gc.pages, remembered.map(|r| &*r.old))
    }

    /// The address ranges the runtime reserved itself: the heap, the class
    /// space and the non-class metaspace (first, in that order), then each
    /// space's lazily committed side tables. None of it is mapped any more
    /// once the runtime is dropped.
    pub fn reserved_ranges(&self) -> Vec<hotmem_os::MemRange> {
        use hotmem_chunk::MetadataType;
        let spaces =
            [MetadataType::Class, MetadataType::NonClass].map(|ty| self.inner.metaspace.space(ty));
        let mut ranges = vec![self.inner.gc.pages.reserved()];
        ranges.extend(spaces.iter().map(|s| s.range()));
        for s in spaces {
            ranges.extend(s.side_table_ranges());
        }
        ranges
    }

    /// The class and non-class metaspaces, read-only (only a class
    /// loader's arenas return their chunks, when it is dropped).
    pub fn metaspace(&self) -> MetaspaceView<'_> {
        MetaspaceView::new(&self.inner.metaspace)
    }

    /// The safepoint coordinator, for the embedder's own safepoints and
    /// handshakes (refused from inside a collection, where they would wait
    /// for it).
    pub fn safepoints(&self) -> Safepoints<'_> {
        Safepoints::new(&self.inner)
    }

    /// Heap partitions, one per NUMA node.
    pub fn partitions(&self) -> &[NodeId] {
        &self.inner.gc.partitions
    }

    /// How the NUMA side was set up.
    pub fn numa(&self) -> &NumaSummary {
        &self.inner.numa
    }

    /// The number of GC workers.
    pub fn gc_workers(&self) -> usize {
        self.inner.gc.worker_count
    }

    /// Totals over every collection so far.
    pub fn gc_totals(&self) -> GcTotals {
        self.inner.gc.record.lock().totals.clone()
    }

    /// What the mutators' thread-local allocation buffers did so far.
    pub fn tlab_stats(&self) -> TlabStats {
        self.inner.gc.tlabs.stats()
    }

    /// The configuration the runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Time since the runtime was built: the clock of the log's `[0.123s]`
    /// decoration, for lining up an embedder's own samples with the log.
    pub fn uptime(&self) -> std::time::Duration {
        self.inner.log.start().elapsed()
    }

    /// Writes the lines still pending (the last safepoint's) and flushes
    /// every log output.
    pub fn flush_log(&self) {
        self.inner.log.flush(&self.inner.safepoints);
    }
}
