//! `Runtime`: the parts, built from one configuration and wired together.

use crate::Generations;
use crate::binding::ObjectReference;
use crate::config::{NumaConfig, RuntimeBuilder, RuntimeConfig};
#[cfg(feature = "numa")]
use crate::error::NumaError;
use crate::gc::{CollectStats, GcCause, GcTotals};
use crate::generations::{CollectionKind, GenerationalState};
use crate::handles::{Handle, RootRegistry};
use crate::log::{Logger, Parts};
use crate::safepoints::Safepoints;
use crate::stacks::ThreadStack;
use crate::tlab::{TlabShared, TlabSizing, TlabStats};
use crate::views::{HeapView, MetaspaceView, NmtView};
use crate::workers::{GcWorkers, WorkerBinding};
use crate::{AttachError, BuildError, ClassLoader, GcError, Mutator, Report, reentry};
use hotmem_chunk::{ArenaKind, Metaspace, MetaspaceConfig, SpaceConfig};
use hotmem_nmt::Tracker;
use hotmem_os::Memory;
use hotmem_page::{HeapConfig, NodeId, ObjectAllocator, PageAllocator, StatSampler};
use hotmem_safepoint::{Coordinator, MutatorId, SafeRegion};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// How the runtime's NUMA side turned out.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NumaSummary {
    /// Where the topology came from: "detected", "synthetic: ...", or "off".
    pub source: String,
    /// Nodes, and so heap partitions.
    pub nodes: usize,
    /// Whether partition memory is bound to its node through the OS.
    pub memory_bound: bool,
    /// Whether GC workers bind to nodes during relocation, and whether
    /// those bindings are real or simulated (synthetic topology).
    pub worker_binding: WorkerBinding,
}

/// What collections leave behind for reports: statistics, the last one,
/// totals. Behind its own lock, taken only briefly, so that reports never
/// wait for a collection (and an binding callback may ask for one).
pub(crate) struct GcRecord {
    pub(crate) sampler: StatSampler,
    pub(crate) last: Option<CollectStats>,
    pub(crate) totals: GcTotals,
}

pub(crate) struct Inner {
    pub(crate) config: RuntimeConfig,
    pub(crate) memory: Memory,
    pub(crate) nmt: Arc<Tracker>,
    pub(crate) heap: Arc<PageAllocator>,
    pub(crate) mutator_alloc: ObjectAllocator<Arc<PageAllocator>>,
    pub(crate) gc_alloc: ObjectAllocator<Arc<PageAllocator>>,
    pub(crate) safepoints: Coordinator,
    pub(crate) metaspace: Metaspace,
    /// The collection lock: held by the thread that runs a collection (or
    /// an embedder's `run_at_safepoint`) for the whole pause.
    pub(crate) gc: Mutex<GcWorkers>,
    pub(crate) gc_record: Mutex<GcRecord>,
    pub(crate) gc_worker_count: usize,
    /// Completed collections; an allocation that failed before a collection
    /// finished retries instead of collecting again.
    pub(crate) gc_epoch: AtomicU64,
    /// Mutators' allocation buffers: size, validity epoch, counters.
    pub(crate) tlabs: TlabShared,
    /// Handles and pins: roots the runtime owns.
    pub(crate) roots: RootRegistry,
    /// The attached mutators, whose roots the binding reports.
    pub(crate) mutators: Mutex<Vec<MutatorId>>,
    pub(crate) partitions: Vec<NodeId>,
    next_partition: AtomicUsize,
    pub(crate) numa: NumaSummary,
    #[cfg(feature = "numa")]
    pub(crate) topology: Option<Arc<hotmem_numa::Topology>>,
    /// The GC worker threads' stacks, recorded in NMT while the pool lives.
    worker_stacks: Vec<ThreadStack>,
    pub(crate) log: Logger,
    /// Young and old objects, when [`Generations::YoungAndOld`].
    pub(crate) generations: Option<Arc<GenerationalState>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.log.flush(&self.safepoints);
        for stack in self.worker_stacks.drain(..) {
            stack.release(&self.nmt);
        }
    }
}

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

/// The NUMA parts a configuration gives: partitions, a binder, workers.
struct NumaParts {
    partitions: Vec<NodeId>,
    binder: Option<Arc<dyn hotmem_page::NodeBinder>>,
    workers: GcWorkers,
    summary: NumaSummary,
    #[cfg(feature = "numa")]
    topology: Option<Arc<hotmem_numa::Topology>>,
}

