//! Code the examples share: the `--report DIR` page of charts (see
//! [`report`]), the demo's and the soak's workload, the
//! hostile-embedder suite ([`hostile`]), and the pause examples' cycles
//! ([`back_to_back`]).

pub mod back_to_back;
pub mod demo_run;
pub mod hostile;
pub mod report;
pub mod workload;

/// The repository README's examples (the user guide's embedding), compiled
/// and run as doc tests here: the published crates package only their own
/// READMEs.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct RepositoryReadmeDoctests;

/// The runtime log the examples write: `HOTMEM_LOG`, in the syntax of
/// [`hotmem::log::LogConfig::parse`] (`gc*=info,safepoint=debug`, to
/// standard output; `gc*:file=gc.log` to a file); none when unset.
///
/// # Errors
/// The variable's parse error, with its name.
pub fn log_from_env() -> Result<hotmem::log::LogConfig, String> {
    match std::env::var("HOTMEM_LOG") {
        Ok(spec) => hotmem::log::LogConfig::parse(&spec).map_err(|e| format!("HOTMEM_LOG: {e}")),
        Err(_) => Ok(hotmem::log::LogConfig::new()),
    }
}

/// The log an example runs with, and the recorder of its `--report` page:
/// `HOTMEM_LOG` ([`log_from_env`]), plus the records the page is drawn from
/// when `report` is asked for (titled `title`).
///
/// # Errors
/// As [`log_from_env`].
pub fn log_and_recorder(
    report: bool,
    title: impl FnOnce() -> String,
) -> Result<(hotmem::log::LogConfig, Option<report::Recorder>), String> {
    let log = log_from_env()?;
    if !report {
        return Ok((log, None));
    }
    let recorder = report::Recorder::new(&title());
    Ok((recorder.log_config(log), Some(recorder)))
}
