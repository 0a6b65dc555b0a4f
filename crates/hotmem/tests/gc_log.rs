//! The GC log: every text line parses with the grammar of `hotmem::log`
//! (a parser of that grammar is below), the structured records say what
//! the lines say, selections pick exactly their tag sets, and a file
//! output holds the same lines as a callback.

use hotmem::log::{LogConfig, LogEvent, LogLevel, LogOutput, LogRecord, LogSelection, TagSet};
use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{
    Address, AllocError, ArenaKind, CollectionKind, GcCause, MIN_HEAP, ObjectReference, Runtime,
};

use std::sync::{Arc, Mutex};

mod common;

/// A line split by the grammar: `[uptime s][level][tags] (GC(id) )?message`.
#[derive(Debug)]
struct Line {
    uptime_s: f64,
    level: String,
    tags: String,
    gc: Option<u64>,
    message: String,
}

/// The text inside the next `[...]`, and the rest.
fn bracket(s: &str) -> Result<(&str, &str), String> {
    let s = s.strip_prefix('[').ok_or("no [")?;
    let end = s.find(']').ok_or("no ]")?;
    Ok((&s[..end], &s[end + 1..]))
}

fn digits(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("not digits: {s:?}"));
    }
    s.parse().map_err(|e| format!("{s:?}: {e}"))
}

/// `digits "." 3 digits` followed by `unit`.
fn decimal3(s: &str, unit: &str) -> Result<f64, String> {
    let n = s.strip_suffix(unit).ok_or(format!("{s:?} lacks {unit}"))?;
    let (i, f) = n.split_once('.').ok_or(format!("{n:?} has no ."))?;
    digits(i)?;
    if f.len() != 3 {
        return Err(format!("{n:?} has not 3 decimals"));
    }
    digits(f)?;
    n.parse().map_err(|e| format!("{n:?}: {e}"))
}

/// `digits` followed by `unit` (`M`, `K`).
fn sized(s: &str, unit: char) -> Result<u64, String> {
    digits(s.strip_suffix(unit).ok_or(format!("{s:?} lacks {unit}"))?)
}

/// `A "->" B "(" C ")"` of sizes.
fn transition(s: &str, unit: char) -> Result<(u64, u64, u64), String> {
    let (a, rest) = s.split_once("->").ok_or(format!("{s:?} has no ->"))?;
    let (b, c) = rest.split_once('(').ok_or(format!("{s:?} has no ("))?;
    let c = c.strip_suffix(')').ok_or(format!("{s:?} has no )"))?;
    Ok((sized(a, unit)?, sized(b, unit)?, sized(c, unit)?))
}

/// `A "(" B ")"` of sizes.
fn used_committed(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once('(').ok_or(format!("{s:?} has no ("))?;
    let b = b.strip_suffix(')').ok_or(format!("{s:?} has no )"))?;
    Ok((sized(a, 'K')?, sized(b, 'K')?))
}

fn parse_line(line: &str) -> Result<Line, String> {
    let (uptime, rest) = bracket(line)?;
    let uptime_s = decimal3(uptime, "s")?;
    let (level, rest) = bracket(rest)?;
    let level = level.trim_end().to_string();
    level.parse::<LogLevel>().map_err(|e| e.to_string())?;
    let (tags, rest) = bracket(rest)?;
    let tags = tags.trim_end().to_string();
    if !TagSet::ALL.iter().any(|t| t.to_string() == tags) {
        return Err(format!("unknown tag set {tags:?}"));
    }
    let rest = rest
        .strip_prefix(' ')
        .ok_or("no space after the decorations")?;
    let (gc, message) = match rest.strip_prefix("GC(") {
        Some(r) => {
            let (id, m) = r.split_once(") ").ok_or("GC( without ) ")?;
            (Some(digits(id)?), m)
        }
        None => (None, rest),
    };
    let l = Line {
        uptime_s,
        level,
        tags,
        gc,
        message: message.to_string(),
    };
    check_message(&l)?;
    Ok(l)
}

