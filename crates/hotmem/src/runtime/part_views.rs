//! Read-only views of the runtime's parts.
//!
//! The runtime owns its heap, metaspaces and native memory tracker: only the
//! collector frees heap pages, only a class loader's arenas return their
//! chunks, and only the runtime's own memory reports reservations to NMT.
//! What [`Runtime`](crate::Runtime) hands out for inspection are these views,
//! which can read everything and change nothing.
//!
//! ```
//! # fn f(rt: &hotmem::Runtime) {
//! // What a view can do:
//! let used = rt.heap().usage().used;
//! let pages = rt.heap().page_infos();
//! let committed = rt.metaspace().space(hotmem::MetadataType::Class).committed_bytes();
//! let total = rt.nmt().summary().total();
//! # }
//! ```
//!
//! ```compile_fail
//! # fn f(rt: &hotmem::Runtime) {
//! // A view has no way to free pages: only the collector does that.
//! let pages = rt.heap().pages();
//! # }
//! ```
//!
//! ```compile_fail
//! # fn f(rt: &hotmem::Runtime) {
//! // Chunks go back to a metaspace only from the arena that owns them.
//! let space = rt.metaspace().space(hotmem::MetadataType::Class);
//! let _ = space.get_chunk(hotmem::chunk::ChunkLevel::ROOT);
//! # }
//! ```
//!
//! ```compile_fail
//! # fn f(rt: &hotmem::Runtime) {
//! // NMT is recorded by the runtime's memory, not by callers.
//! let _ = rt.nmt().release(rt.reserved_ranges()[0]);
//! # }
//! ```

use crate::gc::core::meta::OldPages;
use hotmem_chunk::{
    ChunkManager, Geometry, MetadataType, Metaspace, MetaspaceStatistics, SpaceConfig, SpaceMap,
    SpaceStatistics, VerifyError,
};
use hotmem_nmt::{
    AnnotatedMap, Baseline, CallStack, DetailDiffReport, DetailReport, Level, MapError, MapTotals,
    Region, Scale, StackId, Summary, SummaryDiffReport, SummaryReport, Totals, TrackError, Tracker,
};
use hotmem_os::{Address, MemRange, MemTag, OsError};
use hotmem_page::{Age, CounterSnapshot, HeapUsage, NodeId, PageAllocator, PageInfo, PageSizes};
use std::fmt;
use std::sync::Arc;

/// The heap, read-only: sizes, usage, pages as plain data, counters.
#[derive(Clone, Copy)]
pub struct HeapView<'a> {
    heap: &'a PageAllocator,
    /// Which pages the generational collector takes as old.
    old: Option<&'a OldPages>,
}

impl<'a> HeapView<'a> {
    pub(crate) fn new(heap: &'a PageAllocator, old: Option<&'a OldPages>) -> Self {
        HeapView { heap, old }
    }

    /// The page sizes (small, medium, and the object size limits).
    pub fn page_sizes(&self) -> PageSizes {
        self.heap.page_sizes()
    }

    /// The partitions' nodes, in partition order.
    pub fn nodes(&self) -> &'a [NodeId] {
        self.heap.nodes()
    }

    /// The address space reserved for the heap.
    pub fn reserved(&self) -> MemRange {
        self.heap.reserved()
    }

    /// Every live page as plain data, by address.
    ///
    /// With [`Generations::YoungAndOld`](crate::Generations::YoungAndOld),
    /// a page's `age` is the one the collector takes it for: the pages
    /// allocated since the last collection are [`Age::EDEN`], and a young
    /// page that a collection kept where it was (promoted in place),
    /// like a page of a large object, is [`Age::OLD`], although the page
    /// allocator keeps the age the page was allocated with. Without
    /// generations the ages are the allocator's.
    pub fn page_infos(&self) -> Vec<PageInfo> {
        let mut pages = self.heap.page_infos();
        if let Some(old) = self.old {
            for p in pages.iter_mut().filter(|p| p.age == Age::EDEN) {
                if old.is_old(p.start) {
                    p.age = Age::OLD;
                }
            }
        }
        pages
    }

    /// Capacity, used and cached memory, overall and per partition.
    pub fn usage(&self) -> HeapUsage {
        self.heap.usage()
    }

    /// Committed memory (pages and page cache): what NMT shows as
    /// committed Java Heap.
    pub fn committed_bytes(&self) -> usize {
        self.heap.committed_bytes()
    }

    /// Physical memory the heap's memfds hold, as the kernel counts it.
    ///
    /// # Errors
    /// The OS error of `fstat`.
    pub fn physical_committed_bytes(&self) -> Result<usize, OsError> {
        self.heap.physical_committed_bytes()
    }

    /// The allocator's counters (totals since creation).
    pub fn counters(&self) -> CounterSnapshot {
        self.heap.counters()
    }

    /// Checks every internal invariant of the heap.
    ///
    /// # Panics
    /// When an invariant does not hold (a bug in hotmem).
    pub fn check_invariants(&self) {
        self.heap.check_invariants()
    }
}

