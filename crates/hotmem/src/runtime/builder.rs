//! [`RuntimeBuilder`]: every setting with its default, checked at build.

use super::Runtime;
use super::config::{MIN_HEAP, NumaConfig, RuntimeConfig};
use crate::BuildError;
use crate::gc::{
    self, CollectorFactory, CollectorMode, DEFAULT_TIME_LIMIT_PERCENT, ForBinding, Generations,
    HeapSizing, RootTableVisit, Tlabs, YoungInFull, soft_max,
};
use crate::log::LogConfig;
use crate::vm::Binding;
use hotmem_nmt::Level;
use hotmem_page::{CacheMode, MediumPageMode};
use hotmem_safepoint::Strategy;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`Runtime`]. Every setting has a default; `build` checks them
/// all and returns a typed error for a bad one.
#[derive(Clone)]
pub struct RuntimeBuilder {
    config: RuntimeConfig,
    /// The binding, type-erased: at build it makes the collector the
    /// configuration chose, monomorphized for it (one virtual call per
    /// collection, none per object).
    binding: Option<Arc<dyn CollectorFactory>>,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("config", &self.config)
            .field("binding", &self.binding.is_some())
            .finish()
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            config: RuntimeConfig {
                heap_max: 256 << 20,
                medium_page_mode: MediumPageMode::Synchronized,
                medium_page_size: None,
                page_cache: CacheMode::Mapped,
                class_space: 16 << 20,
                nonclass_space: 32 << 20,
                nmt: Level::Summary,
                numa: NumaConfig::Detect,
                gc_workers: None,
                concurrent_gc_workers: None,
                safepoint_strategy: Strategy::WaitBarrier,
                fragmentation_limit: 0.25,
                uncommit_delay: Duration::from_secs(300),
                log: LogConfig::new(),
                tlabs: Tlabs::DEFAULT,
                generations: Generations::default(),
                heap_sizing: HeapSizing::default(),
                soft_max_heap: None,
                gc_time_limit: DEFAULT_TIME_LIMIT_PERCENT,
                collector: CollectorMode::default(),
                root_table_visit: RootTableVisit::Concurrent,
                young_in_full: YoungInFull::default(),
            },
            binding: None,
        }
    }
}

impl RuntimeBuilder {
    /// The defaults: the concurrent collector with young and old
    /// generations ([`CollectorMode::Concurrent`],
    /// [`Generations::YoungAndOld`]), a 256 MiB heap with synchronized
    /// medium pages, 16 MiB of class space and 32 MiB of non-class
    /// metaspace, NMT at summary level, the detected NUMA topology, GC
    /// workers by the 60% heuristic, the wait-barrier safepoint strategy.
    pub fn new() -> Self {
        Self::default()
    }

    /// The maximum heap capacity (at least [`MIN_HEAP`]).
    pub fn heap_max(mut self, bytes: usize) -> Self {
        self.config.heap_max = bytes;
        self
    }

    /// How the shared medium page is installed when it fills.
    pub fn medium_page_mode(mut self, mode: MediumPageMode) -> Self {
        self.config.medium_page_mode = mode;
        self
    }

    /// Medium pages of this size instead of the one derived from the heap.
    pub fn medium_page_size(mut self, bytes: usize) -> Self {
        self.config.medium_page_size = Some(bytes);
        self
    }

    /// How the heap caches free memory: the mapped cache (the default) or
    /// the page cache it replaced.
    pub fn page_cache(mut self, mode: CacheMode) -> Self {
        self.config.page_cache = mode;
        self
    }

    /// Sizes of the class space and of the non-class metaspace.
    pub fn metaspace(mut self, class_space: usize, nonclass_space: usize) -> Self {
        self.config.class_space = class_space;
        self.config.nonclass_space = nonclass_space;
        self
    }

    /// Native memory tracking level.
    pub fn nmt(mut self, level: Level) -> Self {
        self.config.nmt = level;
        self
    }

