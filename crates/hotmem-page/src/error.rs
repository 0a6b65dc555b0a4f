//! Typed errors. Every failed operation leaves the heap exactly as it was.

use crate::{NodeId, OwnedPage, PageType};
use hotmem_os::{CommitError, MapError, PhysicalError, ReserveError};
use thiserror::Error;

// Defined next to ObjectLayout, whose constructors return it.
pub use crate::types::LayoutError;

/// A heap configuration that cannot be built.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The capacity is too small for one medium page per partition.
    #[error("{per_partition} bytes per partition is less than the minimum of {minimum}")]
    CapacityTooSmall {
        /// Bytes per partition after the split.
        per_partition: usize,
        /// The least a partition needs.
        minimum: usize,
    },
    /// The capacity is not a multiple of the granule size times the number of partitions.
    #[error("capacity {capacity} is not a multiple of {multiple}")]
    CapacityMisaligned {
        /// The capacity asked for.
        capacity: usize,
        /// The multiple it must be of.
        multiple: usize,
    },
    /// No partition was given, or the same node twice.
    #[error("partitions must be non-empty and distinct")]
    BadPartitions,
    /// A page size that is not a power-of-two multiple of the granule, or a
    /// medium page not larger than a small one.
    #[error("bad page size {size}")]
    BadPageSize {
        /// The size asked for.
        size: usize,
    },
    /// The address space ratio is below 2 or overflows.
    #[error("address space ratio {ratio} must be at least 2 and not overflow")]
    BadAddressSpaceRatio {
        /// The ratio asked for.
        ratio: usize,
    },
}

/// Why a heap could not be created.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HeapError {
    /// The configuration is invalid.
    #[error("heap configuration: {0}")]
    Config(#[from] ConfigError),
    /// Reserving the address space failed.
    #[error("heap address space: {0}")]
    Reserve(#[source] ReserveError),
    /// Creating the physical memory failed.
    #[error("heap physical memory: {0}")]
    Physical(#[source] PhysicalError),
}

/// A failed system call while mapping or committing heap memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// Committing or uncommitting physical memory failed.
    #[error("physical memory: {0}")]
    Physical(#[source] PhysicalError),
    /// Mapping physical memory into the heap failed.
    #[error("map: {0}")]
    Map(#[source] MapError),
    /// Unmapping failed.
    #[error("unmap: {0}")]
    Unmap(#[source] CommitError),
}

/// Why a page could not be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AllocPageError {
    /// The heap (every partition the request may use) has no room for the
    /// page: used plus the page would exceed the maximum capacity. The caller
    /// frees memory (runs a GC) and retries.
    #[error("heap exhausted: no room for a {page_type} page of {size} bytes (preferring {node})")]
    HeapExhausted {
        /// The page type asked for.
        page_type: PageType,
        /// The page size asked for.
        size: usize,
        /// The preferred node.
        node: NodeId,
    },
    /// A large page of zero bytes, or of more than the heap holds.
    #[error("bad page size {size}")]
    BadSize {
        /// The size asked for.
        size: usize,
    },
    /// The node is not one of the heap's partitions.
    #[error("{0} is not a heap partition")]
    UnknownNode(NodeId),
    /// The OS refused to commit or map memory; nothing was allocated.
    #[error("{0}")]
    Memory(#[source] MemoryError),
}

/// Why an object could not be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AllocError {
    /// No page could be had for it. [`AllocPageError::HeapExhausted`] is the
    /// one a GC fixes; see [`AllocError::is_heap_exhausted`].
    #[error("object allocation: {0}")]
    Page(#[from] AllocPageError),
}

impl AllocError {
    /// Whether freeing memory (a GC) and retrying can make it succeed.
    pub fn is_heap_exhausted(&self) -> bool {
        matches!(self, AllocError::Page(AllocPageError::HeapExhausted { .. }))
    }
}

/// Why a page could not be freed (or its allocation undone). Nothing changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FreeError {
    /// The page belongs to another heap, or is not the very page this heap
    /// handed out (identity is checked, not ids).
    #[error("the page belongs to another heap")]
    ForeignPage,
    /// The page was already freed.
    #[error("the page was already freed")]
    AlreadyFreed,
    /// The page is still installed in an object allocator; retire it first
    /// ([`ObjectAllocator::retire_pages`](crate::ObjectAllocator::retire_pages)).
    #[error("the page is still installed in an object allocator")]
    InUse,
}

/// A page that [`PageAllocator::free_page`](crate::PageAllocator::free_page)
/// or [`undo_alloc_page`](crate::PageAllocator::undo_alloc_page) did not
/// take, handed back to its owner with the reason. Nothing changed.
#[derive(Debug, Error)]
#[error("page {} not freed: {error}", page.id())]
pub struct RejectedPage {
    #[source]
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
