//! `Report`: everything the runtime can say about its memory, as text and
//! as JSON.

use super::Runtime;
use hotmem_chunk::MetadataType;
use hotmem_nmt::Scale;
use serde_json::{Value, json};
use std::fmt::{self, Write as _};

/// One titled block of the text report.
#[derive(Clone, Debug)]
pub struct Section {
    /// The block's title.
    pub title: &'static str,
    /// Its text.
    pub text: String,
}

/// The runtime's report: heap statistics (`gc,stats`), collections,
/// safepoints, metaspace (statistics and map), the NMT summary and the
/// annotated OS memory map. `Display` prints the text form;
/// [`Report::json`] gives the same data for tools.
#[derive(Clone, Debug)]
pub struct Report {
    sections: Vec<Section>,
    json: Value,
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| Value::String(format!("not serializable: {e}")))
}

impl Report {
    /// The report of `rt` now.
    pub(crate) fn of(rt: &Runtime) -> Report {
        let inner = &*rt.inner;
        let mut sections = Vec::new();

        let usage = inner.gc.pages.usage();
        let mut text = String::new();
        let _ = writeln!(
            text,
            "heap: max {} MiB, capacity {} MiB, used {} MiB, cached {} MiB, committed {} MiB; partitions: {}",
            usage.max_capacity >> 20,
            usage.capacity >> 20,
            usage.used >> 20,
            usage.cached >> 20,
            inner.gc.pages.committed_bytes() >> 20,
            inner.gc.partitions.len()
        );
        let _ = writeln!(
            text,
            "numa: {} ({} node(s), memory bound: {}, workers bound during relocation: {})",
            inner.numa.source, inner.numa.nodes, inner.numa.memory_bound, inner.numa.worker_binding
        );
        let (gc_json, stats_json) = {
            let gc = inner.gc.record.lock();
            let _ = writeln!(
                text,
                "gc: {} worker(s), {} collection(s) ({} for allocation failure), {} objects / {} MiB relocated, {} pages freed, pause total {:.3} ms, max {:.3} ms",
                inner.gc.worker_count,
                gc.totals.cycles,
                gc.totals.allocation_failures,
                gc.totals.objects_relocated,
                gc.totals.bytes_relocated >> 20,
                gc.totals.pages_freed,
                gc.totals.pause_ns as f64 / 1e6,
                gc.totals.max_pause_ns as f64 / 1e6
            );
            let _ = writeln!(
                text,
                "gc phases (all collections): mark {:.3} ms ({} objects marked), relocate {:.3} ms, update {:.3} ms",
                gc.totals.mark_ns as f64 / 1e6,
                gc.totals.objects_marked,
                gc.totals.relocation_ns as f64 / 1e6,
                gc.totals.update_ns as f64 / 1e6
            );
            if let Some(last) = &gc.last {
                let _ = writeln!(
                    text,
                    "last collection #{}: {} live objects ({} KiB), {} pages: {} freed empty, {} evacuated, {} incomplete; used {} -> {} MiB; ttsp {:.1} us, pause {:.3} ms; relocation on {} worker(s), locality {}",
                    last.cycle,
                    last.live_objects,
                    last.live_bytes >> 10,
                    last.pages,
                    last.pages_freed_empty,
                    last.pages_evacuated,
                    last.pages_evacuation_incomplete,
                    last.used_before >> 20,
                    last.used_after >> 20,
                    last.time_to_safepoint_ns as f64 / 1e3,
                    last.pause_ns as f64 / 1e6,
                    last.relocation.workers,
                    last.relocation.locality_text()
                );
                let _ = writeln!(
                    text,
                    "last collection phases: mark {:.3} ms ({} objects on {} worker(s), {:.0} objects/ms/worker), relocate {:.3} ms ({} objects, {} KiB), update {:.3} ms",
                    last.mark_ns as f64 / 1e6,
                    last.objects_marked,
                    last.mark_workers,
                    last.marking_rate(),
                    last.relocation_ns as f64 / 1e6,
                    last.objects_relocated,
                    last.bytes_relocated >> 10,
                    last.update_ns as f64 / 1e6
                );
            }
            let report = gc.sampler.report();
            let mut stats = String::new();
            for line in report.lines() {
                let _ = writeln!(stats, "{line}");
            }
            sections.push(Section {
                title: "Runtime",
                text,
            });
            sections.push(Section {
                title: "gc,stats",
                text: stats,
            });
            (
                json!({ "totals": to_value(&gc.totals), "last": to_value(&gc.last) }),
                to_value(&report),
            )
        };

        let sp = inner.safepoints.stats();
        let mut text = sp.to_string();
        if let Some(last) = &sp.last {
            let _ = writeln!(text, "{last}");
        }
        sections.push(Section {
            title: "Safepoints",
            text,
        });

        let ms = inner.metaspace.statistics();
        let class_map =
            collapse_repeats(&inner.metaspace.space(MetadataType::Class).map().to_string());
        sections.push(Section {
            title: "Metaspace",
            text: format!("{ms}\nclass space map:\n{class_map}"),
        });

        let mut nmt = String::new();
        let _ = inner.nmt.write_summary(&mut nmt, Scale::Kilo);
        sections.push(Section {
            title: "Native Memory Tracking",
            text: nmt,
        });
        let nmt_json = to_value(&inner.nmt.summary_report(Scale::Kilo));

        let (map_text, map_json) = match inner.nmt.annotated_map(Scale::Kilo) {
            Ok(map) => (map.to_string(), to_value(&map)),
            Err(e) => (format!("cannot read /proc/self/smaps: {e}\n"), Value::Null),
        };
        sections.push(Section {
            title: "OS memory map (annotated)",
            text: map_text,
        });

        let json = json!({
            "heap": to_value(&usage),
            "heap_committed": inner.gc.pages.committed_bytes(),
            "numa": to_value(&inner.numa),
            "gc": gc_json,
            "gc_stats": stats_json,
            "safepoints": to_value(&sp),
            "metaspace": to_value(&ms),
            "class_space_map": class_map,
            "nmt": nmt_json,
            "os_map": map_json,
        });
        Report { sections, json }
    }

