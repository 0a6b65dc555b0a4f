//! [`LogRecord`] and [`LogEvent`]: one log line as data (serde) and as
//! text (`Display`, the unified-logging line).

use super::level::LogLevel;
use super::tags::TagSet;
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::phases::GcPhase;
use crate::gc::core::stats::{GcCause, RefStats, UpdateScope, YoungSurvival};
use crate::gc::core::workers::PhaseSummary;
use hotmem_page::StatRow;
use hotmem_safepoint::SafepointRecord;
use serde::Serialize;
use std::fmt;

/// One log line: its decorations and what happened. Serializes to JSON
/// for tools; `Display` writes the text line (see the grammar in the
/// [module docs](crate::log)).
#[derive(Clone, Debug, Serialize)]
pub struct LogRecord {
    /// Time since the runtime was built, in nanoseconds (the `[0.123s]`
    /// decoration).
    pub uptime_ns: u64,
    /// The line's level.
    pub level: LogLevel,
    /// The line's tag set.
    pub tags: TagSet,
    /// The collection the line is about (the `GC(12)` prefix), if any.
    pub gc_id: Option<u64>,
    /// What happened.
    pub event: LogEvent,
}

/// Use of one metaspace (class or non-class), in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SpaceUse {
    /// Bytes handed to class loaders.
    pub used: usize,
    /// Bytes committed.
    pub committed: usize,
    /// Bytes reserved.
    pub reserved: usize,
}

