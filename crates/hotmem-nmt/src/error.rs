//! Typed errors. A rejected operation leaves the tracker exactly as it was.

use hotmem_os::{MemRange, MemTag};
use std::fmt;

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
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrackError {
    /// The range has no bytes.
    Empty {
        /// The operation.
        op: Operation,
    },
    /// A reservation overlaps address space that is already reserved.
    Overlap {
        /// The range asked for.
        range: MemRange,
        /// The first reserved part of it.
        reserved: MemRange,
    },
    /// A commit, uncommit, release or tag change covers address space that
    /// is not reserved.
    NotReserved {
        /// The operation.
        op: Operation,
        /// The range asked for.
        range: MemRange,
        /// The first part of it that is not reserved.
        gap: MemRange,
    },
    /// The tag's number is not below [`MAX_TAGS`](crate::MAX_TAGS).
    TagOutOfRange {
        /// The tag.
        tag: MemTag,
    },
}

impl fmt::Display for TrackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrackError::Empty { op } => write!(f, "{op:?} of an empty range"),
            TrackError::Overlap { range, reserved } => {
                write!(f, "reserve of {range} overlaps reserved {reserved}")
            }
            TrackError::NotReserved { op, range, gap } => {
                write!(f, "{op:?} of {range}: {gap} is not reserved")
            }
            TrackError::TagOutOfRange { tag } => write!(
                f,
                "tag number {} is not below {}",
                tag.raw(),
                crate::MAX_TAGS
            ),
        }
    }
}

impl std::error::Error for TrackError {}

/// Why a custom tag could not be registered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TagError {
    /// The name is empty or only white space.
    EmptyName,
    /// The name is longer than [`MAX_TAG_NAME`](crate::MAX_TAG_NAME) bytes.
    NameTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Every custom tag number is taken.
    Full {
        /// How many custom tags there can be.
        capacity: usize,
    },
}

impl fmt::Display for TagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagError::EmptyName => f.write_str("tag name is empty"),
            TagError::NameTooLong { len, max } => {
                write!(f, "tag name of {len} bytes is longer than {max}")
            }
            TagError::Full { capacity } => {
                write!(f, "all {capacity} custom tags are registered")
            }
        }
    }
}

impl std::error::Error for TagError {}

/// Why the annotated memory map could not be produced.
#[derive(Debug)]
#[non_exhaustive]
pub enum MapError {
    /// `/proc/self/smaps` could not be read.
    Io(std::io::Error),
    /// The writer refused the text.
    Fmt(fmt::Error),
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::Io(e) => write!(f, "cannot read /proc/self/smaps: {e}"),
            MapError::Fmt(_) => f.write_str("the writer refused the memory map"),
        }
    }
}

impl std::error::Error for MapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MapError::Io(e) => Some(e),
            MapError::Fmt(e) => Some(e),
        }
    }
}

impl From<std::io::Error> for MapError {
    fn from(e: std::io::Error) -> Self {
        MapError::Io(e)
    }
}

impl From<fmt::Error> for MapError {
    fn from(e: fmt::Error) -> Self {
        MapError::Fmt(e)
    }
}