fn plain_parts(config: &RuntimeConfig, source: &str) -> NumaParts {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The parallel-worker heuristic: 60% of the CPUs, at least one.
    let threads = config
        .gc_workers
        .unwrap_or_else(|| (cpus * 3).div_ceil(5).max(1));
    NumaParts {
        partitions: vec![NodeId::ZERO],
        binder: None,
        workers: GcWorkers::Plain { threads },
        summary: NumaSummary {
            source: source.into(),
            nodes: 1,
            memory_bound: false,
            worker_binding: WorkerBinding::Off,
        },
        #[cfg(feature = "numa")]
        topology: None,
    }
}

#[cfg(feature = "numa")]
fn numa_parts(config: &RuntimeConfig) -> Result<NumaParts, BuildError> {
    use hotmem_numa::{AffinityPolicy, MemoryPolicy, PoolConfig, Topology, WorkerKind, heuristics};
    let (topology, source) = match &config.numa {
        NumaConfig::Off => return Ok(plain_parts(config, "off")),
        NumaConfig::Detect => (
            Topology::detect().map_err(|e| BuildError::Topology(NumaError::new(e)))?,
            "detected".to_string(),
        ),
        NumaConfig::Synthetic(d) => (
            Topology::synthetic(d).map_err(|e| BuildError::Topology(NumaError::new(e)))?,
            format!("synthetic: {d}"),
        ),
    };
    let topology = Arc::new(topology);
    let nodes = topology.node_count();
    let affinity = AffinityPolicy::default_for(&topology);
    let workers = config
        .gc_workers
        .unwrap_or_else(|| heuristics::workers_for(&topology, WorkerKind::Parallel, affinity));
    let pool = hotmem_numa::WorkerPool::new(
        &topology,
        PoolConfig::new(workers, affinity).named("hotmem-gc"),
    )
    .map_err(|e| BuildError::Workers(NumaError::new(e)))?;
    let memory_bound = nodes > 1 && topology.is_this_system();
    let binder: Option<Arc<dyn hotmem_page::NodeBinder>> = if memory_bound {
        let t = topology.clone();
        Some(Arc::new(move |range, node: NodeId| {
            // Preferred, not strict: a full node spills over instead of
            // failing the allocation.
            // SAFETY: the heap calls the binder with a range of its own that
            // it has just mapped and keeps mapped during the call (see
            // `hotmem_page::NodeBinder`); binding reads and writes no byte.
            let r = unsafe { t.bind_memory(range, node, MemoryPolicy::Preferred) };
            // A failed bind leaves the memory merely not node-local.
            let _ = r;
        }))
    } else {
        None
    };
    Ok(NumaParts {
        partitions: (0..nodes).map(NodeId::new).collect(),
        binder,
        summary: NumaSummary {
            source,
            nodes,
            memory_bound,
            worker_binding: crate::workers::pool_binding(&pool),
        },
        workers: GcWorkers::Numa(pool),
        topology: Some(topology),
    })
}

#[cfg(not(feature = "numa"))]
fn numa_parts(config: &RuntimeConfig) -> Result<NumaParts, BuildError> {
    match &config.numa {
        NumaConfig::Synthetic(_) => Err(BuildError::NumaDisabled),
        NumaConfig::Detect => Ok(plain_parts(config, "off (built without the numa feature)")),
        NumaConfig::Off => Ok(plain_parts(config, "off")),
    }
}

/// Records the stack of every long-lived GC worker thread in NMT (tag
/// Thread Stack). Plain workers live for one phase only and are not recorded.
fn record_worker_stacks(workers: &GcWorkers, nmt: &Arc<Tracker>) -> Vec<ThreadStack> {
    match workers {
        #[cfg(feature = "numa")]
        GcWorkers::Numa(pool) => {
            let nmt = nmt.clone();
            pool.on_each_worker(move |_| ThreadStack::record_current(&nmt))
                .into_iter()
                .flatten()
                .collect()
        }
        GcWorkers::Plain { .. } => {
            let _ = nmt;
            Vec::new()
        }
    }
}

