//! Typed configuration of a [`Runtime`](crate::Runtime): what it is built
//! from (made by a [`RuntimeBuilder`](crate::RuntimeBuilder)).

use crate::gc::{CollectorMode, Generations, HeapSizing, RootTableVisit, Tlabs, YoungInFull};
use crate::log::LogConfig;
use hotmem_nmt::Level;
use hotmem_page::{CacheMode, MediumPageMode};
use hotmem_safepoint::Strategy;
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

/// Everything a [`Runtime`](crate::Runtime) is built from, but the binding.
/// Made by [`RuntimeBuilder`](crate::RuntimeBuilder).
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    pub(crate) heap_max: usize,
    pub(crate) medium_page_mode: MediumPageMode,
    pub(crate) medium_page_size: Option<usize>,
    pub(crate) page_cache: CacheMode,
    pub(crate) class_space: usize,
    pub(crate) nonclass_space: usize,
    pub(crate) nmt: Level,
    pub(crate) numa: NumaConfig,
    pub(crate) gc_workers: Option<usize>,
    pub(crate) concurrent_gc_workers: Option<usize>,
    pub(crate) safepoint_strategy: Strategy,
    pub(crate) fragmentation_limit: f64,
    pub(crate) uncommit_delay: Duration,
    pub(crate) log: LogConfig,
    pub(crate) tlabs: Tlabs,
    pub(crate) generations: Generations,
    pub(crate) heap_sizing: HeapSizing,
    pub(crate) soft_max_heap: Option<usize>,
    pub(crate) gc_time_limit: f64,
    pub(crate) collector: CollectorMode,
    pub(crate) root_table_visit: RootTableVisit,
    pub(crate) young_in_full: YoungInFull,
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

    /// When collections run and how far the heap grows between them.
    pub fn heap_sizing(&self) -> HeapSizing {
        self.heap_sizing
    }

    /// Which collector runs.
    pub fn collector(&self) -> CollectorMode {
        self.collector
    }

    /// Where a concurrent collector visits the root tables.
    pub fn root_table_visit(&self) -> RootTableVisit {
        self.root_table_visit
    }

    /// When a generational concurrent collector runs young cycles inside a
    /// full cycle's marking.
    pub fn young_in_full(&self) -> YoungInFull {
        self.young_in_full
    }

    /// How many GC workers a concurrent phase runs on while no allocation
    /// stalls, if set ([`RuntimeBuilder::concurrent_gc_workers`](crate::RuntimeBuilder::concurrent_gc_workers)).
    pub fn concurrent_gc_workers(&self) -> Option<usize> {
        self.concurrent_gc_workers
    }
}

/// The smallest heap the runtime accepts: room for a few pages of each size.
pub const MIN_HEAP: usize = 16 << 20;
