//! Code the examples share: the `--report DIR` page of charts (see
//! [`report`]).

pub mod report;

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
