//! Typed errors. Every failed operation leaves the heap exactly as it was.

use crate::{NodeId, OwnedPage, PageType};
use hotmem_os::{CommitError, MapError, PhysicalError, ReserveError};
use std::fmt;

/// An object size or alignment that cannot be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// Zero bytes were asked for.
    ZeroSize,
    /// The alignment is not a power of two.
    BadAlignment {
        /// The alignment asked for.
        align: usize,
    },
    /// The alignment is larger than [`ObjectLayout::MAX_ALIGN`](crate::ObjectLayout::MAX_ALIGN).
    AlignTooLarge {
        /// The alignment asked for.
        align: usize,
    },
    /// Rounding the size up overflows.
    Overflow {
        /// The size asked for.
        size: usize,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::ZeroSize => f.write_str("object of zero bytes"),
            LayoutError::BadAlignment { align } => {
                write!(f, "alignment {align} is not a power of two")
            }
            LayoutError::AlignTooLarge { align } => {
                write!(f, "alignment {align} is larger than a virtual memory page")
            }
            LayoutError::Overflow { size } => write!(f, "object size {size} overflows"),
        }
    }
}

impl std::error::Error for LayoutError {}

/// A heap configuration that cannot be built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The capacity is too small for one medium page per partition.
    CapacityTooSmall {
        /// Bytes per partition after the split.
        per_partition: usize,
        /// The least a partition needs.
        minimum: usize,
    },
    /// The capacity is not a multiple of the granule size times the number of partitions.
    CapacityMisaligned {
        /// The capacity asked for.
        capacity: usize,
        /// The multiple it must be of.
        multiple: usize,
    },
    /// No partition was given, or the same node twice.
    BadPartitions,
    /// A page size that is not a power-of-two multiple of the granule, or a
    /// medium page not larger than a small one.
    BadPageSize {
        /// The size asked for.
        size: usize,
    },
    /// The address space ratio is below 2 or overflows.
    BadAddressSpaceRatio {
        /// The ratio asked for.
        ratio: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::CapacityTooSmall {
                per_partition,
                minimum,
            } => write!(
                f,
                "{per_partition} bytes per partition is less than the minimum of {minimum}"
            ),
            ConfigError::CapacityMisaligned { capacity, multiple } => {
                write!(f, "capacity {capacity} is not a multiple of {multiple}")
            }
            ConfigError::BadPartitions => f.write_str("partitions must be non-empty and distinct"),
            ConfigError::BadPageSize { size } => write!(f, "bad page size {size}"),
            ConfigError::BadAddressSpaceRatio { ratio } => {
                write!(
                    f,
                    "address space ratio {ratio} must be at least 2 and not overflow"
                )
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why a heap could not be created.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeapError {
    /// The configuration is invalid.
    Config(ConfigError),
    /// Reserving the address space failed.
    Reserve(ReserveError),
    /// Creating the physical memory failed.
    Physical(PhysicalError),
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeapError::Config(e) => write!(f, "heap configuration: {e}"),
            HeapError::Reserve(e) => write!(f, "heap address space: {e}"),
            HeapError::Physical(e) => write!(f, "heap physical memory: {e}"),
        }
    }
}

impl std::error::Error for HeapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HeapError::Config(e) => Some(e),
            HeapError::Reserve(e) => Some(e),
            HeapError::Physical(e) => Some(e),
        }
    }
}

impl From<ConfigError> for HeapError {
    fn from(e: ConfigError) -> Self {
        HeapError::Config(e)
    }
}

/// A failed system call while mapping or committing heap memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryError {
    /// Committing or uncommitting physical memory failed.
    Physical(PhysicalError),
    /// Mapping physical memory into the heap failed.
    Map(MapError),
    /// Unmapping failed.
    Unmap(CommitError),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::Physical(e) => write!(f, "physical memory: {e}"),
            MemoryError::Map(e) => write!(f, "map: {e}"),
            MemoryError::Unmap(e) => write!(f, "unmap: {e}"),
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::Physical(e) => Some(e),
            MemoryError::Map(e) => Some(e),
            MemoryError::Unmap(e) => Some(e),
        }
    }
}

