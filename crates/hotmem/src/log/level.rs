//! [`LogLevel`]: how much a tag set says.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The level of a log line, and the most detailed level a selection lets
/// through. Ordered: `Off < Error < Warning < Info < Debug < Trace`; a tag
/// set selected at `Info` shows `Error`, `Warning` and `Info` lines.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LogLevel {
    /// Nothing: the level of a tag set that is not selected.
    #[default]
    Off,
    /// Something failed: an allocation ran out of memory.
    Error,
    /// Something unexpected that the runtime recovered from: a collection
    /// that failed and left the heap as it was.
    Warning,
    /// One line per collection and phase: what a user tuning the heap reads.
    Info,
    /// More detail: statistics at every collection, safepoints not seen.
    Debug,
    /// Everything: the detail of a phase (the relocation phase's workers
    /// and their node locality).
    Trace,
}

impl LogLevel {
    /// Every level, `Off` first.
    pub const ALL: [LogLevel; 6] = [
        LogLevel::Off,
        LogLevel::Error,
        LogLevel::Warning,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// The name used in selectors and in the level decoration.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warning => "warning",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A word that names no level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLevel(pub String);

impl fmt::Display for UnknownLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown log level {:?} (off, error, warning, info, debug, trace)",
            self.0
        )
    }
}

impl std::error::Error for UnknownLevel {}

impl FromStr for LogLevel {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLevel(s.to_string()))
    }
}