/// The message of each tag set, by the grammar.
fn check_message(l: &Line) -> Result<(), String> {
    let m = l.message.as_str();
    match l.tags.as_str() {
        "gc" if m.starts_with("Out Of Memory: ") => {
            let rest = &m["Out Of Memory: ".len()..];
            let (n, rest) = rest
                .split_once(" bytes could not be allocated, used ")
                .ok_or("oom size")?;
            digits(n)?;
            let (used, max) = rest.split_once(", max ").ok_or("oom max")?;
            sized(used, 'M')?;
            sized(max, 'M')?;
        }
        "gc" if m.contains(") failed: ") => {
            let (pause, _error) = m.split_once(") failed: ").ok_or("failed")?;
            let cause = pause
                .strip_prefix("Pause Full (")
                .or_else(|| pause.strip_prefix("Pause Young ("))
                .ok_or("failed pause")?;
            if !["Explicit", "Allocation Failure"].contains(&cause) {
                return Err(format!("cause {cause:?}"));
            }
        }
        "gc" => {
            let m = m
                .strip_prefix("Pause Full (")
                .or_else(|| m.strip_prefix("Pause Young ("))
                .ok_or("pause")?;
            let (cause, rest) = m.split_once(") ").ok_or("cause")?;
            if !["Explicit", "Allocation Failure"].contains(&cause) {
                return Err(format!("cause {cause:?}"));
            }
            let (sizes, ms) = rest.split_once(' ').ok_or("pause time")?;
            transition(sizes, 'M')?;
            decimal3(ms, "ms")?;
        }
        "gc,phases" if m.starts_with("Relocate Workers: ") => {
            let parts: Vec<&str> = m["Relocate Workers: ".len()..].split(", ").collect();
            let [pages_on, locality, binds, binding] = parts[..] else {
                return Err(format!("workers {parts:?}"));
            };
            let (pages, workers) = pages_on.split_once(" pages on ").ok_or("pages on")?;
            digits(pages)?;
            digits(workers.strip_suffix(" workers").ok_or("workers")?)?;
            let locality = locality.strip_prefix("node-local ").ok_or("node-local")?;
            let percent = |s: &str| digits(s.strip_suffix('%').ok_or("%")?);
            if locality != "n/a (workers unbound)" {
                let (pct, how) = locality.split_once(" (").ok_or("locality")?;
                percent(pct)?;
                match how.strip_suffix(')').ok_or("locality )")? {
                    "simulated" | "real" => {}
                    real => {
                        let kernel = real.strip_prefix("real; ").ok_or("real;")?;
                        percent(
                            kernel
                                .strip_suffix(" on the node's CPUs per the kernel")
                                .ok_or("per the kernel")?,
                        )?;
                    }
                }
            }
            digits(binds.strip_suffix(" binds").ok_or("binds")?)?;
            decimal3(binding.strip_suffix(" binding").ok_or("binding")?, "ms")?;
        }
        "gc,phases" if m.starts_with("Update References ") => {
            let rest = &m["Update References ".len()..];
            let (ms, rest) = rest.split_once(" (").ok_or("update time")?;
            decimal3(ms, "ms")?;
            let (scope, workers) = rest.rsplit_once(", ").ok_or("update scope")?;
            match scope.strip_prefix("remembered: ") {
                Some(n) => {
                    digits(n.strip_suffix(" slots").ok_or("slots")?)?;
                }
                None if ["nothing moved", "all live objects"].contains(&scope) => {}
                None => return Err(format!("scope {scope:?}")),
            }
            digits(workers.strip_suffix(" workers)").ok_or("workers")?)?;
        }
        "gc,phases" => {
            let name = ["Mark ", "Relocate "]
                .into_iter()
                .find(|p| m.starts_with(p))
                .ok_or("phase name")?;
            let (ms, rest) = m[name.len()..].split_once(" (").ok_or("phase time")?;
            decimal3(ms, "ms")?;
            let (objects, rest) = rest.split_once(" objects, ").ok_or("objects")?;
            digits(objects)?;
            digits(rest.strip_suffix(" workers)").ok_or("workers")?)?;
        }
        "gc,heap" => {
            let rest = m.strip_prefix("Heap: used ").ok_or("heap")?;
            let (used, rest) = rest.split_once(", committed ").ok_or("committed")?;
            let (a, b) = used.split_once("->").ok_or("->")?;
            sized(a, 'M')?;
            sized(b, 'M')?;
            let (committed, rest) = rest.split_once(", max ").ok_or("max")?;
            sized(committed, 'M')?;
            let (max, rest) = rest.split_once("; pages ").ok_or("pages")?;
            sized(max, 'M')?;
            let (pages, rest) = rest.split_once(": ").ok_or("pages:")?;
            digits(pages)?;
            let (n, rest) = rest.split_once(" freed empty, ").ok_or("freed")?;
            digits(n)?;
            let (n, rest) = rest.split_once(" evacuated, ").ok_or("evacuated")?;
            digits(n)?;
            let (n, rest) = rest
                .split_once(" incomplete; relocated ")
                .ok_or("incomplete")?;
            digits(n)?;
            let (n, bytes) = rest.split_once(" objects ").ok_or("relocated")?;
            digits(n)?;
            sized(bytes, 'M')?;
        }
        "gc,metaspace" => {
            let rest = m.strip_prefix("Metaspace: ").ok_or("metaspace")?;
            let (all, rest) = rest.split_once(" NonClass: ").ok_or("NonClass")?;
            let (non_class, class) = rest.split_once(" Class: ").ok_or("Class")?;
            let (a, b, c) = (
                used_committed(all)?,
                used_committed(non_class)?,
                used_committed(class)?,
            );
            // Whole KiB of each space; the sum's truncation may differ by one.
            if a.0.abs_diff(b.0 + c.0) > 1 || a.1.abs_diff(b.1 + c.1) > 1 {
                return Err(format!("{a:?} is not {b:?} + {c:?}"));
            }
        }
        "gc,ref" => {
            let rest = m.strip_prefix("Reference Processing ").ok_or("ref")?;
            let (ms, mut rest) = rest.split_once(": weak ").ok_or("weak")?;
            decimal3(ms, "ms")?;
            for next in [
                " found, ",
                " cleared; ephemeron ",
                " found, ",
                " retained, ",
                " cleared; finalizable ",
                " found, ",
                " enqueued, ",
                " retained; binding ",
                " pass(es), ",
                " retained; weak set ",
                " found, ",
            ] {
                let (n, r) = rest.split_once(next).ok_or(next)?;
                digits(n)?;
                rest = r;
            }
            digits(rest.strip_suffix(" cleared").ok_or("weak set cleared")?)?;
        }
        "gc,age" => {
            let rest = m.strip_prefix("Age: young ").ok_or("age")?;
            let (live, rest) = rest.split_once(" live of ").ok_or("live")?;
            sized(live, 'M')?;
            let (used, rest) = rest.split_once(" (").ok_or("used")?;
            sized(used, 'M')?;
            let (percent, rest) = rest.split_once("%), tenuring threshold ").ok_or("%")?;
            if digits(percent)? > 100 {
                return Err(format!("{percent}% live"));
            }
            let (threshold, rest) = rest.split_once("; ").ok_or("threshold")?;
            if !(1..=2).contains(&digits(threshold)?) {
                return Err(format!("tenuring threshold {threshold}"));
            }
            let (n, rest) = rest
                .split_once(" pages promoted in place, ")
                .ok_or("promoted")?;
            digits(n)?;
            digits(rest.strip_suffix(" aged").ok_or("aged")?)?;
        }
        "gc,stats" => {
            if m.is_empty() {
                return Err("empty stats line".into());
            }
        }
        "safepoint" => {
            if let Some(n) = m.strip_suffix(
                " safepoint(s) ended unseen (their times are in the safepoint statistics)",
            ) {
                digits(n)?;
                return Ok(());
            }
            let rest = m.strip_prefix("Safepoint \"").ok_or("safepoint")?;
            let (_name, rest) = rest.split_once("\", Time since last: ").ok_or("name")?;
            let mut rest = rest;
            for next in [
                " ns, Reaching safepoint: ",
                " ns, At safepoint: ",
                " ns, Leaving safepoint: ",
                " ns, Total: ",
            ] {
                let (n, r) = rest.split_once(next).ok_or(next)?;
                digits(n)?;
                rest = r;
            }
            digits(rest.strip_suffix(" ns").ok_or("total")?)?;
        }
        other => return Err(format!("tag set {other:?}")),
    }
    Ok(())
}