/// What a log line reports. Each variant is written under one tag set.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind")]
#[non_exhaustive]
pub enum LogEvent {
    /// `gc`, info: a collection ended.
    /// `GC(12) Pause Full (Allocation Failure) 160M->58M(256M) 4.784ms`
    Pause {
        /// Young or full.
        collection: CollectionKind,
        /// Why it ran.
        cause: GcCause,
        /// Heap bytes in use before.
        used_before: usize,
        /// Heap bytes in use after.
        used_after: usize,
        /// Heap bytes committed after (the capacity in parentheses).
        capacity: usize,
        /// Time to safepoint, nanoseconds.
        ttsp_ns: u64,
        /// The collection's work with the mutators stopped, nanoseconds.
        pause_ns: u64,
    },
    /// `gc,phases`, info: one phase of a collection.
    /// `GC(12) Mark 1.234ms (40000 objects, 2 workers)`
    Phase {
        /// Which phase.
        phase: GcPhase,
        /// Its time, nanoseconds.
        ns: u64,
        /// Objects it marked, copied or visited.
        objects: u64,
        /// Workers it ran on.
        workers: usize,
    },
    /// `gc,phases`, info: one phase of a concurrent cycle and its time.
    /// `GC(12) Pause Mark Start 0.120ms`, `GC(12) Concurrent Mark 12.345ms`
    ConcurrentPhase {
        /// A young or full cycle's phase (`Y: `, `O: `), with generations.
        generation: Option<CollectionKind>,
        /// Which phase.
        phase: GcPhase,
        /// Its time, nanoseconds.
        ns: u64,
    },
    /// `gc,phases`, info: the young cycles that ran inside a full cycle's
    /// Concurrent Mark ([`YoungInFull`](crate::YoungInFull)), each logged
    /// as a collection of its own.
    /// `GC(12) O: Young Cycles Inside Concurrent Mark: 2 (GC(13)-GC(14))`
    YoungInside {
        /// How many.
        count: u32,
        /// The first one's number (the full cycle's, plus one).
        first: u64,
    },
    /// `gc`, info: a concurrent cycle ended (ZGC's line).
    /// `GC(12) Garbage Collection (Allocation Rate) 160M->58M(256M) 14.012ms`;
    /// with generations `Minor Collection` (young) or `Major Collection`.
    Cycle {
        /// Young or full, with generations.
        generation: Option<CollectionKind>,
        /// Why it ran.
        cause: GcCause,
        /// Heap bytes in use at mark start.
        used_before: usize,
        /// Heap bytes in use at the end.
        used_after: usize,
        /// Heap bytes committed after.
        capacity: usize,
        /// The whole cycle, nanoseconds (its pauses are in `gc,phases` and
        /// `safepoint`).
        cycle_ns: u64,
    },
    /// `gc,phases`, trace: the relocation phase on the GC workers, the
    /// detail behind its info line: pages processed, workers, how many
    /// pages a worker bound to the page's NUMA node processed, binds.
    /// `GC(12) Relocate Workers: 40 pages on 2 workers, node-local 100% (real), 3 binds, 0.021ms binding`
    RelocationWorkers {
        /// The phase on the workers.
        summary: PhaseSummary,
    },
    /// `gc,phases`, info: the update of references to moved objects, and
    /// which slots it visited.
    /// `GC(12) Update References 0.934ms (remembered: 812 slots, 2 workers)`
    Update {
        /// Its time, nanoseconds.
        ns: u64,
        /// Which slots it visited besides the roots.
        scope: UpdateScope,
        /// Workers it ran on.
        workers: usize,
    },
    /// `gc,heap`, info: pages and memory after a collection.
    /// `GC(12) Heap: used 160M->58M, committed 200M, max 256M; pages 40: 10 freed empty, 5 evacuated, 0 incomplete; relocated 1234 objects 1M`
    Heap {
        /// Heap bytes in use before.
        used_before: usize,
        /// Heap bytes in use after.
        used_after: usize,
        /// Heap bytes committed (pages and page cache).
        committed: usize,
        /// The most the heap may commit.
        max_capacity: usize,
        /// Pages examined.
        pages: usize,
        /// Pages freed without copying.
        pages_freed_empty: usize,
        /// Pages evacuated.
        pages_evacuated: usize,
        /// Pages whose evacuation could not finish.
        pages_evacuation_incomplete: usize,
        /// Objects copied.
        objects_relocated: u64,
        /// Bytes copied.
        bytes_relocated: u64,
    },
    /// `gc,metaspace`, info: metaspace use at a collection.
    /// `GC(12) Metaspace: 1234K(2048K) NonClass: 1000K(1536K) Class: 234K(512K)`
    Metaspace {
        /// The class space.
        class: SpaceUse,
        /// The non-class metaspace.
        non_class: SpaceUse,
    },
    /// `gc,ref`, info: reference processing at a collection, per strength:
    /// references found, cleared, objects retained, queued; and the
    /// binding's hook.
    /// `GC(12) Reference Processing 1.234ms: weak 1000 found, 900 cleared; ephemeron 10 found, 7 retained, 3 cleared; finalizable 5 found, 5 enqueued, 20 retained; binding 1 pass(es), 0 retained; weak set 0 found, 0 cleared`
    References {
        /// What the processing found and did, and its time.
        refs: RefStats,
    },
    /// `gc,age`, info: a concurrent young cycle's survival and promotion.
    /// `GC(12) Age: young 575M live of 669M (85%), tenuring threshold 1; 287 pages promoted in place, 0 aged`
    Age {
        /// What the cycle found and did.
        survival: YoungSurvival,
    },
    /// `gc,stats`, info every 10 s and debug at every collection: one line
    /// of the page allocator's statistics table (two header lines, then one
    /// line per row).
    Stats {
        /// The text line.
        line: String,
        /// The row it shows (none for a header line).
        row: Option<StatRow>,
    },
    /// `gc`, warning: a collection failed and was undone (the heap is as
    /// it was: see [`GcError`](crate::GcError)); the runtime goes on, with
    /// full collections until one succeeds. No `GC(n)`: numbers count
    /// completed collections, and the next one takes this number.
    /// `Pause Young (Allocation Failure) failed: invalid reference 0x10 in a root: ...`
    CollectionFailed {
        /// Young or full, as asked for.
        collection: CollectionKind,
        /// Why it ran.
        cause: GcCause,
        /// The error's message.
        error: String,
    },
    /// `gc`, error: an allocation failed with
    /// [`AllocError::OutOfMemory`](crate::AllocError::OutOfMemory): the
    /// live set does not leave room for it, even after collecting.
    /// `Out Of Memory: 65536 bytes could not be allocated, used 15M, max 16M`
    OutOfMemory {
        /// Bytes asked for.
        size: usize,
        /// Heap bytes in use.
        used: usize,
        /// The most the heap may commit.
        max_capacity: usize,
    },
    /// `safepoint`, info: one safepoint ended, HotSpot's line plus the
    /// leaving phase. `Safepoint "GC", Time since last: 1 ns, Reaching
    /// safepoint: 2 ns, At safepoint: 3 ns, Leaving safepoint: 4 ns, Total: 9 ns`
    Safepoint {
        /// Its timings.
        record: SafepointRecord,
    },
    /// `safepoint`, debug: safepoints that ended without the runtime seeing
    /// their record (the embedder's own, ended between two of the
    /// runtime's); their times are in the safepoint statistics.
    SafepointsUnseen {
        /// How many.
        count: u64,
    },
}

