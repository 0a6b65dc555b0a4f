//! What the report and demo tests share: finding and driving headless
//! Chromium.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium's binary: `None` (with a message saying so) where it is not
/// installed, unless `HOTMEM_REQUIRE_CHROMIUM` is set (CI installs it):
/// then its absence fails the test.
pub(crate) fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("HOTMEM_REQUIRE_CHROMIUM").is_none(),
            "HOTMEM_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
        eprintln!(
            "SKIPPED: no chromium on PATH (Debian: apt-get install chromium); the page was written but not rendered"
        );
    }
    found
}

/// Runs `cmd` for at most `limit`; its standard output.
pub(crate) fn output_within(cmd: &mut Command, limit: Duration) -> String {
    let out = std::env::temp_dir().join(format!(
        "hotmem-report-chromium-{}-{:?}.out",
        std::process::id(),
        std::thread::current().id()
    ));
    let file = std::fs::File::create(&out).expect("an output file");
    let mut child = cmd
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    text
}

pub(crate) fn headless(chromium: &Path) -> Command {
    let mut c = Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
        // No network: this machine's (and CI's) is closed, and each refused
        // connection costs time.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
    ]);
    let profile = std::env::temp_dir().join(format!(
        "hotmem-chromium-profile-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Loads `page` in headless Chromium and checks the page's own verdict:
/// every one of its `charts` charts drawn.
pub(crate) fn page_check(chromium: &Path, page: &Path, charts: usize) {
    let url = format!("file://{}", page.display());
    let dom = output_within(
        headless(chromium).args(["--dump-dom", &url]),
        Duration::from_secs(120),
    );
    let verdict = format!("<span id=\"check\">ok {charts} charts</span>");
    assert!(
        dom.contains(&verdict),
        "the page's own check did not pass: {}",
        dom.split("<span id=\"check\">").nth(1).map_or(
            "(no check element: did the page load?)",
            |s| s.split("</span>").next().unwrap_or("")
        )
    );
}
