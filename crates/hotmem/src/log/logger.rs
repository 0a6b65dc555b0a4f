//! The runtime's logger: the enabled check on the collector's path, and
//! the records a collection or safepoint writes.

use super::event::{LogEvent, LogRecord, SpaceUse};
use super::level::LogLevel;
use super::output::{LogConfig, LogOutput};
use super::selection::LogSelection;
use super::tags::TagSet;
use crate::GcError;
use crate::gc::core::collector_mode::CollectorMode;
use crate::gc::core::generations::CollectionKind;
use crate::gc::core::phases::GcPhase;
use crate::gc::core::stats::{CollectStats, GcCause};
use hotmem_chunk::{MetadataType, Metaspace};
use hotmem_page::{PageAllocator, StatsReport};
use hotmem_safepoint::{Coordinator, SafepointId};
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// `gc,stats` at info: the table at most this often (ZGC's default
/// statistics interval).
const STATS_INTERVAL: Duration = Duration::from_secs(10);

/// GC safepoints remembered until their record is logged.
const PENDING_GC_SAFEPOINTS: usize = 8;

/// What the logger remembers between records (only touched when a tag set
/// that needs it is enabled).
#[derive(Default)]
struct State {
    /// The last safepoint whose record was logged.
    last_safepoint: Option<SafepointId>,
    /// Safepoints finished so far, as of the last look.
    safepoints_seen: u64,
    /// The safepoints of recent collections and their GC ids.
    gc_safepoints: Vec<(SafepointId, u64)>,
    /// When the statistics table was last logged at info.
    last_stats: Option<Instant>,
}

pub(crate) struct Logger {
    start: Instant,
    /// The most detailed level any output selects, per tag set: the one
    /// check made when logging is off.
    enabled: LogSelection,
    outputs: Vec<(LogSelection, LogOutput)>,
    state: Mutex<State>,
}

