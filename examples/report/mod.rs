//! The `--report DIR` page of the demo, the soak and `binary_trees`:
//! `DIR/index.html` with SVG charts drawn by `plotters`, each chart also as
//! `DIR/ID.svg`, and `DIR/report.json`, the data they were drawn from.
//!
//! The data comes from the runtime's structured GC log (a
//! [`hotmem::log::LogOutput::Callback`] that receives the `gc`,
//! `gc,phases` and `safepoint` records; a concurrent cycle's phases are
//! charted in the order the runtime declares them,
//! [`hotmem::log::GcPhase::of`]), from samples of the heap counters and NMT taken
//! every few hundred milliseconds, and from metaspace pictures taken at
//! chosen moments ([`Recorder`]).
//!
//! It lives here, in the examples, rather than in the facade: plotting is
//! a presentation concern with a dependency tree of its own, and an
//! embedder gets every number it needs from the facade's structured log
//! and views (as this module does) and can draw them with whatever its
//! tools use.
//!
//! ```no_run
//! use hotmem_examples::report::{Recorder, write_report};
//! # fn f(builder: hotmem::RuntimeBuilder) -> Result<(), Box<dyn std::error::Error>> {
//! let recorder = Recorder::new("my run");
//! let rt = builder.log(recorder.log_config(hotmem::log::LogConfig::new())).build()?;
//! let sampling = recorder.sample(&rt, std::time::Duration::from_millis(200))?;
//! // ... run ...
//! drop(sampling);
//! rt.flush_log();
//! write_report(&recorder.data(), std::path::Path::new("target/report"))?;
//! # Ok(()) }
//! ```

mod charts;
mod data;
mod figures;
mod page;
mod recorder;
mod spacemap;

pub use data::{Collection, RunData, Sample, SpaceImage, SpaceSnapshot};
pub use figures::{Figure, figures};
pub use recorder::{Recorder, Sampling};

use std::path::{Path, PathBuf};

/// Writes `dir/index.html`, `dir/report.json` and one SVG per chart;
/// returns the page's path.
///
/// # Errors
/// A chart that cannot be drawn, or a file that cannot be written.
pub fn write_report(data: &RunData, dir: &Path) -> Result<PathBuf, String> {
    let figs = figures(data)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    for f in &figs {
        write(&format!("{}.svg", f.id), &f.svg)?;
    }
    let json = serde_json::to_string_pretty(data).map_err(|e| e.to_string())?;
    write("report.json", &json)?;
    write("index.html", &page::html(&data.title, &figs))?;
    Ok(dir.join("index.html"))
}