type Records = Arc<Mutex<Vec<LogRecord>>>;

fn runtime(log: LogConfig) -> (Runtime, Arc<SimpleObjects>) {
    let objects = SimpleObjects::new();
    let rt = common::builder(32 << 20, Some(2))
        .log(log)
        .binding(objects.clone())
        .build()
        .expect("the runtime builds");
    (rt, objects)
}

fn recording(selection: &str) -> (LogConfig, Records) {
    let records: Records = Arc::default();
    let sink = records.clone();
    let output = LogOutput::callback(move |r| sink.lock().unwrap().push(r.clone()));
    (
        LogConfig::new().output(selection.parse().expect("a valid selection"), output),
        records,
    )
}

/// Allocation, live lists, class loaders coming and going, collections of
/// both causes, and a safepoint of the embedder's.
fn run(rt: &Runtime, objects: &SimpleObjects, collections: usize) {
    let mut me = rt.attach_mutator().expect("attach");
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    for i in 0..collections {
        let _ = build::list(&mut me, &roots, 50, 4, false, &mut ids);
        for _ in 0..200 {
            let _ = me.alloc(256);
        }
        let mut loader = rt.class_loader(ArenaKind::Standard);
        let _ = loader.alloc_class(4096);
        drop(loader);
        me.collect().expect("a collection");
        if i == 0 {
            drop(me);
            rt.run_at_safepoint("embedder check", || ())
                .expect("a safepoint");
            me = rt.attach_mutator().expect("attach");
        }
    }
    drop(me);
    rt.flush_log();
}

