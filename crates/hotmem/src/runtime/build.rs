//! Building a runtime: the parts made from one configuration and wired
//! together.

use super::Runtime;
use super::config::RuntimeConfig;
use super::gc_thread::GcThread;
use super::inner::Inner;
use super::numa::{NumaParts, numa_parts, record_worker_stacks};
use crate::error::BuildError;
use crate::gc::barriers::{BarrierHeap, BarrierSet};
use crate::gc::concurrent::ConcurrentState;
use crate::gc::core::gc_pages::GcPages;
use crate::gc::{
    self, BudgetedPages, CollectorFactory, GcHeap, GcRecord, GcTotals, GcWorkers, Moves,
    NonMovingSpace, Poison, Sizing, SoftMax, TlabShared, TlabSizing, Uncommitter,
};
use crate::log::Logger;
use crate::pause_gate::PauseGate;
use crate::roots::RootRegistry;
use crate::weak::WeakRegistry;
use hotmem_chunk::{Metaspace, MetaspaceConfig, SpaceConfig};
use hotmem_nmt::Tracker;
use hotmem_os::Memory;
use hotmem_page::{HeapConfig, MediumPageMode, ObjectAllocator, PageAllocator, StatSampler};
use hotmem_safepoint::Coordinator;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Instant;

impl Runtime {
    /// Builds the runtime `config` describes, collecting with the collector
    /// it chose compiled for `binding` (none: the runtime allocates but
    /// cannot collect).
    pub(crate) fn from_config(
        config: RuntimeConfig,
        binding: Option<Arc<dyn CollectorFactory>>,
    ) -> Result<Runtime, BuildError> {
        let log = Logger::new(&config.log, Instant::now());
        let nmt = Arc::new(Tracker::new(config.nmt));
        let memory = Memory::with_observer(nmt.clone());
        let parts = numa_parts(&config, &nmt)?;
        let pages = Arc::new(heap(&config, &memory, &parts)?);
        let metaspace = Metaspace::new(
            &memory,
            MetaspaceConfig {
                class: SpaceConfig::with_size(config.class_space),
                non_class: SpaceConfig::with_size(config.nonclass_space),
            },
        )
        .map_err(BuildError::Metaspace)?;
        let worker_stacks = record_worker_stacks(&parts.workers, &nmt);
        let (gc, barriers, concurrent) =
            gc_heap(&config, &memory, pages, parts.partitions, parts.workers);
        let collector = binding.map(|b| {
            b.make(
                config.collector,
                config.root_table_visit,
                config.young_in_full,
                &barriers,
                concurrent.as_ref(),
            )
        });
        let inner = Inner {
            gc,
            collector,
            barriers,
            concurrent,
            worker_stacks,
            log,
            safepoints: Coordinator::new(config.safepoint_strategy),
            next_partition: AtomicUsize::new(0),
            gc_thread: GcThread::default(),
            numa: parts.summary,
            #[cfg(feature = "numa")]
            topology: parts.topology,
            metaspace,
            memory,
            nmt,
            config,
        };
        Ok(Runtime {
            inner: Arc::new(inner),
        })
    }
}

/// The page allocator: its partitions on the NUMA nodes, their memory
/// bound there when the topology is real.
fn heap(
    config: &RuntimeConfig,
    memory: &Memory,
    parts: &NumaParts,
) -> Result<PageAllocator, BuildError> {
    let mut heap_config = HeapConfig::new(config.heap_max)
        .partitions(&parts.partitions)
        .uncommit_delay(config.uncommit_delay)
        .cache_mode(config.page_cache);
    if let Some(m) = config.medium_page_size {
        heap_config = heap_config.medium_page_size(m);
    }
    if let Some(b) = parts.binder.clone() {
        heap_config = heap_config.binder(b);
    }
    PageAllocator::new(memory, heap_config).map_err(BuildError::Heap)
}

/// The collected heap around `pages` (allocators, buffers, roots,
/// workers), the collector's side of the barriers its constraints name,
/// and a concurrent collector's shared state.
fn gc_heap(
    config: &RuntimeConfig,
    memory: &Memory,
    pages: Arc<PageAllocator>,
    partitions: Vec<hotmem_page::NodeId>,
    workers: GcWorkers,
) -> (GcHeap, BarrierSet, Option<Arc<ConcurrentState>>) {
    let constraints = gc::constraints(config.collector, config.generations);
    let soft = config
        .soft_max_heap
        .map(|bytes| SoftMax::new(bytes, config.gc_time_limit, Instant::now()));
    let sizing = Sizing::new(config.heap_sizing, config.heap_max, soft);
    let reserved = pages.reserved();
    let sizes = pages.page_sizes();
    let barriers = BarrierSet::new(
        constraints.barriers,
        BarrierHeap {
            base: reserved.start().get(),
            len: reserved.len(),
            small_page: sizes.small_page(),
            medium_object_max: sizes.medium_object_max(),
        },
    );
    let concurrent = constraints
        .concurrent
        .then(|| Arc::new(ConcurrentState::new(config.concurrent_gc_workers)));
    // One small page of relocation targets for a collector that moves
    // objects while the mutators run.
    let reserve = match constraints.moves {
        Moves::WhileMutatorsRun => pages.page_sizes().small_page(),
        Moves::InPauses | Moves::Never => 0,
    };
    let new_pages = barriers.concurrent.as_ref().map(|c| c.new_pages.clone());
    let budgeted = BudgetedPages::new(
        pages.clone(),
        config.heap_max,
        sizing.initial_budget(),
        new_pages.clone(),
        reserve,
    );
    let mutator_alloc = ObjectAllocator::new(Arc::new(budgeted), config.medium_page_mode);
    let sizes = mutator_alloc.page_sizes();
    let tlabs = TlabShared::new(TlabSizing::new(config.tlabs, sizes.small_object_max()));
    let gate = Arc::new(PauseGate::default());
    let roots = RootRegistry::default();
    let weak = WeakRegistry::new(
        barriers
            .concurrent
            .clone()
            .map(|c| c as Arc<dyn crate::weak::KeepAlive>),
        &gate,
        roots.global_table(),
    );
    let heap = GcHeap {
        memory: memory.clone(),
        mutator_alloc,
        non_moving: NonMovingSpace::new(),
        // GC workers share their relocation targets; synchronized so that
        // workers do not race for the medium target page. Their pages are
        // new to a marking that runs meanwhile (a full cycle's, while a
        // young cycle inside it relocates).
        gc_alloc: ObjectAllocator::new(
            GcPages::new(pages.clone(), new_pages),
            MediumPageMode::Synchronized,
        ),
        tlabs,
        sizing,
        roots,
        weak,
        gate,
        poison: Poison::default(),
        partitions,
        worker_count: workers.count(),
        workers: Mutex::new(workers),
        record: Mutex::new(GcRecord {
            sampler: StatSampler::new(pages.counters(), Instant::now()),
            last: None,
            totals: GcTotals::default(),
        }),
        epoch: AtomicU64::new(0),
        uncommitter: Uncommitter::new(config.uncommit_delay),
        fragmentation_limit: config.fragmentation_limit,
        pages,
    };
    (heap, barriers, concurrent)
}