impl Logger {
    pub(crate) fn new(config: &LogConfig, start: Instant) -> Logger {
        let enabled = config
            .outputs
            .iter()
            .fold(LogSelection::none(), |acc, (s, _)| acc.union(s));
        Logger {
            start,
            enabled,
            outputs: config.outputs.clone(),
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// Whether a line of `tags` at `level` goes anywhere: a load and a
    /// compare, no allocation.
    #[inline]
    pub(crate) fn enabled(&self, tags: TagSet, level: LogLevel) -> bool {
        self.enabled.enabled(tags, level)
    }

    #[cold]
    fn write(&self, level: LogLevel, tags: TagSet, gc_id: Option<u64>, event: LogEvent) {
        let record = LogRecord {
            uptime_ns: self.start.elapsed().as_nanos() as u64,
            level,
            tags,
            gc_id,
            event,
        };
        for (selection, output) in &self.outputs {
            if selection.enabled(tags, level) {
                output.write(&record);
            }
        }
    }

    /// Whether a collection's records need the statistics table.
    #[inline]
    pub(crate) fn wants_stats(&self) -> bool {
        self.enabled(TagSet::GcStats, LogLevel::Info)
    }

    /// The records of a collection that ended, still at its safepoint
    /// `safepoint` (`None`: a concurrent cycle, whose pauses were named
    /// with [`Logger::gc_safepoint`]).
    #[inline]
    pub(crate) fn collection(
        &self,
        parts: Parts<'_>,
        stats: &CollectStats,
        safepoint: Option<SafepointId>,
    ) {
        if self.enabled.is_none() {
            return;
        }
        self.collection_slow(parts, stats, safepoint);
    }

    /// Names safepoint `safepoint` as a pause of collection `cycle`: its
    /// line will carry `GC(cycle)`. Call it before the safepoint ends.
    pub(crate) fn gc_safepoint(&self, safepoint: SafepointId, cycle: u64) {
        if self.enabled(TagSet::Safepoint, LogLevel::Info) {
            let mut st = self.state.lock();
            if st.gc_safepoints.len() == PENDING_GC_SAFEPOINTS {
                st.gc_safepoints.remove(0);
            }
            st.gc_safepoints.push((safepoint, cycle));
        }
    }

    #[cold]
    fn collection_slow(
        &self,
        parts: Parts<'_>,
        stats: &CollectStats,
        safepoint: Option<SafepointId>,
    ) {
        let id = Some(stats.cycle);
        let info = LogLevel::Info;
        if let Some(safepoint) = safepoint {
            self.gc_safepoint(safepoint, stats.cycle);
        }
        if self.enabled(TagSet::GcPhases, info) {
            self.phases(stats, id);
        }
        if self.enabled(TagSet::GcRef, info) {
            let event = LogEvent::References { refs: stats.refs };
            self.write(info, TagSet::GcRef, id, event);
        }
        let survival = stats.concurrent.and_then(|c| c.young_survival);
        if let (Some(survival), true) = (survival, self.enabled(TagSet::GcAge, info)) {
            self.write(info, TagSet::GcAge, id, LogEvent::Age { survival });
        }
        let usage = parts.heap.usage();
        if self.enabled(TagSet::GcHeap, info) {
            let event = LogEvent::Heap {
                used_before: stats.used_before,
                used_after: stats.used_after,
                committed: parts.heap.committed_bytes(),
                max_capacity: usage.max_capacity,
                pages: stats.pages,
                pages_freed_empty: stats.pages_freed_empty,
                pages_evacuated: stats.pages_evacuated,
                pages_evacuation_incomplete: stats.pages_evacuation_incomplete,
                objects_relocated: stats.objects_relocated,
                bytes_relocated: stats.bytes_relocated,
            };
            self.write(info, TagSet::GcHeap, id, event);
        }
        if self.enabled(TagSet::GcMetaspace, info) {
            let space = |ty| {
                let s = parts.metaspace.space(ty);
                SpaceUse {
                    used: s.statistics().used,
                    committed: s.committed_bytes(),
                    reserved: s.reserved_bytes(),
                }
            };
            let event = LogEvent::Metaspace {
                class: space(MetadataType::Class),
                non_class: space(MetadataType::NonClass),
            };
            self.write(info, TagSet::GcMetaspace, id, event);
        }
        if self.enabled(TagSet::GcStats, info) {
            let now = Instant::now();
            let level = {
                let mut st = self.state.lock();
                let due = st
                    .last_stats
                    .is_none_or(|t| now.duration_since(t) >= STATS_INTERVAL);
                if due {
                    st.last_stats = Some(now);
                }
                if due { info } else { LogLevel::Debug }
            };
            if let (true, Some(report)) = (self.enabled(TagSet::GcStats, level), &parts.stats_table)
            {
                let lines = report.lines();
                let rows = lines.len() - report.rows.len();
                for (i, line) in lines.into_iter().enumerate() {
                    let row = i.checked_sub(rows).map(|r| report.rows[r].clone());
                    let event = LogEvent::Stats { line, row };
                    self.write(level, TagSet::GcStats, id, event);
                }
            }
        }
        // Last, as HotSpot ends a collection with its `gc` line.
        if let (true, Some(c)) = (self.enabled(TagSet::Gc, info), stats.concurrent) {
            let event = LogEvent::Cycle {
                generation: c.generation,
                cause: stats.cause,
                used_before: stats.used_before,
                used_after: stats.used_after,
                capacity: usage.capacity,
                cycle_ns: c.cycle_ns,
            };
            self.write(info, TagSet::Gc, id, event);
        } else if self.enabled(TagSet::Gc, info) {
            let event = LogEvent::Pause {
                collection: stats.kind,
                cause: stats.cause,
                used_before: stats.used_before,
                used_after: stats.used_after,
                capacity: usage.capacity,
                ttsp_ns: stats.time_to_safepoint_ns,
                pause_ns: stats.pause_ns,
            };
            self.write(info, TagSet::Gc, id, event);
        }
    }

    /// The `gc,phases` lines of a collection: one per phase it ran, in the
    /// declared order, named by the list.
    fn phases(&self, stats: &CollectStats, id: Option<u64>) {
        let info = LogLevel::Info;
        if let Some(c) = stats.concurrent {
            for phase in GcPhase::of(CollectorMode::Concurrent) {
                // A phase that did not run (nothing worth moving) has no line.
                if let Some(ns) = c.time(phase) {
                    let event = LogEvent::ConcurrentPhase {
                        generation: c.generation,
                        phase,
                        ns,
                    };
                    self.write(info, TagSet::GcPhases, id, event);
                }
                if phase == GcPhase::ConcurrentMark && c.young_cycles_inside > 0 {
                    let event = LogEvent::YoungInside {
                        count: c.young_cycles_inside,
                        first: stats.cycle + 1,
                    };
                    self.write(info, TagSet::GcPhases, id, event);
                }
            }
            return;
        }
        for phase in GcPhase::of(CollectorMode::StopTheWorld) {
            let event = match phase {
                GcPhase::Mark => LogEvent::Phase {
                    phase,
                    ns: stats.mark_ns,
                    objects: stats.objects_marked,
                    workers: stats.mark_workers,
                },
                GcPhase::Relocate => LogEvent::Phase {
                    phase,
                    ns: stats.relocation_ns,
                    objects: stats.objects_relocated,
                    workers: stats.relocation.workers,
                },
                GcPhase::UpdateReferences => LogEvent::Update {
                    ns: stats.update_ns,
                    scope: stats.update_scope,
                    workers: stats.mark_workers,
                },
                _ => continue,
            };
            self.write(info, TagSet::GcPhases, id, event);
            if phase == GcPhase::Relocate && self.enabled(TagSet::GcPhases, LogLevel::Trace) {
                let event = LogEvent::RelocationWorkers {
                    summary: stats.relocation.clone(),
                };
                self.write(LogLevel::Trace, TagSet::GcPhases, id, event);
            }
        }
    }

    /// A collection of `kind` for `cause` failed with `error` (`gc`, warning).
    #[inline]
    pub(crate) fn collection_failed(&self, kind: CollectionKind, cause: GcCause, error: &GcError) {
        if self.enabled(TagSet::Gc, LogLevel::Warning) {
            let event = LogEvent::CollectionFailed {
                collection: kind,
                cause,
                error: error.to_string(),
            };
            self.write(LogLevel::Warning, TagSet::Gc, None, event);
        }
    }

    /// An allocation of `size` bytes failed with out of memory (`gc`,
    /// error).
    #[inline]
    pub(crate) fn out_of_memory(&self, size: usize, used: usize, max_capacity: usize) {
        if self.enabled(TagSet::Gc, LogLevel::Error) {
            let event = LogEvent::OutOfMemory {
                size,
                used,
                max_capacity,
            };
            self.write(LogLevel::Error, TagSet::Gc, None, event);
        }
    }

    /// Logs the record of the last safepoint that ended, if it is new
    /// (called after the runtime ends a safepoint, and on flush). A
    /// safepoint's record is complete once its threads run again, so it
    /// may appear at the next look.
    #[inline]
    pub(crate) fn safepoints(&self, coordinator: &Coordinator) {
        if self.enabled(TagSet::Safepoint, LogLevel::Info) {
            self.safepoints_slow(coordinator);
        }
    }

    #[cold]
    fn safepoints_slow(&self, coordinator: &Coordinator) {
        let stats = coordinator.stats();
        let Some(record) = stats.last else { return };
        let (gc_id, unseen) = {
            let mut st = self.state.lock();
            if st.last_safepoint.is_some_and(|l| l >= record.id) {
                return;
            }
            st.last_safepoint = Some(record.id);
            let unseen = stats.count.saturating_sub(st.safepoints_seen + 1);
            st.safepoints_seen = stats.count;
            let gc_id = st
                .gc_safepoints
                .iter()
                .position(|(s, _)| *s == record.id)
                .map(|i| st.gc_safepoints.remove(i).1);
            (gc_id, unseen)
        };
        if unseen > 0 && self.enabled(TagSet::Safepoint, LogLevel::Debug) {
            let event = LogEvent::SafepointsUnseen { count: unseen };
            self.write(LogLevel::Debug, TagSet::Safepoint, None, event);
        }
        let event = LogEvent::Safepoint { record };
        self.write(LogLevel::Info, TagSet::Safepoint, gc_id, event);
    }

    /// Logs what is pending and flushes every output.
    pub(crate) fn flush(&self, coordinator: &Coordinator) {
        self.safepoints(coordinator);
        for (_, output) in &self.outputs {
            output.flush();
        }
    }
}

/// What a collection's records read besides its statistics.
pub(crate) struct Parts<'a> {
    pub(crate) heap: &'a PageAllocator,
    pub(crate) metaspace: &'a Metaspace,
    /// The statistics table, when [`Logger::wants_stats`] said so.
    pub(crate) stats_table: Option<StatsReport>,
}