impl fmt::Debug for HeapView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapView")
            .field("reserved", &self.reserved())
            .field("usage", &self.usage())
            .finish()
    }
}

/// Both metaspaces, read-only: statistics, maps, verification.
#[derive(Clone, Copy)]
pub struct MetaspaceView<'a> {
    metaspace: &'a Metaspace,
}

impl<'a> MetaspaceView<'a> {
    pub(crate) fn new(metaspace: &'a Metaspace) -> Self {
        MetaspaceView { metaspace }
    }

    /// One of the two spaces.
    pub fn space(&self, ty: MetadataType) -> SpaceView<'a> {
        SpaceView {
            space: self.metaspace.space(ty),
        }
    }

    /// `jcmd VM.metaspace`-style statistics of both spaces.
    pub fn statistics(&self) -> MetaspaceStatistics {
        self.metaspace.statistics()
    }

    /// Checks both spaces' invariants.
    ///
    /// # Errors
    /// The first violation found (a bug in hotmem).
    pub fn verify(&self) -> Result<(), VerifyError> {
        self.metaspace.verify()
    }
}

impl fmt::Debug for MetaspaceView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaspaceView")
            .field("class", &self.space(MetadataType::Class))
            .field("non_class", &self.space(MetadataType::NonClass))
            .finish()
    }
}

/// One metaspace (class or non-class), read-only.
#[derive(Clone, Copy)]
pub struct SpaceView<'a> {
    space: &'a ChunkManager,
}

impl SpaceView<'_> {
    /// Class or non-class.
    pub fn metadata_type(&self) -> MetadataType {
        self.space.metadata_type()
    }

    /// The configuration the space was created with.
    pub fn config(&self) -> &SpaceConfig {
        self.space.config()
    }

    /// Root chunk, granule and level sizes.
    pub fn geometry(&self) -> Geometry {
        self.space.geometry()
    }

    /// The reserved address range.
    pub fn range(&self) -> MemRange {
        self.space.range()
    }

    /// Whether `addr` lies in the space.
    pub fn contains(&self, addr: Address) -> bool {
        self.space.contains(addr)
    }

    /// Reserved bytes.
    pub fn reserved_bytes(&self) -> usize {
        self.space.reserved_bytes()
    }

    /// Committed bytes.
    pub fn committed_bytes(&self) -> usize {
        self.space.committed_bytes()
    }

    /// Chunks and bytes per level, free and in use.
    pub fn statistics(&self) -> SpaceStatistics {
        self.space.statistics()
    }

    /// The space's map (one cell per granule), printable.
    pub fn map(&self) -> SpaceMap {
        self.space.map()
    }

    /// The space's map with one cell per `cell_bytes` (rounded up to a
    /// power of two of at least the smallest chunk), e.g. one per commit
    /// granule for a picture with a pixel column per granule.
    pub fn map_with_cell(&self, cell_bytes: usize) -> SpaceMap {
        self.space.map_with_cell(cell_bytes)
    }

    /// Checks the space's invariants.
    ///
    /// # Errors
    /// The first violation found (a bug in hotmem).
    pub fn verify(&self) -> Result<(), VerifyError> {
        self.space.verify()
    }
}

