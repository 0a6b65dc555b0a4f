//! The `--report` page: every chart has data, the page is written with
//! its JSON and SVGs, and it loads in headless Chromium with every chart
//! drawn (skipped, with a message, where Chromium is not installed).

use hotmem::log::LogConfig;
use hotmem::objects::{Ids, SimpleObjects, build};
use hotmem::{ArenaKind, CollectionKind, CollectorMode, NumaConfig, Runtime};
use hotmem_examples::report::{Recorder, RunData, figures, write_report};

mod common;
use common::{chromium, headless, output_within, page_check};
use std::path::Path;
use std::time::Duration;

/// A small run with everything the charts show: allocation, collections,
/// class loaders that live and die, samples.
fn small_run() -> RunData {
    run_with(CollectorMode::StopTheWorld, Rounds::Full)
}

/// Which collections a run's six rounds end with.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Rounds {
    /// A full one each.
    Full,
    /// Young and full in turn.
    YoungAndFull,
}

/// A 32 MiB runtime of `collector` logging to `recorder`, collecting only
/// when asked or when an allocation finds no room (the charts' counts are
/// known).
fn runtime(
    collector: CollectorMode,
    recorder: &Recorder,
    objects: &std::sync::Arc<SimpleObjects>,
) -> Runtime {
    Runtime::builder()
        .heap_max(32 << 20)
        .heap_sizing(hotmem::HeapSizing::Maximum)
        .numa(NumaConfig::Off)
        .gc_workers(2)
        .collector(collector)
        .log(recorder.log_config(LogConfig::new()))
        .binding(objects.clone())
        .build()
        .expect("the runtime builds")
}

/// [`small_run`] with `collector`, its rounds ending with `rounds`.
fn run_with(collector: CollectorMode, rounds: Rounds) -> RunData {
    let objects = SimpleObjects::new();
    let recorder = Recorder::new("report test");
    let rt = runtime(collector, &recorder, &objects);
    recorder.sample_now(&rt);
    let sampling = recorder
        .sample(&rt, Duration::from_millis(10))
        .expect("the sampler starts");
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let mut loaders = Vec::new();
    let mut me = rt.attach_mutator().expect("attach");
    let medium = rt.heap().page_sizes().small_object_max() * 2;
    for round in 0..6 {
        let _ = build::list(&mut me, &roots, 200, 8, false, &mut ids);
        for i in 0..400 {
            let _ = me.alloc(if i % 40 == 0 { medium } else { 512 });
        }
        for _ in 0..20 {
            let mut l = rt.class_loader(ArenaKind::Standard);
            let _ = l.alloc_class(2048);
            let _ = l.alloc_metadata(8192);
            loaders.push(l);
        }
        match rounds {
            Rounds::YoungAndFull if round % 2 == 0 => me.collect_young(),
            _ => me.collect(),
        }
        .expect("a collection");
        if round % 2 == 1 {
            roots.truncate(roots.len() / 2);
        }
        // Let the sampler see the heap between collections.
        let _native = me.enter_native();
        std::thread::sleep(Duration::from_millis(25));
    }
    drop(me);
    recorder.snapshot_spaces(&rt, "with the loaders alive");
    loaders.clear();
    recorder.snapshot_spaces(&rt, "after the loaders died");
    drop(sampling);
    recorder.sample_now(&rt);
    rt.flush_log();
    recorder.data()
}

#[test]
fn every_chart_has_data() {
    let data = small_run();
    assert_eq!(data.collections.len(), 6);
    for c in &data.collections {
        // Each collection's gc line and its safepoint line were both seen.
        assert!(c.pause_ms > 0.0 && c.at_ms > 0.0, "{c:?}");
        assert!(c.used_before >= c.used_after, "{c:?}");
    }
    assert!(data.samples.len() >= 3, "{} samples", data.samples.len());
    assert!(
        data.samples
            .iter()
            .all(|s| s.nmt_committed.contains_key("Java Heap")),
        "{:?}",
        data.samples
            .last()
            .map(|s| s.nmt_committed.keys().collect::<Vec<_>>())
    );
    // Loaders dying leave class space with fewer granules in use.
    let in_use = |k: usize| {
        data.space_snapshots[k].spaces[0]
            .cells
            .chars()
            .filter(char::is_ascii_uppercase)
            .count()
    };
    assert!(in_use(1) < in_use(0), "{} -> {}", in_use(0), in_use(1));
    let figs = figures(&data).expect("the charts draw");
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    for id in [
        "heap",
        "pauses",
        "pause-histogram",
        "allocation",
        "flush-undo",
        "nmt",
        "map-class-0",
        "map-non-class-0",
        "map-class-1",
        "map-non-class-1",
    ] {
        assert!(ids.contains(&id), "no chart {id} in {ids:?}");
    }
    for f in &figs {
        assert!(f.points > 0, "chart {} has no data", f.id);
        assert!(f.svg.starts_with("<svg") && f.svg.len() > 2000, "{}", f.id);
    }
    // The allocation chart shows the allocation: some interval allocated.
    let json = serde_json::to_value(&data).expect("serializes");
    let samples = json["samples"].as_array().expect("samples");
    let first = samples.first().unwrap()["allocated_total"]
        .as_u64()
        .unwrap();
    let last = samples.last().unwrap()["allocated_total"].as_u64().unwrap();
    assert!(last > first);
}