    /// Where the NUMA topology comes from.
    pub fn numa(mut self, numa: NumaConfig) -> Self {
        self.config.numa = numa;
        self
    }

    /// The number of GC workers (default: the parallel-worker heuristic,
    /// never fewer than NUMA nodes).
    pub fn gc_workers(mut self, workers: usize) -> Self {
        self.config.gc_workers = Some(workers);
        self
    }

    /// How many of the GC workers a concurrent collector's phases
    /// (marking, relocation) run on while no allocation stalls, as ZGC's
    /// `ConcGCThreads` (default: a quarter of the CPUs, at least one).
    /// More finish a cycle sooner and take more CPUs from the mutators
    /// meanwhile. Never more than the GC workers (see
    /// [`RuntimeBuilder::gc_workers`]); while an allocation stalls, the
    /// phases take every worker.
    ///
    /// ```
    /// use hotmem::Runtime;
    /// let rt = Runtime::builder().gc_workers(4).concurrent_gc_workers(2).build()?;
    /// assert_eq!(rt.config().concurrent_gc_workers(), Some(2));
    /// # Ok::<(), hotmem::BuildError>(())
    /// ```
    pub fn concurrent_gc_workers(mut self, workers: usize) -> Self {
        self.config.concurrent_gc_workers = Some(workers);
        self
    }

    /// How safepoints stop the mutators.
    pub fn safepoint_strategy(mut self, strategy: Strategy) -> Self {
        self.config.safepoint_strategy = strategy;
        self
    }

    /// A page is evacuated when at least this fraction of it is garbage
    /// (ZGC's fragmentation limit; default 0.25). Between 0 and 1.
    pub fn fragmentation_limit(mut self, fraction: f64) -> Self {
        self.config.fragmentation_limit = fraction;
        self
    }

    /// Cached heap pages unused this long go back to the OS (default 300
    /// s, ZGC's): at each collection, and from the first one on by a
    /// thread of the runtime's that looks every quarter of the delay, so
    /// that an idle VM's heap shrinks too.
    pub fn uncommit_delay(mut self, delay: Duration) -> Self {
        self.config.uncommit_delay = delay;
        self
    }

    /// The GC log: which tag sets at which level go to which output (see
    /// [`crate::log`]; default: none).
    pub fn log(mut self, log: LogConfig) -> Self {
        self.config.log = log;
        self
    }

    /// Thread-local allocation buffers for mutators' small young objects
    /// (default: [`Tlabs::DEFAULT`], 64 KiB).
    pub fn tlabs(mut self, tlabs: Tlabs) -> Self {
        self.config.tlabs = tlabs;
        self
    }

    /// Whether collections split young and old objects (default:
    /// [`Generations::Single`]). See [`Generations::YoungAndOld`] for what
    /// it asks of the embedder.
    pub fn generations(mut self, generations: Generations) -> Self {
        self.config.generations = generations;
        self
    }

    /// When collections run and how far the heap grows between them
    /// (default: [`HeapSizing::Adaptive`], which starts at 8 MiB and grows
    /// to twice what survives; [`HeapSizing::Balanced`] keeps a headroom
    /// above the live set from the allocation rate and the collections'
    /// lengths, for less memory; [`HeapSizing::Maximum`] collects only when
    /// the maximum is exhausted).
    pub fn heap_sizing(mut self, sizing: HeapSizing) -> Self {
        self.config.heap_sizing = sizing;
        self
    }

    /// A heap size to stay under (ZGC's soft maximum; default none): the
    /// sizing policy keeps its target at most this while collections take
    /// no more than [`RuntimeBuilder::gc_time_limit`] of the time, and
    /// sizes up to [`RuntimeBuilder::heap_max`] only when they would take
    /// more (see [`Runtime::heap_target`]). At most `heap_max`.
    pub fn soft_max_heap(mut self, bytes: usize) -> Self {
        self.config.soft_max_heap = Some(bytes);
        self
    }

