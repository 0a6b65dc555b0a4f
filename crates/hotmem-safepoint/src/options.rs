//! What a coordinator is built with: how it waits for threads and wakes
//! them ([`Strategy`]), and where its log lines go ([`SafepointLog`]).

use serde::{Deserialize, Serialize};

/// How a coordinator waits for threads and wakes them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Strategy {
    /// Threads count themselves in and sleep on a futex wait barrier keyed
    /// by the safepoint id; the last one in wakes the coordinator; one
    /// wake-all releases them (HotSpot since JDK-8203469).
    #[default]
    WaitBarrier,
    /// The coordinator polls the thread list, spinning, then yielding, then
    /// sleeping 1 ms, with JDK 11's constants (HotSpot before
    /// JDK-8203469); stopped threads sleep on one futex word and one
    /// wake-all resumes them. The baseline.
    Legacy,
}

/// Where each safepoint's `-Xlog:safepoint`-shaped line goes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SafepointLog {
    /// Nowhere (statistics are still kept).
    #[default]
    Off,
    /// One line per safepoint on standard error.
    Stderr,
}