#[test]
fn concurrent_cycles_get_a_chart_of_their_declared_phases() {
    let data = run_with(CollectorMode::Concurrent, Rounds::Full);
    assert_eq!(data.collections.len(), 6);
    for c in &data.collections {
        let names: Vec<&str> = c.phases_ms.iter().map(|(n, _)| n.as_str()).collect();
        // In the declared order, the pauses and the marking at least.
        assert_eq!(
            &names[..3],
            ["Pause Mark Start", "Concurrent Mark", "Pause Mark End"],
            "{c:?}"
        );
        assert!(c.pause_ms > 0.0 && c.at_ms > 0.0, "{c:?}");
    }
    let figs = figures(&data).expect("the charts draw");
    // With generations (the default), full cycles have a chart of their own.
    let chart = (figs.iter())
        .find(|f| f.id == "concurrent-phases-full")
        .expect("a chart of the phases");
    assert_eq!(chart.points, 6);
    assert!(figs.iter().all(|f| f.id != "concurrent-phases-young"));
    assert!(
        chart.caption.contains("Pause Relocate Start"),
        "{}",
        chart.caption
    );
    assert!(chart.svg.contains("Concurrent Mark"));
    let stw = figures(&small_run()).expect("the charts draw");
    assert!(
        stw.iter().all(|f| !f.id.starts_with("concurrent-phases")),
        "no concurrent cycle, no chart"
    );
}

/// An allocation that stalls (no room until a cycle frees memory) shows in
/// the stalls chart, under the kind of cycle that ran when it began.
#[test]
fn allocation_stalls_get_a_chart() {
    const KIB: usize = 1 << 10;
    let objects = SimpleObjects::new();
    let recorder = Recorder::new("report test");
    let rt = runtime(CollectorMode::Concurrent, &recorder, &objects);
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let mut me = rt.attach_mutator().expect("attach");
    // 10 MiB made old by a full cycle, then dropped: a 24 MiB object finds
    // no room until a full cycle frees them, and its allocation stalls.
    for _ in 0..40 {
        build::object(&mut me, &roots, 0, 256 * KIB / 8, ids.next()).expect("an object");
    }
    me.collect().expect("a full cycle");
    roots.clear();
    recorder.sample_now(&rt);
    std::thread::sleep(Duration::from_millis(5));
    build::object(&mut me, &roots, 0, 24 << 17, ids.next()).expect("room after the stall");
    recorder.sample_now(&rt);
    drop(me);
    rt.flush_log();
    let data = recorder.data();
    let stalls = data.samples.last().expect("samples").stalls;
    let total = stalls.young.stalls + stalls.full.stalls + stalls.between.stalls;
    assert!(total >= 1, "{stalls:?}");
    let figs = figures(&data).expect("the charts draw");
    let chart = figs
        .iter()
        .find(|f| f.id == "stalls")
        .expect("a stalls chart");
    assert!(chart.points >= 1);
    assert!(chart.svg.contains("begun during a full cycle"));
    let none = figures(&small_run()).expect("the charts draw");
    assert!(none.iter().all(|f| f.id != "stalls"), "no stall, no chart");
}

/// Young and full cycles are charted apart, each with its own cycles.
#[test]
fn young_and_full_cycles_get_a_chart_each() {
    let data = run_with(CollectorMode::Concurrent, Rounds::YoungAndFull);
    let kinds: Vec<_> = data.collections.iter().map(|c| c.generation).collect();
    assert_eq!(
        kinds,
        [Some(CollectionKind::Young), Some(CollectionKind::Full)].repeat(3)
    );
    let figs = figures(&data).expect("the charts draw");
    for (id, title) in [
        ("concurrent-phases-young", "Phases per young cycle"),
        ("concurrent-phases-full", "Phases per full cycle"),
    ] {
        let chart = figs.iter().find(|f| f.id == id).expect(id);
        assert_eq!(chart.points, 3, "{id}");
        assert_eq!(chart.title, title);
        assert!(chart.svg.contains("Concurrent Mark"), "{id}");
    }
}

#[test]
fn the_page_loads_in_chromium_with_every_chart_drawn() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page");
    let data = small_run();
    let page = write_report(&data, &dir).expect("the page is written");
    let charts = figures(&data).expect("the charts draw").len();
    let html = std::fs::read_to_string(&page).expect("index.html");
    assert_eq!(html.matches("<figure class=\"chart\"").count(), charts);
    // Offline: nothing is loaded from elsewhere (the SVG namespace is a
    // name, not a load).
    for needle in ["src=\"http", "href=\"http", "<link", "@import", "url("] {
        assert!(!html.contains(needle), "the page loads {needle}");
    }
    assert!(dir.join("report.json").is_file());
    let Some(chromium) = chromium() else {
        return;
    };
    page_check(&chromium, &page, charts);
    let url = format!("file://{}", page.display());
    let shot = dir.join("screenshot.png");
    let _ = std::fs::remove_file(&shot);
    output_within(
        headless(&chromium).args([
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,3000",
            &url,
        ]),
        Duration::from_secs(120),
    );
    let bytes = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(bytes > 10_000, "screenshot of {bytes} bytes");
}
