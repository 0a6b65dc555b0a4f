//! What a run's charts are drawn from: collections and safepoints (from the
//! runtime's structured log), periodic samples of the heap and NMT, and
//! metaspace pictures. Serialized as `DIR/report.json` beside the page.

use hotmem::log::{LogEvent, LogRecord, PhaseMode};
use hotmem::{CollectionKind, MetadataType, StallsByCycle};
use serde::Serialize;
use std::collections::BTreeMap;

/// One collection, from its `gc` line, its `gc,phases` lines and its
/// safepoints' lines.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Collection {
    /// `GC(n)`.
    pub gc: u64,
    /// When it ended, seconds of runtime uptime.
    pub t_s: f64,
    /// Why it ran.
    pub cause: String,
    /// With generations, young or full (`None` without them).
    pub generation: Option<CollectionKind>,
    /// Heap bytes in use before.
    pub used_before: usize,
    /// Heap bytes in use after.
    pub used_after: usize,
    /// Heap bytes committed after.
    pub capacity: usize,
    /// The collection's work with the mutators stopped, milliseconds (a
    /// concurrent cycle: its pause phases).
    pub pause_ms: f64,
    /// A concurrent cycle's phases that ran, by their declared name
    /// ([`hotmem::log::GcPhase::name`]), in milliseconds, in the order
    /// they ran; empty for a stop-the-world collection.
    pub phases_ms: Vec<(String, f64)>,
    /// Its safepoints' phases, milliseconds (0 until their lines were
    /// seen; a concurrent cycle's three pauses added up).
    pub ttsp_ms: f64,
    /// At the safepoint.
    pub at_ms: f64,
    /// Leaving the safepoint.
    pub leaving_ms: f64,
}

/// One sample of the heap and NMT.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds of runtime uptime.
    pub t_s: f64,
    /// Heap bytes in use.
    pub used: usize,
    /// Heap bytes committed (pages and page cache).
    pub capacity: usize,
    /// The heap's maximum.
    pub max_capacity: usize,
    /// Page bytes allocated since the heap was made.
    pub allocated_total: u64,
    /// Page cache bytes flushed (remapped for another page size) so far.
    pub flushed_total: u64,
    /// Medium page undo operations so far.
    pub medium_undo_total: u64,
    /// Allocation stalls so far (a concurrent collector's), by the kind of
    /// cycle running when each began.
    pub stalls: StallsByCycle,
    /// NMT committed bytes per tag name.
    pub nmt_committed: BTreeMap<String, usize>,
}

/// A metaspace picture: one letter per commit granule (`A` = root chunk
/// level, `B` = half of it, ...; upper case in use, lower case free, `.`
/// untouched), as [`hotmem::chunk::SpaceMap`] draws it.
#[derive(Clone, Debug, Serialize)]
pub struct SpaceImage {
    /// `class` or `non-class`.
    pub space: String,
    /// Bytes per letter.
    pub granule_bytes: usize,
    /// The letters, in address order.
    pub cells: String,
    /// Levels, root first: letter and chunk size.
    pub legend: Vec<(char, usize)>,
}

/// Both metaspaces at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct SpaceSnapshot {
    /// What moment (`before the loaders die`).
    pub label: String,
    /// Seconds of runtime uptime.
    pub t_s: f64,
    /// Class space, then non-class metaspace.
    pub spaces: Vec<SpaceImage>,
}

/// Everything the page shows.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunData {
    /// The program and its settings.
    pub title: String,
    /// Collections, in order.
    pub collections: Vec<Collection>,
    /// Every safepoint line seen: uptime, name, reaching, at, leaving (ns).
    pub safepoints: Vec<(f64, String, u64, u64, u64)>,
    /// Heap and NMT samples.
    pub samples: Vec<Sample>,
    /// Metaspace pictures.
    pub space_snapshots: Vec<SpaceSnapshot>,
    /// Log records received, by tag set.
    pub log_records: BTreeMap<String, u64>,
}

impl RunData {
    /// Takes one structured log record.
    pub fn record(&mut self, r: &LogRecord) {
        *self.log_records.entry(r.tags.to_string()).or_default() += 1;
        let t_s = r.uptime_ns as f64 / 1e9;
        match &r.event {
            LogEvent::Pause {
                cause,
                used_before,
                used_after,
                capacity,
                ..
            }
            | LogEvent::Cycle {
                cause,
                used_before,
                used_after,
                capacity,
                ..
            } => {
                let gc = r.gc_id.unwrap_or(0);
                let generation = match &r.event {
                    LogEvent::Cycle { generation, .. } => *generation,
                    _ => None,
                };
                let c = self.collection_mut(gc);
                c.generation = c.generation.or(generation);
                c.t_s = t_s;
                c.cause = format!("{cause:?}");
                c.used_before = *used_before;
                c.used_after = *used_after;
                c.capacity = *capacity;
                // A concurrent cycle's pause is the sum of its safepoints,
                // added as they are recorded.
                if let LogEvent::Pause { pause_ns, .. } = &r.event {
                    c.pause_ms = *pause_ns as f64 / 1e6;
                }
            }
            LogEvent::ConcurrentPhase {
                phase,
                ns,
                generation,
            } => {
                let c = self.collection_mut(r.gc_id.unwrap_or(0));
                c.generation = c.generation.or(*generation);
                let ms = *ns as f64 / 1e6;
                c.phases_ms.push((phase.name().to_string(), ms));
                if phase.mode() == PhaseMode::Pause {
                    c.pause_ms += ms;
                }
            }
            LogEvent::Safepoint { record } => {
                self.safepoints.push((
                    t_s,
                    record.name.to_string(),
                    record.reaching_ns,
                    record.at_ns,
                    record.leaving_ns,
                ));
                if let Some(gc) = r.gc_id {
                    // One safepoint per stop-the-world collection, three
                    // per concurrent cycle: added up.
                    let c = self.collection_mut(gc);
                    c.ttsp_ms += record.reaching_ns as f64 / 1e6;
                    c.at_ms += record.at_ns as f64 / 1e6;
                    c.leaving_ms += record.leaving_ns as f64 / 1e6;
                }
            }
            _ => {}
        }
    }

    fn collection_mut(&mut self, gc: u64) -> &mut Collection {
        match self.collections.iter().rposition(|c| c.gc == gc) {
            Some(i) => &mut self.collections[i],
            None => {
                self.collections.push(Collection {
                    gc,
                    ..Collection::default()
                });
                self.collections.last_mut().expect("just pushed")
            }
        }
    }
}

/// The name of a metadata type in the page.
pub(crate) fn space_name(ty: MetadataType) -> &'static str {
    match ty {
        MetadataType::Class => "class",
        _ => "non-class",
    }
}