    /// The share of wall time, in percent, collections may take before a
    /// soft maximum ([`RuntimeBuilder::soft_max_heap`]) is set aside
    /// (default 50, Go's GC CPU limit; 100 never sets it aside). Measured
    /// over the last second as a share of the machine: pauses whole, and
    /// a concurrent cycle's CPU time divided by the CPUs.
    pub fn gc_time_limit(mut self, percent: f64) -> Self {
        self.config.gc_time_limit = percent;
        self
    }

    /// Which collector runs (default: [`CollectorMode::Concurrent`], which
    /// says what it asks of the embedder).
    pub fn collector(mut self, mode: CollectorMode) -> Self {
        self.config.collector = mode;
        self
    }

    /// Where a concurrent collector visits the handle tables and the
    /// binding's root tables (default: [`RootTableVisit::Concurrent`],
    /// after its pauses).
    pub fn root_table_visit(mut self, visit: RootTableVisit) -> Self {
        self.config.root_table_visit = visit;
        self
    }

    /// When a generational concurrent collector runs young cycles inside a
    /// full cycle's marking (default: [`YoungInFull::Never`]; with
    /// [`YoungInFull::Paced`], when one is due by the young pacing or an
    /// allocation stalls, so that the young garbage made while a full cycle
    /// marks is reclaimed before it ends). No effect on the other
    /// collectors.
    pub fn young_in_full(mut self, when: YoungInFull) -> Self {
        self.config.young_in_full = when;
        self
    }

    /// The embedder's [`Binding`]: how big its objects are, where their
    /// references are, where its roots are. The runtime's collector is
    /// compiled for `B` here (static dispatch on every per-object path) and
    /// stored behind one type-erased pointer, so [`Runtime`] stays a plain,
    /// cheap handle. Without a binding the runtime allocates but cannot
    /// collect.
    pub fn binding<B: Binding>(mut self, binding: Arc<B>) -> Self {
        self.binding = Some(Arc::new(ForBinding(binding)));
        self
    }

    /// Checks the configuration and builds the runtime.
    ///
    /// # Errors
    /// [`BuildError::Config`] for a setting out of range; the heap,
    /// metaspace, topology or worker errors of the parts.
    pub fn build(self) -> Result<Runtime, BuildError> {
        self.validate()?;
        Runtime::from_config(self.config, self.binding)
    }

    fn validate(&self) -> Result<(), BuildError> {
        let c = &self.config;
        let bad = |why: String| Err(BuildError::Config(why));
        if c.heap_max < MIN_HEAP {
            return bad(format!(
                "heap_max {} is below the minimum of {MIN_HEAP} bytes",
                c.heap_max
            ));
        }
        if !(c.fragmentation_limit > 0.0 && c.fragmentation_limit < 1.0) {
            return bad(format!(
                "fragmentation_limit {} is not strictly between 0 and 1",
                c.fragmentation_limit
            ));
        }
        if let Err(why) = c.tlabs.validate() {
            return bad(why);
        }
        if let Err(why) = c.heap_sizing.validate() {
            return bad(why);
        }
        if let Err(why) = soft_max::validate(c.soft_max_heap, c.gc_time_limit, c.heap_max) {
            return bad(why);
        }
        // Without a binding nothing is collected: only what the collector
        // asks of the configuration is checked.
        let heals = self.binding.as_ref().is_none_or(|b| b.heals_atomically());
        if let Err(why) = gc::check(c.collector, heals) {
            return bad(why);
        }
        if c.gc_workers == Some(0) {
            return bad("gc_workers must be at least 1".into());
        }
        if c.concurrent_gc_workers == Some(0) {
            return bad("concurrent_gc_workers must be at least 1".into());
        }
        if c.class_space == 0 || c.nonclass_space == 0 {
            return bad("metaspace sizes must be positive".into());
        }
        if let NumaConfig::Synthetic(d) = &c.numa {
            if d.trim().is_empty() {
                return bad("empty synthetic topology description".into());
            }
        }
        Ok(())
    }
}