/// A generational concurrent cycle's phase prefix: `Y: ` for a young
/// cycle's, `O: ` for a full one's, nothing without generations.
fn generation_prefix(generation: Option<CollectionKind>) -> &'static str {
    match generation {
        None => "",
        Some(CollectionKind::Young) => "Y: ",
        Some(CollectionKind::Full) => "O: ",
    }
}

/// The pause's name: `Pause Young (Explicit)`.
fn pause_name(collection: CollectionKind, cause: GcCause) -> String {
    let cause = cause.name();
    let collection = match collection {
        CollectionKind::Young => "Young",
        CollectionKind::Full => "Full",
    };
    format!("Pause {collection} ({cause})")
}

/// Bytes as HotSpot's gc lines write them: whole MiB with an `M`.
struct Mib(usize);

impl fmt::Display for Mib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}M", self.0 >> 20)
    }
}

/// Bytes in whole KiB with a `K`.
struct Kib(usize);

impl fmt::Display for Kib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}K", self.0 >> 10)
    }
}

/// Nanoseconds as milliseconds with three decimals and `ms`.
struct Ms(u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}ms", self.0 as f64 / 1e6)
    }
}

impl fmt::Display for LogEvent {
    /// The message: the part of the line after the decorations and the
    /// `GC(n)` prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogEvent::Pause {
                collection,
                cause,
                used_before,
                used_after,
                capacity,
                pause_ns,
                ..
            } => {
                write!(
                    f,
                    "{} {}->{}({}) {}",
                    pause_name(*collection, *cause),
                    Mib(*used_before),
                    Mib(*used_after),
                    Mib(*capacity),
                    Ms(*pause_ns)
                )
            }
            LogEvent::Phase {
                phase,
                ns,
                objects,
                workers,
            } => write!(
                f,
                "{} {} ({objects} objects, {workers} workers)",
                phase.name(),
                Ms(*ns)
            ),
            LogEvent::ConcurrentPhase {
                generation,
                phase,
                ns,
            } => write!(
                f,
                "{}{} {}",
                generation_prefix(*generation),
                phase.name(),
                Ms(*ns)
            ),
            LogEvent::YoungInside { count, first } => write!(
                f,
                "O: Young Cycles Inside Concurrent Mark: {count} (GC({first})-GC({}))",
                first + u64::from(*count) - 1
            ),
            LogEvent::Cycle {
                generation,
                cause,
                used_before,
                used_after,
                capacity,
                cycle_ns,
            } => write!(
                f,
                "{} ({}) {}->{}({}) {}",
                match generation {
                    None => "Garbage Collection",
                    Some(CollectionKind::Young) => "Minor Collection",
                    Some(CollectionKind::Full) => "Major Collection",
                },
                cause.name(),
                Mib(*used_before),
                Mib(*used_after),
                Mib(*capacity),
                Ms(*cycle_ns)
            ),
            LogEvent::RelocationWorkers { summary } => write!(
                f,
                "Relocate Workers: {} pages on {} workers, node-local {}, {} binds, {} binding",
                summary.items,
                summary.workers,
                summary.locality_text(),
                summary.binds,
                Ms(summary.binding_ns)
            ),
            LogEvent::Update { ns, scope, workers } => {
                let name = GcPhase::UpdateReferences.name();
                write!(f, "{name} {} (", Ms(*ns))?;
                match scope {
                    UpdateScope::Nothing => f.write_str("nothing moved")?,
                    UpdateScope::Remembered { slots } => write!(f, "remembered: {slots} slots")?,
                    UpdateScope::AllLiveObjects => f.write_str("all live objects")?,
                }
                write!(f, ", {workers} workers)")
            }
            LogEvent::Heap {
                used_before,
                used_after,
                committed,
                max_capacity,
                pages,
                pages_freed_empty,
                pages_evacuated,
                pages_evacuation_incomplete,
                objects_relocated,
                bytes_relocated,
            } => write!(
                f,
                "Heap: used {}->{}, committed {}, max {}; pages {pages}: {pages_freed_empty} freed empty, {pages_evacuated} evacuated, {pages_evacuation_incomplete} incomplete; relocated {objects_relocated} objects {}",
                Mib(*used_before),
                Mib(*used_after),
                Mib(*committed),
                Mib(*max_capacity),
                Mib(*bytes_relocated as usize)
            ),
            LogEvent::Metaspace { class, non_class } => write!(
                f,
                "Metaspace: {}({}) NonClass: {}({}) Class: {}({})",
                Kib(class.used + non_class.used),
                Kib(class.committed + non_class.committed),
                Kib(non_class.used),
                Kib(non_class.committed),
                Kib(class.used),
                Kib(class.committed)
            ),
            LogEvent::Age { survival } => write!(
                f,
                "Age: young {} live of {} ({}%), tenuring threshold {}; {} pages promoted in place, {} aged",
                Mib(survival.live_bytes),
                Mib(survival.used_bytes),
                (survival.live_bytes as u128 * 100)
                    .checked_div(survival.used_bytes as u128)
                    .unwrap_or(0),
                survival.tenuring_threshold,
                survival.pages_promoted,
                survival.pages_aged
            ),
            LogEvent::References { refs } => write!(
                f,
                "Reference Processing {}: weak {} found, {} cleared; ephemeron {} found, {} retained, {} cleared; finalizable {} found, {} enqueued, {} retained; binding {} pass(es), {} retained; weak set {} found, {} cleared",
                Ms(refs.ns),
                refs.weak.found,
                refs.weak.cleared,
                refs.ephemeron.found,
                refs.ephemeron.retained,
                refs.ephemeron.cleared,
                refs.finalizable.found,
                refs.finalizable.enqueued,
                refs.finalizable.retained,
                refs.binding_passes,
                refs.binding_retained,
                refs.weak_set.found,
                refs.weak_set.cleared
            ),
            LogEvent::Stats { line, .. } => f.write_str(line.trim_end()),
            LogEvent::CollectionFailed {
                collection,
                cause,
                error,
            } => write!(f, "{} failed: {error}", pause_name(*collection, *cause)),
            LogEvent::OutOfMemory {
                size,
                used,
                max_capacity,
            } => write!(
                f,
                "Out Of Memory: {size} bytes could not be allocated, used {}, max {}",
                Mib(*used),
                Mib(*max_capacity)
            ),
            LogEvent::Safepoint { record } => write!(f, "{record}"),
            LogEvent::SafepointsUnseen { count } => write!(
                f,
                "{count} safepoint(s) ended unseen (their times are in the safepoint statistics)"
            ),
        }
    }
}

impl fmt::Display for LogRecord {
    /// `[0.123s][info][gc] GC(12) Pause Full (Explicit) 160M->58M(256M) 4.784ms`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:.3}s][{}][{}] ",
            self.uptime_ns as f64 / 1e9,
            self.level,
            self.tags
        )?;
        if let Some(id) = self.gc_id {
            write!(f, "GC({id}) ")?;
        }
        write!(f, "{}", self.event)
    }
}