impl fmt::Debug for SpaceView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpaceView")
            .field("type", &self.metadata_type())
            .field("range", &self.range())
            .field("committed", &self.committed_bytes())
            .finish()
    }
}

/// The runtime's native memory tracker, read-only: totals, reports,
/// baselines and diffs, the annotated OS map. Cheap to clone, and it
/// outlives the runtime (to check that everything was released).
#[derive(Clone)]
pub struct NmtView {
    tracker: Arc<Tracker>,
}

impl NmtView {
    pub(crate) fn new(tracker: Arc<Tracker>) -> Self {
        NmtView { tracker }
    }

    /// The level it records at.
    pub fn level(&self) -> Level {
        self.tracker.level()
    }

    /// The name of `tag`.
    pub fn tag_name(&self, tag: MemTag) -> Option<&str> {
        self.tracker.tag_name(tag)
    }

    /// Reserved and committed bytes of `tag` now.
    pub fn totals(&self, tag: MemTag) -> Totals {
        self.tracker.totals(tag)
    }

    /// Every tag's totals, consistent with each other.
    pub fn summary(&self) -> Summary {
        self.tracker.summary()
    }

    /// The summary report (`jcmd VM.native_memory summary`).
    pub fn summary_report(&self, scale: Scale) -> SummaryReport<'_> {
        self.tracker.summary_report(scale)
    }

    /// Writes the summary report without allocating.
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_summary(&self, w: &mut dyn fmt::Write, scale: Scale) -> fmt::Result {
        self.tracker.write_summary(w, scale)
    }

    /// A snapshot to diff against later.
    pub fn baseline(&self) -> Baseline {
        self.tracker.baseline()
    }

    /// The summary diff against `baseline`.
    pub fn summary_diff_report<'a>(
        &'a self,
        baseline: &'a Baseline,
        scale: Scale,
    ) -> SummaryDiffReport<'a> {
        self.tracker.summary_diff_report(baseline, scale)
    }

    /// The detail report: regions with the stacks that reserved and
    /// committed them.
    pub fn detail_report(&self, scale: Scale) -> DetailReport<'_> {
        self.tracker.detail_report(scale)
    }

    /// The detail diff against `baseline`, by call site.
    pub fn detail_diff_report<'a>(
        &'a self,
        baseline: &'a Baseline,
        scale: Scale,
    ) -> DetailDiffReport<'a> {
        self.tracker.detail_diff_report(baseline, scale)
    }

    /// Every tracked region.
    pub fn regions(&self) -> Vec<Region> {
        self.tracker.regions()
    }

    /// The tracked regions that overlap `range`, clipped to it.
    pub fn regions_in(&self, range: MemRange) -> Vec<Region> {
        self.tracker.regions_in(range)
    }

    /// The OS memory map annotated with what NMT tracks.
    ///
    /// # Errors
    /// If `/proc/self/smaps` or `/proc/self/pagemap` cannot be read.
    pub fn annotated_map(&self, scale: Scale) -> std::io::Result<AnnotatedMap<'_>> {
        self.tracker.annotated_map(scale)
    }

    /// Writes the annotated map into `w`.
    ///
    /// # Errors
    /// [`MapError`] if `/proc` cannot be read or `w` fails.
    pub fn write_annotated_map(
        &self,
        w: &mut dyn fmt::Write,
        scale: Scale,
    ) -> Result<MapTotals, MapError> {
        self.tracker.write_annotated_map(w, scale)
    }

    /// Distinct call stacks stored (detail level).
    pub fn stack_count(&self) -> usize {
        self.tracker.stack_count()
    }

    /// The stack with id `id`.
    pub fn stack(&self, id: StackId) -> Option<CallStack> {
        self.tracker.stack(id)
    }

    /// Events the tracker rejected, and the last such error (nonzero is a
    /// bug: the runtime reports every reservation exactly once).
    pub fn rejected_events(&self) -> (u64, Option<TrackError>) {
        self.tracker.rejected_events()
    }
}

impl fmt::Debug for NmtView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NmtView")
            .field("level", &self.level())
            .field("total", &self.summary().total())
            .finish()
    }
}