/// Why a page could not be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocPageError {
    /// The heap (every partition the request may use) has no room for the
    /// page: used plus the page would exceed the maximum capacity. The caller
    /// frees memory (runs a GC) and retries.
    HeapExhausted {
        /// The page type asked for.
        page_type: PageType,
        /// The page size asked for.
        size: usize,
        /// The preferred node.
        node: NodeId,
    },
    /// A large page of zero bytes, or of more than the heap holds.
    BadSize {
        /// The size asked for.
        size: usize,
    },
    /// The node is not one of the heap's partitions.
    UnknownNode(NodeId),
    /// The OS refused to commit or map memory; nothing was allocated.
    Memory(MemoryError),
}

impl fmt::Display for AllocPageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocPageError::HeapExhausted {
                page_type,
                size,
                node,
            } => write!(
                f,
                "heap exhausted: no room for a {page_type} page of {size} bytes (preferring {node})"
            ),
            AllocPageError::BadSize { size } => write!(f, "bad page size {size}"),
            AllocPageError::UnknownNode(n) => write!(f, "{n} is not a heap partition"),
            AllocPageError::Memory(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AllocPageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AllocPageError::Memory(e) => Some(e),
            _ => None,
        }
    }
}

/// Why an object could not be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// No page could be had for it. [`AllocPageError::HeapExhausted`] is the
    /// one a GC fixes; see [`AllocError::is_heap_exhausted`].
    Page(AllocPageError),
}

impl AllocError {
    /// Whether freeing memory (a GC) and retrying can make it succeed.
    pub fn is_heap_exhausted(&self) -> bool {
        matches!(self, AllocError::Page(AllocPageError::HeapExhausted { .. }))
    }
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::Page(e) => write!(f, "object allocation: {e}"),
        }
    }
}

impl std::error::Error for AllocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AllocError::Page(e) => Some(e),
        }
    }
}

impl From<AllocPageError> for AllocError {
    fn from(e: AllocPageError) -> Self {
        AllocError::Page(e)
    }
}

/// Why a page could not be freed (or its allocation undone). Nothing changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FreeError {
    /// The page belongs to another heap, or is not the very page this heap
    /// handed out (identity is checked, not ids).
    ForeignPage,
    /// The page was already freed.
    AlreadyFreed,
    /// The page is still installed in an object allocator; retire it first
    /// ([`ObjectAllocator::retire_pages`](crate::ObjectAllocator::retire_pages)).
    InUse,
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FreeError::ForeignPage => "the page belongs to another heap",
            FreeError::AlreadyFreed => "the page was already freed",
            FreeError::InUse => "the page is still installed in an object allocator",
        })
    }
}

impl std::error::Error for FreeError {}

/// A page that [`PageAllocator::free_page`](crate::PageAllocator::free_page)
/// or [`undo_alloc_page`](crate::PageAllocator::undo_alloc_page) did not
/// take, handed back to its owner with the reason. Nothing changed.
#[derive(Debug)]
pub struct RejectedPage {
    error: FreeError,
    page: OwnedPage,
}

impl RejectedPage {
    pub(crate) fn new(error: FreeError, page: OwnedPage) -> RejectedPage {
        RejectedPage { error, page }
    }

    /// Why the page was not taken.
    pub fn error(&self) -> FreeError {
        self.error
    }

    /// The page, back to its owner (e.g. to free it in the heap it belongs to).
    pub fn into_page(self) -> OwnedPage {
        self.page
    }
}

impl fmt::Display for RejectedPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {} not freed: {}", self.page.id(), self.error)
    }
}

impl std::error::Error for RejectedPage {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