    /// The text blocks, in order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The whole report as JSON.
    pub fn json(&self) -> &Value {
        &self.json
    }
}

/// Map rows (`  +0x... chars`) equal to the row before them are folded into
/// one `*` line, as `hexdump` does, so a mostly untouched space stays short.
fn collapse_repeats(map: &str) -> String {
    let mut out = String::with_capacity(map.len().min(8192));
    let mut previous: Option<&str> = None;
    let mut folded = 0usize;
    let flush = |out: &mut String, folded: &mut usize| {
        if *folded > 0 {
            let _ = writeln!(
                out,
                "  *           ({} more rows like the one above)",
                *folded
            );
            *folded = 0;
        }
    };
    for line in map.lines() {
        let row = line
            .trim_start()
            .strip_prefix("+0x")
            .and_then(|r| r.split_once(' '))
            .map(|(_, rest)| rest);
        match (row, previous) {
            (Some(r), Some(p)) if r == p => folded += 1,
            _ => {
                flush(&mut out, &mut folded);
                let _ = writeln!(out, "{line}");
            }
        }
        previous = row;
    }
    flush(&mut out, &mut folded);
    out
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.sections {
            writeln!(f, "=== {} ===", s.title)?;
            f.write_str(&s.text)?;
            if !s.text.ends_with('\n') {
                writeln!(f)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::collapse_repeats;

    #[test]
    fn repeated_map_rows_fold() {
        let map = "head\n  +0x0000 aaaa\n  +0x0004 aaaa\n  +0x0008 aaaa\n  +0x000c AAbb\n  +0x0010 aaaa\n";
        let folded = collapse_repeats(map);
        assert_eq!(
            folded,
            "head\n  +0x0000 aaaa\n  *           (2 more rows like the one above)\n  +0x000c AAbb\n  +0x0010 aaaa\n"
        );
    }
}