#[test]
fn every_line_parses_and_says_what_its_record_says() {
    let (log, records) = recording("all=debug");
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 4);
    let records = records.lock().unwrap().clone();
    assert!(!records.is_empty());
    let mut last_uptime = 0.0;
    for r in &records {
        let text = r.to_string();
        let line = parse_line(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(line.level, r.level.to_string(), "{text}");
        assert_eq!(line.tags, r.tags.to_string(), "{text}");
        assert_eq!(line.gc, r.gc_id, "{text}");
        assert!(
            line.uptime_s + 0.0005 >= last_uptime,
            "time goes forward: {text}"
        );
        last_uptime = line.uptime_s;
        // The structured form serializes with its kind.
        let json = serde_json::to_value(r).expect("a record serializes");
        assert!(json["event"]["kind"].is_string(), "{json}");
        assert_eq!(json["gc_id"].as_u64(), r.gc_id);
    }
    // Every tag set spoke but `gc,age` (concurrent young cycles only, see
    // below); every collection has its gc line, its three phases and its
    // safepoint line carrying its id.
    for tags in TagSet::ALL.into_iter().filter(|&t| t != TagSet::GcAge) {
        assert!(records.iter().any(|r| r.tags == tags), "no {tags} line");
    }
    let pauses: Vec<u64> = records
        .iter()
        .filter(|r| matches!(r.event, LogEvent::Pause { .. }))
        .filter_map(|r| r.gc_id)
        .collect();
    assert_eq!(pauses, vec![1, 2, 3, 4]);
    for gc in 1..=4 {
        let of = |tags| {
            records
                .iter()
                .filter(|r| r.tags == tags && r.gc_id == Some(gc))
                .count()
        };
        assert_eq!(of(TagSet::GcPhases), 3, "GC({gc}) phases");
        assert_eq!(of(TagSet::Safepoint), 1, "GC({gc}) safepoint");
        assert_eq!(of(TagSet::GcHeap), 1, "GC({gc}) heap");
        assert_eq!(of(TagSet::GcMetaspace), 1, "GC({gc}) metaspace");
        assert_eq!(of(TagSet::GcRef), 1, "GC({gc}) reference processing");
    }
    // The embedder's safepoint has its line too, without a GC id.
    assert!(records.iter().any(|r| matches!(
        &r.event,
        LogEvent::Safepoint { record } if record.name == "embedder check" && r.gc_id.is_none()
    )));
    // Pause lines agree with the collection's own numbers.
    let totals = rt.gc_totals();
    let logged: u64 = records
        .iter()
        .filter_map(|r| match r.event {
            LogEvent::Pause { pause_ns, .. } => Some(pause_ns),
            _ => None,
        })
        .sum();
    assert_eq!(logged, totals.pause_ns);
}

