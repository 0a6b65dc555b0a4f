//! Typed configuration of a [`Runtime`](crate::Runtime).

use crate::collector::{Collect, Collector};
use crate::log::LogConfig;
use crate::{Binding, BuildError, Generations, Runtime, Tlabs};
use hotmem_nmt::Level;
use hotmem_page::MediumPageMode;
use hotmem_safepoint::Strategy;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Where the runtime's NUMA topology comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NumaConfig {
    /// The machine's topology, detected by hwloc. Without the `numa`
    /// feature: one partition and unbound workers.
    #[default]
    Detect,
    /// No NUMA awareness: one heap partition, unbound GC workers.
    Off,
    /// An hwloc synthetic description such as `"pack:2 numa:1 core:4 pu:1"`,
    /// to model a multi-node machine anywhere. Memory binding cannot reach
    /// the OS then, and worker bindings are recorded instead of made.
    Synthetic(String),
}

/// Everything a [`Runtime`] is built from. Made by [`RuntimeBuilder`].
#[derive(Clone)]
pub struct RuntimeConfig {
    pub(crate) heap_max: usize,
    pub(crate) medium_page_mode: MediumPageMode,
    pub(crate) medium_page_size: Option<usize>,
    pub(crate) class_space: usize,
    pub(crate) nonclass_space: usize,
    pub(crate) nmt: Level,
    pub(crate) numa: NumaConfig,
    pub(crate) gc_workers: Option<usize>,
    pub(crate) safepoint_strategy: Strategy,
    pub(crate) fragmentation_limit: f64,
    pub(crate) uncommit_delay: Duration,
    pub(crate) log: LogConfig,
    pub(crate) tlabs: Tlabs,
    pub(crate) generations: Generations,
    /// The collector monomorphized for the binding, type-erased: one
    /// virtual call per collection, none per object.
    pub(crate) collector: Option<Arc<dyn Collect>>,
}

impl fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("heap_max", &self.heap_max)
            .field("medium_page_mode", &self.medium_page_mode)
            .field("medium_page_size", &self.medium_page_size)
            .field("class_space", &self.class_space)
            .field("nonclass_space", &self.nonclass_space)
            .field("nmt", &self.nmt)
            .field("numa", &self.numa)
            .field("gc_workers", &self.gc_workers)
            .field("safepoint_strategy", &self.safepoint_strategy)
            .field("fragmentation_limit", &self.fragmentation_limit)
            .field("uncommit_delay", &self.uncommit_delay)
            .field("log", &self.log)
            .field("tlabs", &self.tlabs)
            .field("generations", &self.generations)
            .field("binding", &self.collector.is_some())
            .finish()
    }
}

impl RuntimeConfig {
    /// The maximum heap capacity in bytes.
    pub fn heap_max(&self) -> usize {
        self.heap_max
    }

    /// The NUMA configuration.
    pub fn numa(&self) -> &NumaConfig {
        &self.numa
    }

    /// The native memory tracking level.
    pub fn nmt(&self) -> Level {
        self.nmt
    }

    /// How mutators allocate small young objects.
    pub fn tlabs(&self) -> Tlabs {
        self.tlabs
    }

    /// Whether collections split young and old objects.
    pub fn generations(&self) -> Generations {
        self.generations
    }
}

/// Builds a [`Runtime`]. Every setting has a default; `build` checks them
/// all and returns a typed error for a bad one.
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    config: RuntimeConfig,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            config: RuntimeConfig {
                heap_max: 256 << 20,
                medium_page_mode: MediumPageMode::Synchronized,
                medium_page_size: None,
                class_space: 16 << 20,
                nonclass_space: 32 << 20,
                nmt: Level::Summary,
                numa: NumaConfig::Detect,
                gc_workers: None,
                safepoint_strategy: Strategy::WaitBarrier,
                fragmentation_limit: 0.25,
                uncommit_delay: Duration::from_secs(300),
                log: LogConfig::new(),
                tlabs: Tlabs::DEFAULT,
                generations: Generations::Single,
                collector: None,
            },
        }
    }
}

/// The smallest heap the runtime accepts: room for a few pages of each size.
pub const MIN_HEAP: usize = 16 << 20;

impl RuntimeBuilder {
    /// The defaults: a 256 MiB heap with synchronized medium pages, 16 MiB of
    /// class space and 32 MiB of non-class metaspace, NMT at summary level,
    /// the detected NUMA topology, GC workers by the 60% heuristic, the
    /// wait-barrier safepoint strategy.
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

    /// Cached heap pages unused this long are uncommitted after a collection.
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

    /// The embedder's [`Binding`]: how big its objects are, where their
    /// references are, where its roots are. The runtime's collector is
    /// compiled for `B` here (static dispatch on every per-object path) and
    /// stored behind one type-erased pointer, so [`Runtime`] stays a plain,
    /// cheap handle. Without a binding the runtime allocates but cannot
    /// collect.
    pub fn binding<B: Binding>(mut self, binding: Arc<B>) -> Self {
        self.config.collector = Some(Arc::new(Collector::new(binding)));
        self
    }

    /// Checks the configuration and builds the runtime.
    ///
    /// # Errors
    /// [`BuildError::Config`] for a setting out of range; the heap,
    /// metaspace, topology or worker errors of the parts.
    pub fn build(self) -> Result<Runtime, BuildError> {
        self.validate()?;
        Runtime::from_config(self.config)
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
        if c.gc_workers == Some(0) {
            return bad("gc_workers must be at least 1".into());
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
