//! The demo ends on one screen: after its progress lines, the verdict and
//! the summary fit in 40 lines and name the report page, which exists and
//! loads in headless Chromium with every chart drawn (where Chromium is
//! installed; CI installs it).

use hotmem_examples::demo_run;
use std::path::Path;

mod common;

#[test]
fn the_demo_ends_on_one_screen_naming_its_report_page() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-report");
    let mut args = demo_run::defaults();
    args.threads = 2;
    args.secs = 2.0;
    args.heap_mib = 64;
    args.numa = hotmem::NumaConfig::Off;
    args.report = Some(dir.clone());
    let mut out = Vec::new();
    let outcome = demo_run::run(&args, &mut out).expect("the demo runs and verifies");
    let text = String::from_utf8(out).expect("text");
    let lines: Vec<&str> = text.lines().collect();
    let last_progress = lines
        .iter()
        .rposition(|l| l.starts_with('['))
        .expect("progress lines");
    let after = &lines[last_progress + 1..];
    assert!(
        after.len() <= 40,
        "{} lines after the progress:\n{text}",
        after.len()
    );
    assert!(
        after.iter().any(|l| l.starts_with("verification: OK")),
        "{text}"
    );
    for what in [
        "collections:",
        "allocation:",
        "NMT:",
        "metaspace:",
        "NUMA:",
        "heap:",
    ] {
        assert!(
            after.iter().any(|l| l.starts_with(what)),
            "no {what} line:\n{text}"
        );
    }
    let page = outcome.page.expect("a report page");
    assert!(
        after
            .iter()
            .any(|l| l == &format!("report page: {}", page.display())),
        "{text}"
    );
    assert!(page.is_file() && dir.join("report.txt").is_file());
    let full = std::fs::read_to_string(dir.join("report.txt")).expect("report.txt");
    assert!(
        full.contains("OS memory map"),
        "the full report has the annotated map"
    );
    assert!(outcome.verified_objects > 0);
    let Some(chromium) = common::chromium() else {
        return;
    };
    let html = std::fs::read_to_string(&page).expect("index.html");
    let charts = html.matches("<figure class=\"chart\"").count();
    assert!(charts > 0);
    common::page_check(&chromium, &page, charts);
}