#[test]
fn a_selection_picks_exactly_its_tag_sets_and_levels() {
    let (log, records) = recording("gc=info,gc+phases=info");
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 2);
    let records = records.lock().unwrap();
    assert!(!records.is_empty());
    for r in records.iter() {
        assert!(
            matches!(r.tags, TagSet::Gc | TagSet::GcPhases) && r.level == LogLevel::Info,
            "{r}"
        );
    }
    assert_eq!(records.iter().filter(|r| r.tags == TagSet::Gc).count(), 2);
}

#[test]
fn stats_at_debug_come_with_every_collection_and_at_info_at_most_every_10s() {
    let (log, records) = recording("gc+stats=info");
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 3);
    // The first collection's table, then one at a collection at least 10 s
    // after the last one shown (the uptimes say when, whatever the load).
    let tables: Vec<(u64, u64)> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.gc_id.expect("a GC id"), r.uptime_ns))
        .fold(Vec::new(), |mut v, (gc, t)| {
            if v.last().is_none_or(|&(g, _)| g != gc) {
                v.push((gc, t));
            }
            v
        });
    assert_eq!(tables.first().map(|t| t.0), Some(1));
    for w in tables.windows(2) {
        assert!(w[1].1 - w[0].1 >= 10_000_000_000, "{tables:?}");
    }

    let (log, records) = recording("gc+stats=debug");
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 3);
    let records = records.lock().unwrap();
    let ids: std::collections::BTreeSet<_> = records.iter().map(|r| r.gc_id).collect();
    assert_eq!(ids.len(), 3);
    // A table row names a statistic the page allocator keeps.
    assert!(records.iter().any(|r| matches!(
        &r.event,
        LogEvent::Stats { row: Some(row), .. } if row.name.contains("Allocation Rate")
    )));
}

#[test]
fn nothing_selected_logs_nothing() {
    let (log, records) = recording("gc=off");
    assert!(log.is_empty());
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 1);
    assert!(records.lock().unwrap().is_empty());
}

#[test]
fn a_file_output_holds_the_lines_a_callback_sees() {
    let path = std::env::temp_dir().join(format!("hotmem-gc-log-{}.log", std::process::id()));
    let (log, records) = recording("gc*=info,safepoint=info");
    let spec = format!("gc*=info,safepoint=info:file={}", path.display());
    let log = log.and(LogConfig::parse(&spec).expect("a valid spec"));
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 2);
    drop(rt);
    let text = std::fs::read_to_string(&path).expect("the log file");
    let _ = std::fs::remove_file(&path);
    let expected: Vec<String> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.to_string())
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty());
    assert_eq!(lines, expected);
    for l in lines {
        parse_line(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
    }
}

#[test]
fn bad_specs_are_refused_with_the_reason() {
    for (spec, why) in [
        ("gc=loud", "unknown log level"),
        ("gc+bogus", "unknown log tag"),
        ("heap", "matches no tag set"),
        ("gc,,safepoint", "empty"),
        ("gc:pipe", "unknown log output"),
    ] {
        let e = LogConfig::parse(spec).expect_err(spec).to_string();
        assert!(e.contains(why), "{spec}: {e}");
    }
    let s: LogSelection = "all=info,gc+stats=off".parse().unwrap();
    assert_eq!(s.to_string().parse::<LogSelection>().unwrap(), s);
    assert_eq!(s.level(TagSet::GcStats), LogLevel::Off);
    assert_eq!(s.level(TagSet::Safepoint), LogLevel::Info);
}

