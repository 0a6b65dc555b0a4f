//! The charts of the page, each from [`RunData`].

use super::charts::{Series, histogram, lines, stacked_bars};
use super::data::RunData;
use super::spacemap;
use hotmem::log::{GcPhase, PhaseMode};
use hotmem::{CollectionKind, CollectorMode, StallsByCycle};
use std::collections::BTreeSet;

/// One chart of the page.
pub struct Figure {
    /// File name stem (`heap`), also the element id.
    pub id: String,
    /// Title.
    pub title: String,
    /// What it shows and how to read it.
    pub caption: String,
    /// Data points (or cells) it was drawn from: never zero on the page.
    pub points: usize,
    /// The SVG.
    pub svg: String,
}

const MIB: f64 = (1 << 20) as f64;

/// Every chart, in page order.
///
/// # Errors
/// The drawing error of a chart.
pub fn figures(d: &RunData) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    let mut push = |id: &str, title: &str, caption: &str, points: usize, svg: String| {
        out.push(Figure {
            id: id.into(),
            title: title.into(),
            caption: caption.into(),
            points,
            svg,
        })
    };

    // Heap over time.
    let gc = &d.collections;
    let s = &d.samples;
    let heap = vec![
        Series {
            name: "used before GC".into(),
            points: gc
                .iter()
                .map(|c| (c.t_s, c.used_before as f64 / MIB))
                .collect(),
            marked: true,
        },
        Series {
            name: "used after GC".into(),
            points: gc
                .iter()
                .map(|c| (c.t_s, c.used_after as f64 / MIB))
                .collect(),
            marked: true,
        },
        Series {
            name: "used (sampled)".into(),
            points: s.iter().map(|x| (x.t_s, x.used as f64 / MIB)).collect(),
            marked: false,
        },
        Series {
            name: "committed".into(),
            points: s.iter().map(|x| (x.t_s, x.capacity as f64 / MIB)).collect(),
            marked: false,
        },
        Series {
            name: "capacity (max)".into(),
            points: s
                .iter()
                .map(|x| (x.t_s, x.max_capacity as f64 / MIB))
                .collect(),
            marked: false,
        },
    ];
    let n = heap.iter().map(|x| x.points.len()).sum();
    push(
        "heap",
        "Heap over time",
        "Heap used before and after each collection (from the gc log), used and committed memory sampled between them, and the heap's maximum capacity.",
        n,
        lines("Heap", "uptime (s)", "MiB", &heap, false)?,
    );

    // Pauses per collection.
    let bars: Vec<(f64, Vec<f64>)> = gc
        .iter()
        .map(|c| (c.gc as f64, vec![c.ttsp_ms, c.at_ms, c.leaving_ms]))
        .collect();
    push(
        "pauses",
        "Pause per collection",
        "Each collection's safepoint split into time to safepoint (reaching), the collection itself (at safepoint) and leaving (until every stopped thread runs again), from the safepoint log lines.",
        bars.len(),
        stacked_bars(
            "Pause per collection",
            "collection GC(n)",
            "ms",
            &["time to safepoint", "at safepoint", "leaving"],
            &bars,
        )?,
    );

    // Pause distribution.
    let totals: Vec<f64> = gc
        .iter()
        .map(|c| c.ttsp_ms + c.at_ms.max(c.pause_ms) + c.leaving_ms)
        .collect();
    push(
        "pause-histogram",
        "Pause distribution",
        "How many collections paused the mutators for how long (time to safepoint + at + leaving), 20 equal bins.",
        totals.len(),
        histogram("Pause distribution", "pause (ms)", &totals, 20)?,
    );

    // A concurrent cycle's phases, in the declared order: with
    // generations, young cycles and full ones apart (ZGC's `Y:` and `O:`).
    let kinds: &[Option<CollectionKind>] = if gc.iter().any(|c| c.generation.is_some()) {
        &[Some(CollectionKind::Young), Some(CollectionKind::Full)]
    } else {
        &[None]
    };
    for &kind in kinds {
        let Some(chart) = concurrent_phases(d, kind) else {
            continue;
        };
        let names: Vec<&str> = chart.phases.iter().map(|p| p.name()).collect();
        let (id, title) = match kind {
            None => ("concurrent-phases", "Phases per concurrent cycle"),
            Some(CollectionKind::Young) => ("concurrent-phases-young", "Phases per young cycle"),
            Some(_) => ("concurrent-phases-full", "Phases per full cycle"),
        };
        push(
            id,
            title,
            &chart.caption,
            chart.bars.len(),
            stacked_bars(title, "collection GC(n)", "ms", &names, &chart.bars)?,
        );
    }

    // Allocation rate, page cache flush, medium page undo, stalls.
    let rate = |f: &dyn Fn(&super::data::Sample) -> f64| -> Vec<(f64, f64)> {
        s.windows(2)
            .filter(|w| w[1].t_s > w[0].t_s)
            .map(|w| {
                (
                    w[1].t_s,
                    (f(&w[1]) - f(&w[0])).max(0.0) / (w[1].t_s - w[0].t_s),
                )
            })
            .collect()
    };
    let alloc = vec![Series {
        name: "allocation rate (MiB/s)".into(),
        points: rate(&|x| x.allocated_total as f64 / MIB),
        marked: false,
    }];
    push(
        "allocation",
        "Allocation rate",
        "Page bytes allocated per second between two samples (ZGC's Allocation Rate).",
        alloc[0].points.len(),
        lines("Allocation rate", "uptime (s)", "MiB/s", &alloc, false)?,
    );
    if s.last().is_some_and(|x| {
        let t = &x.stalls;
        t.young.stalls + t.full.stalls + t.between.stalls > 0
    }) {
        let ms =
            |f: fn(&StallsByCycle) -> u64| move |x: &super::data::Sample| f(&x.stalls) as f64 / 1e6;
        let stalls = vec![
            Series {
                name: "begun during a full cycle".into(),
                points: rate(&ms(|t| t.full.ns)),
                marked: false,
            },
            Series {
                name: "begun during a young cycle".into(),
                points: rate(&ms(|t| t.young.ns)),
                marked: false,
            },
            Series {
                name: "begun between cycles".into(),
                points: rate(&ms(|t| t.between.ns)),
                marked: false,
            },
        ];
        push(
            "stalls",
            "Allocation stalls by the cycle running",
            "Milliseconds the mutators waited in allocation stalls per second of the run (summed over the mutators: up to 1000 each), between two samples, counted when each stall ended, by the kind of concurrent cycle running when each stall began (hotmem::GcTotals::stalls_by_cycle; a stall may outlast that cycle). A stall is an allocation that found no room and waited for a cycle to free memory.",
            stalls[0].points.len(),
            lines(
                "Allocation stalls",
                "uptime (s)",
                "ms stalled per s",
                &stalls,
                false,
            )?,
        );
    }
    let waste = vec![
        Series {
            name: "page cache flush (MiB/s)".into(),
            points: rate(&|x| x.flushed_total as f64 / MIB),
            marked: false,
        },
        Series {
            name: "medium page undo (ops/s)".into(),
            points: rate(&|x| x.medium_undo_total as f64),
            marked: false,
        },
    ];
    push(
        "flush-undo",
        "Page cache flush and medium page undo",
        "Cached pages remapped for another size (flush) and medium pages allocated and given back because another thread installed one first (undo): synchronized installation keeps both at zero, the racy baseline does not (seed 000).",
        waste.iter().map(|x| x.points.len()).sum(),
        lines(
            "Page cache flush and medium page undo",
            "uptime (s)",
            "per second",
            &waste,
            false,
        )?,
    );

    // NMT committed per tag.
    let tags: BTreeSet<&String> = s.iter().flat_map(|x| x.nmt_committed.keys()).collect();
    let nmt: Vec<Series> = tags
        .iter()
        .map(|tag| Series {
            name: (*tag).clone(),
            points: s
                .iter()
                .map(|x| {
                    let b = x.nmt_committed.get(*tag).copied().unwrap_or(0);
                    (x.t_s, b as f64 / MIB)
                })
                .collect(),
            marked: false,
        })
        .collect();
    push(
        "nmt",
        "NMT committed per tag",
        "Committed memory per native memory tracking tag, stacked, sampled over the run.",
        nmt.iter().map(|x| x.points.len()).sum(),
        lines(
            "NMT committed per tag (stacked)",
            "uptime (s)",
            "MiB",
            &nmt,
            true,
        )?,
    );

    // Metaspace pictures.
    for (k, snap) in d.space_snapshots.iter().enumerate() {
        for image in &snap.spaces {
            let title = format!(
                "{} space {} (t = {:.1} s)",
                image.space, snap.label, snap.t_s
            );
            let id = format!("map-{}-{k}", image.space);
            push(
                &id,
                &title,
                "One column per commit granule, coloured by the level of the chunk covering it (A = root chunk); full colour in use, pale free, grey untouched (seed 004).",
                image.cells.len(),
                spacemap::draw(&title, image)?,
            );
        }
    }
    Ok(out)
}

