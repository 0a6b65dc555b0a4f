//! Typed errors. A rejected operation leaves the tracker exactly as it was.

use hotmem_os::{MemRange, MemTag};
use std::fmt;
use thiserror::Error;

// Defined next to the tag registry, the one place that returns it.
pub use crate::tags::TagError;

/// A tracker operation, named in errors.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum Operation {
    /// [`Tracker::reserve`](crate::Tracker::reserve).
    Reserve,
    /// [`Tracker::commit`](crate::Tracker::commit).
    Commit,
    /// [`Tracker::uncommit`](crate::Tracker::uncommit).
    Uncommit,
    /// [`Tracker::release`](crate::Tracker::release).
    Release,
    /// [`Tracker::set_tag`](crate::Tracker::set_tag).
    SetTag,
}

/// Why a tracker operation was rejected. Nothing changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TrackError {
    /// The range has no bytes.
    #[error("{op:?} of an empty range")]
    Empty {
        /// The operation.
        op: Operation,
    },
    /// A reservation overlaps address space that is already reserved.
    #[error("reserve of {range} overlaps reserved {reserved}")]
    Overlap {
        /// The range asked for.
        range: MemRange,
        /// The first reserved part of it.
        reserved: MemRange,
    },
    /// A commit, uncommit, release or tag change covers address space that
    /// is not reserved.
    #[error("{op:?} of {range}: {gap} is not reserved")]
    NotReserved {
        /// The operation.
        op: Operation,
        /// The range asked for.
        range: MemRange,
        /// The first part of it that is not reserved.
        gap: MemRange,
    },
    /// The tag's number is not below [`MAX_TAGS`](crate::MAX_TAGS).
    #[error("tag number {} is not below {}", tag.raw(), crate::MAX_TAGS)]
    TagOutOfRange {
        /// The tag.
        tag: MemTag,
    },
}

/// Why the annotated memory map could not be produced.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MapError {
    /// `/proc/self/smaps` could not be read.
    #[error("cannot read /proc/self/smaps: {0}")]
    Io(#[from] std::io::Error),
    /// The writer refused the text.
    #[error("the writer refused the memory map")]
    Fmt(#[from] fmt::Error),
}