/// Parses every line `records` print, and checks what the grammar cannot:
/// the decorations agree with the record.
fn parse_all(records: &[LogRecord]) {
    for r in records {
        let text = r.to_string();
        let line = parse_line(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(line.level, r.level.to_string(), "{text}");
        assert_eq!(line.gc, r.gc_id, "{text}");
    }
}

/// Trace: the relocation phase's workers, one line per collection beside
/// the phase's info line, saying what the collection's own statistics say.
#[test]
fn trace_adds_the_relocation_workers_of_each_collection() {
    let (log, records) = recording("all=trace");
    let (rt, objects) = runtime(log);
    let mut me = rt.attach_mutator().expect("attach");
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let mut collections = Vec::new();
    for _ in 0..3 {
        build::list(&mut me, &roots, 50, 4, false, &mut ids).expect("a list");
        build::garbage(&mut me, &roots, 64, &mut ids).expect("garbage");
        collections.push(me.collect().expect("a collection"));
    }
    drop(me);
    rt.flush_log();
    let records = records.lock().unwrap().clone();
    parse_all(&records);
    for stats in &collections {
        let workers: Vec<_> = records
            .iter()
            .filter(|r| r.gc_id == Some(stats.cycle))
            .filter_map(|r| match &r.event {
                LogEvent::RelocationWorkers { summary } => Some((r, summary)),
                _ => None,
            })
            .collect();
        let [(record, summary)] = workers[..] else {
            panic!("GC({}): {} worker lines", stats.cycle, workers.len());
        };
        assert_eq!(
            (record.level, record.tags),
            (LogLevel::Trace, TagSet::GcPhases)
        );
        assert_eq!(summary.items, stats.relocation.items);
        assert_eq!(summary.workers, stats.relocation.workers);
        assert_eq!(summary.local_items, stats.relocation.local_items);
        assert!(
            record.to_string().contains(&format!(
                "Relocate Workers: {} pages on {} workers, node-local n/a (workers unbound)",
                summary.items, summary.workers
            )),
            "{record}"
        );
    }
    // At debug it is not there.
    let (log, records) = recording("all=debug");
    let (rt, objects) = runtime(log);
    run(&rt, &objects, 1);
    let records = records.lock().unwrap();
    assert!(
        !records
            .iter()
            .any(|r| matches!(r.event, LogEvent::RelocationWorkers { .. }))
    );
}

/// `gc,age`: a concurrent young cycle's line says what its statistics say
/// (young bytes live and used, the tenuring threshold, pages promoted and
/// aged), and parses.
#[test]
fn a_concurrent_young_cycle_logs_its_survivors_ages() {
    let (log, records) = recording("gc+age=info");
    let objects = SimpleObjects::new();
    let rt = common::builder(32 << 20, Some(2))
        .collector(hotmem::CollectorMode::Concurrent)
        .generations(hotmem::Generations::YoungAndOld)
        .log(log)
        .binding(objects.clone())
        .build()
        .expect("the runtime builds");
    let mut me = rt.attach_mutator().expect("attach");
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    build::tree(&mut me, &roots, 12, 4, &mut ids).expect("a tree");
    build::garbage(&mut me, &roots, 4 << 10, &mut ids).expect("garbage");
    let stats = me.collect_young().expect("a young cycle");
    drop(me);
    rt.flush_log();
    let records = records.lock().unwrap().clone();
    parse_all(&records);
    let found = stats
        .concurrent
        .and_then(|c| c.young_survival)
        .expect("a young cycle that evacuates");
    let logged: Vec<_> = records
        .iter()
        .filter(|r| r.gc_id == Some(stats.cycle))
        .filter_map(|r| match &r.event {
            LogEvent::Age { survival } => Some((r, survival)),
            _ => None,
        })
        .collect();
    let [(record, survival)] = logged[..] else {
        panic!("GC({}): {} age lines", stats.cycle, logged.len());
    };
    assert_eq!(record.tags, TagSet::GcAge);
    assert_eq!(*survival, found);
    assert!(
        record.to_string().contains(&format!(
            "tenuring threshold {}; {} pages promoted in place, {} aged",
            found.tenuring_threshold, found.pages_promoted, found.pages_aged
        )),
        "{record}"
    );
}

/// Warning: a collection that fails (here, a root that holds no object)
/// and leaves the heap as it was. No GC id: the next collection, which
/// succeeds, is GC(1).
#[test]
fn a_failed_collection_is_a_warning() {
    let (log, records) = recording("gc=info");
    let (rt, objects) = runtime(log);
    let mut me = rt.attach_mutator().expect("attach");
    let roots = objects.root_table();
    let bad = ObjectReference::from_address(Address::new(0x1000)).unwrap();
    roots.push(Some(bad));
    let error = me.collect().expect_err("a root outside the heap");
    roots.pop();
    me.collect().expect("the root is gone: a collection");
    drop(me);
    rt.flush_log();
    let records = records.lock().unwrap().clone();
    parse_all(&records);
    let [failed, pause] = &records[..] else {
        panic!("{records:#?}");
    };
    assert_eq!((failed.level, failed.tags), (LogLevel::Warning, TagSet::Gc));
    assert_eq!(failed.gc_id, None);
    assert!(
        matches!(
            &failed.event,
            LogEvent::CollectionFailed { collection: CollectionKind::Full, cause: GcCause::Explicit, error: e }
                if *e == error.to_string()
        ),
        "{failed:?}"
    );
    assert_eq!(
        failed.to_string().split_once("[gc] ").unwrap().1,
        format!("Pause Full (Explicit) failed: {error}")
    );
    assert!(matches!(pause.event, LogEvent::Pause { .. }));
    assert_eq!(pause.gc_id, Some(1));
    // Selected at error only, a warning is not shown.
    let (log, records) = recording("gc=error");
    let (rt, objects) = runtime(log);
    objects.root_table().push(Some(bad));
    rt.collect().expect_err("a root outside the heap");
    assert!(records.lock().unwrap().is_empty());
}

/// Error: an allocation that finds no room even after collecting.
#[test]
fn out_of_memory_is_an_error() {
    let (log, records) = recording("gc=error");
    let objects = SimpleObjects::new();
    let rt = common::builder(MIN_HEAP, None)
        .log(log)
        .binding(objects.clone())
        .build()
        .expect("the runtime builds");
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().expect("attach");
    let size = 64 << 10;
    let error = (0..1_000_000u64)
        .find_map(|id| match me.alloc(size) {
            Ok(addr) => {
                // SAFETY: a fresh allocation of `size` bytes.
                roots.push(Some(unsafe { SimpleObjects::init(addr, size, 0, id) }));
                None
            }
            Err(e) => Some(e),
        })
        .expect("a 16 MiB heap cannot hold that much");
    let AllocError::OutOfMemory {
        size: asked,
        used,
        max_capacity,
    } = error
    else {
        panic!("{error:?}");
    };
    drop(me);
    let records = records.lock().unwrap().clone();
    parse_all(&records);
    let [oom] = &records[..] else {
        panic!("{records:#?}");
    };
    assert_eq!(
        (oom.level, oom.tags, oom.gc_id),
        (LogLevel::Error, TagSet::Gc, None)
    );
    assert!(
        matches!(oom.event, LogEvent::OutOfMemory { size: s, used: u, max_capacity: m }
            if (s, u, m) == (asked, used, max_capacity)),
        "{oom:?}"
    );
    assert_eq!(
        oom.to_string().split_once("[gc] ").unwrap().1,
        format!(
            "Out Of Memory: {asked} bytes could not be allocated, used {}M, max {}M",
            used >> 20,
            max_capacity >> 20
        )
    );
}