/// The per-phase chart of concurrent cycles.
struct PhaseChart {
    /// The phases of the runtime's declared list that a concurrent
    /// collector runs, in its order: one segment each.
    phases: Vec<GcPhase>,
    /// One bar per cycle: its number and each phase's milliseconds.
    bars: Vec<(f64, Vec<f64>)>,
    caption: String,
}

/// The per-phase chart of the run's concurrent cycles of `kind` (young or
/// full; `None`: without generations); `None` when it had none.
fn concurrent_phases(d: &RunData, kind: Option<CollectionKind>) -> Option<PhaseChart> {
    let phases: Vec<GcPhase> = GcPhase::of(CollectorMode::Concurrent).collect();
    let bars: Vec<(f64, Vec<f64>)> = (d.collections.iter())
        .filter(|c| !c.phases_ms.is_empty() && c.generation == kind)
        .map(|c| {
            let time = |p: &GcPhase| {
                (c.phases_ms.iter())
                    .filter(|(name, _)| name == p.name())
                    .map(|(_, ms)| ms)
                    .sum::<f64>()
            };
            (c.gc as f64, phases.iter().map(time).collect())
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    let names_of = |mode| {
        (phases.iter())
            .filter(|p| p.mode() == mode)
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let which = match kind {
        None => "Each concurrent cycle's",
        Some(CollectionKind::Young) => {
            "Each young cycle's (its gc,phases lines start with Y:; it marks and moves only what is young)"
        }
        Some(_) => "Each full cycle's (its gc,phases lines start with O:; it marks the whole heap)",
    };
    let caption = format!(
        "{which} phases, in the order the runtime declares them \
         (hotmem::log::GcPhase), from the gc,phases log lines: the pauses ({}) stop \
         the mutators, the concurrent phases ({}) run beside them. A cycle that finds \
         nothing worth moving has no relocation phases.",
        names_of(PhaseMode::Pause),
        names_of(PhaseMode::Concurrent)
    );
    Some(PhaseChart {
        phases,
        bars,
        caption,
    })
}
