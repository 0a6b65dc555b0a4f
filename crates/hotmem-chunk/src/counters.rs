//! `ChunkCounters`: what a space has done, counted under its lock and
//! copied out into its statistics.

use serde::{Deserialize, Serialize};

/// What a space has done since it was created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCounters {
    /// Chunks handed out.
    pub gets: u64,
    /// Chunks returned.
    pub returns: u64,
    /// Halvings of a larger chunk to serve a smaller request.
    pub splits: u64,
    /// Merges of a returned chunk with its free buddy.
    pub merges: u64,
    /// In-place enlargements into a free buddy.
    pub enlargements: u64,
    /// Chunks carved from untouched space.
    pub carved: u64,
    /// Alignment chunks carved in front of a chunk (baseline only).
    pub alignment_chunks: u64,
    /// Commit calls made to the OS.
    pub commits: u64,
    /// Bytes committed, in total.
    pub committed_bytes: u64,
    /// Uncommit calls made to the OS.
    pub uncommits: u64,
    /// Bytes uncommitted, in total.
    pub uncommitted_bytes: u64,
    /// Purges run.
    pub purges: u64,
}