impl Runtime {
    /// A builder with the defaults.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    pub(crate) fn from_config(config: RuntimeConfig) -> Result<Runtime, BuildError> {
        let log = Logger::new(&config.log, Instant::now());
        let nmt = Arc::new(Tracker::new(config.nmt));
        let memory = Memory::with_observer(nmt.clone());
        let parts = numa_parts(&config)?;
        let mut heap_config = HeapConfig::new(config.heap_max)
            .partitions(&parts.partitions)
            .uncommit_delay(config.uncommit_delay);
        if let Some(m) = config.medium_page_size {
            heap_config = heap_config.medium_page_size(m);
        }
        if let Some(b) = parts.binder.clone() {
            heap_config = heap_config.binder(b);
        }
        let heap = Arc::new(PageAllocator::new(&memory, heap_config).map_err(BuildError::Heap)?);
        let metaspace = Metaspace::new(
            &memory,
            MetaspaceConfig {
                class: SpaceConfig::with_size(config.class_space),
                non_class: SpaceConfig::with_size(config.nonclass_space),
            },
        )
        .map_err(BuildError::Metaspace)?;
        let worker_stacks = record_worker_stacks(&parts.workers, &nmt);
        let mutator_alloc = ObjectAllocator::new(heap.clone(), config.medium_page_mode);
        let tlabs = TlabShared::new(TlabSizing::new(
            config.tlabs,
            mutator_alloc.page_sizes().small_object_max(),
        ));
        let generations = (config.generations == Generations::YoungAndOld).then(|| {
            let reserved = heap.reserved();
            let sizes = mutator_alloc.page_sizes();
            Arc::new(GenerationalState::new(
                reserved.start().get(),
                reserved.len(),
                sizes.small_page(),
                sizes.medium_object_max(),
                config.heap_max,
            ))
        });
        let inner = Inner {
            generations,
            worker_stacks,
            log,
            mutator_alloc,
            tlabs,
            // GC workers share their relocation targets; synchronized so that
            // workers do not race for the medium target page.
            gc_alloc: ObjectAllocator::new(heap.clone(), hotmem_page::MediumPageMode::Synchronized),
            safepoints: Coordinator::new(config.safepoint_strategy),
            gc_worker_count: parts.workers.count(),
            gc: Mutex::new(parts.workers),
            gc_record: Mutex::new(GcRecord {
                sampler: StatSampler::new(heap.counters(), Instant::now()),
                last: None,
                totals: GcTotals::default(),
            }),
            gc_epoch: AtomicU64::new(0),
            roots: RootRegistry::default(),
            mutators: Mutex::new(Vec::new()),
            partitions: parts.partitions,
            next_partition: AtomicUsize::new(0),
            numa: parts.summary,
            #[cfg(feature = "numa")]
            topology: parts.topology,
            heap,
            metaspace,
            memory,
            nmt,
            config,
        };
        Ok(Runtime {
            inner: Arc::new(inner),
        })
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
        if reentry::inside(&*self.inner) {
            return Err(AttachError::InsideCollection);
        }
        let handle = self
            .inner
            .safepoints
            .register()
            .map_err(AttachError::Register)?;
        self.inner.mutators.lock().push(handle.id());
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
                    if self.inner.partitions.contains(&node) {
                        return node;
                    }
                }
            }
        }
        let i = self.inner.next_partition.fetch_add(1, Ordering::Relaxed);
        self.inner.partitions[i % self.inner.partitions.len()]
    }

    /// A root that any thread may hold: keeps `obj` alive and follows it
    /// when it moves (read it with [`Handle::get`] after anything that may
    /// collect). Dropping it drops the root.
    pub fn global_handle(&self, obj: ObjectReference) -> Handle {
        self.inner.roots.global_handle(obj)
    }

    /// A class loader of `kind`: its class and non-class metadata arenas,
    /// which return their chunks to the metaspaces when it is dropped.
    pub fn class_loader(&self, kind: ArenaKind) -> ClassLoader {
        ClassLoader::new(self.inner.metaspace.loader(kind))
    }

    /// Runs a collection from a thread that is not a mutator of this runtime
    /// (from a mutator, use [`Mutator::collect`], which does not wait for
    /// itself).
    ///
    /// # Errors
    /// [`GcError`]; the heap stays consistent.
    pub fn collect(&self) -> Result<CollectStats, GcError> {
        let stats =
            self.collect_cause(GcCause::Explicit, Some(CollectionKind::Full), None, None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    /// Runs a young collection now: with [`Generations::YoungAndOld`] and a
    /// binding that implements [`Binding::slot_at`](crate::Binding::slot_at),
    /// only young objects are marked (from the roots and the slots the
    /// store barrier remembered); otherwise a full collection.
    ///
    /// # Errors
    /// As [`Runtime::collect`].
    pub fn collect_young(&self) -> Result<CollectStats, GcError> {
        let stats =
            self.collect_cause(GcCause::Explicit, Some(CollectionKind::Young), None, None)?;
        Ok(stats.expect("an unconditional collection always runs"))
    }

    /// Runs a collection (of kind `wanted`, or as the generational policy
    /// says) unless `seen_epoch` is given and a collection has
    /// finished since (then returns `Ok(None)`).
    /// `region`: the calling mutator's safe region, when a mutator collects
    /// (it begins the safepoint through the region, which stays borrowed
    /// until the safepoint ends).
    pub(crate) fn collect_cause(
        &self,
        cause: GcCause,
        wanted: Option<CollectionKind>,
        seen_epoch: Option<u64>,
        region: Option<&mut SafeRegion<'_>>,
    ) -> Result<Option<CollectStats>, GcError> {
        let inner = &*self.inner;
        if reentry::inside(inner) {
            return Err(GcError::InsideCollection);
        }
        let mut workers = inner.gc.lock();
        if let Some(seen) = seen_epoch {
            if inner.gc_epoch.load(Ordering::Acquire) != seen {
                return Ok(None);
            }
        }
        let asked = Instant::now();
        let guard = match region {
            Some(region) => region.safepoint("GC"),
            None => inner.safepoints.begin("GC"),
        }
        .map_err(GcError::Safepoint)?;
        let ttsp = asked.elapsed();
        // The previous safepoint's record is complete now that this one began.
        inner.log.safepoints(&inner.safepoints);
        let cycle = inner.gc_record.lock().totals.cycles + 1;
        // Without generations every collection is full; with them, the
        // caller's choice or the policy's (full while slots are lost).
        let kind = inner
            .generations
            .as_ref()
            .map_or(CollectionKind::Full, |g| g.next_kind(wanted));
        let result = {
            let _inside = reentry::enter(inner);
            match &inner.config.collector {
                Some(c) => c.collect(inner, &mut workers, cause, kind, cycle, ttsp),
                None => Err(GcError::NoBinding),
            }
        };
        if let Some(g) = &inner.generations {
            match &result {
                Ok(stats) => g.collected(inner, stats.kind),
                // The remembered slots were taken; young pages may be left.
                Err(_) => g.failed(),
            }
        }
        if let Ok(stats) = &result {
            let now = Instant::now();
            let stats_table = {
                let mut record = inner.gc_record.lock();
                record.totals.add(stats);
                record.last = Some(stats.clone());
                record.sampler.sample(inner.heap.counters(), now);
                inner.log.wants_stats().then(|| record.sampler.report())
            };
            let parts = Parts {
                heap: &inner.heap,
                metaspace: &inner.metaspace,
                stats_table,
            };
            inner.log.collection(parts, stats, guard.id());
            // Cached pages unused for the uncommit delay go back to the OS.
            let _ = inner.heap.uncommit(now);
            inner.gc_epoch.fetch_add(1, Ordering::AcqRel);
        }
        guard.end();
        inner.log.safepoints(&inner.safepoints);
        result.map(Some)
    }

    /// Runs `op` with every mutator stopped, serialized with collections:
    /// the place to check invariants or walk the heap. Call it from a thread
    /// that is not an attached mutator (the safepoint would wait for it).
    ///
    /// # Errors
    /// [`GcError::Safepoint`] if the safepoint cannot begin (another one,
    /// begun directly on [`Runtime::safepoints`], is in progress, or the
    /// calling thread is a mutator in managed code);
    /// [`GcError::InsideCollection`] if called from an binding callback
    /// or from inside another `run_at_safepoint` of this runtime.
    pub fn run_at_safepoint<R>(
        &self,
        name: &'static str,
        op: impl FnOnce() -> R,
    ) -> Result<R, GcError> {
        let inner = &*self.inner;
        if reentry::inside(inner) {
            return Err(GcError::InsideCollection);
        }
        let _gc = inner.gc.lock();
        let guard = inner.safepoints.begin(name).map_err(GcError::Safepoint)?;
        inner.log.safepoints(&inner.safepoints);
        let result = {
            let _inside = reentry::enter(inner);
            op()
        };
        guard.end();
        inner.log.safepoints(&inner.safepoints);
        Ok(result)
    }

    /// The report: gc,stats, collections, safepoints, metaspace, NMT summary
    /// and the annotated OS memory map.
    pub fn report(&self) -> Report {
        Report::collect(self)
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

    /// The heap, read-only (only the collector frees its pages).
    pub fn heap(&self) -> HeapView<'_> {
        HeapView::new(&self.inner.heap)
    }

    /// The address ranges the runtime reserved itself: the heap, the class
    /// space and the non-class metaspace (first, in that order), then each
    /// space's lazily committed side tables. None of it is mapped any more
    /// once the runtime is dropped.
    pub fn reserved_ranges(&self) -> Vec<hotmem_os::MemRange> {
        use hotmem_chunk::MetadataType;
        let spaces =
            [MetadataType::Class, MetadataType::NonClass].map(|ty| self.inner.metaspace.space(ty));
        let mut ranges = vec![self.inner.heap.reserved()];
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
        &self.inner.partitions
    }

    /// How the NUMA side was set up.
    pub fn numa(&self) -> &NumaSummary {
        &self.inner.numa
    }

    /// The number of GC workers.
    pub fn gc_workers(&self) -> usize {
        self.inner.gc_worker_count
    }

    /// Totals over every collection so far.
    pub fn gc_totals(&self) -> GcTotals {
        self.inner.gc_record.lock().totals.clone()
    }

    /// What the mutators' thread-local allocation buffers did so far.
    pub fn tlab_stats(&self) -> TlabStats {
        self.inner.tlabs.stats()
    }

    /// The configuration the runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}
