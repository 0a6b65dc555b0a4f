//! `PageSource`: where an object allocator gets its pages from.

use crate::error::{AllocPageError, RejectedPage};
use crate::{Age, NodeId, ObjectLayout, OwnedPage, Page, PageSizes, PageType};
use std::ops::Deref;

/// One page to allocate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// Small, medium or large.
    pub page_type: PageType,
    /// Bytes: the small or medium page size, or a multiple of the granule.
    pub size: usize,
    /// The age of the objects it will hold.
    pub age: Age,
    /// The node whose memory is preferred.
    pub node: NodeId,
}

impl PageRequest {
    /// A small page.
    pub fn small(sizes: &PageSizes, age: Age, node: NodeId) -> PageRequest {
        PageRequest {
            page_type: PageType::Small,
            size: sizes.small_page(),
            age,
            node,
        }
    }

    /// A medium page.
    pub fn medium(sizes: &PageSizes, age: Age, node: NodeId) -> PageRequest {
        PageRequest {
            page_type: PageType::Medium,
            size: sizes.medium_page(),
            age,
            node,
        }
    }

    /// The page an object of `layout` goes to.
    ///
    /// # Errors
    /// [`AllocPageError::BadSize`] if the large page size overflows.
    pub fn for_object(
        sizes: &PageSizes,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Result<PageRequest, AllocPageError> {
        let page_type = sizes.page_type_for(layout);
        let size = sizes
            .page_size_for(page_type, layout)
            .ok_or(AllocPageError::BadSize {
                size: layout.size(),
            })?;
        Ok(PageRequest {
            page_type,
            size,
            age,
            node,
        })
    }
}

/// A provider of pages for an [`ObjectAllocator`](crate::ObjectAllocator).
///
/// [`PageAllocator`](crate::PageAllocator) is the real one. The trait exists
/// so that the object allocator's page installation logic, the part that
/// races, can be checked by loom over a page source without real memory,
/// with the very same code.
///
/// Pages travel as [`OwnedPage`] handles, which only a
/// [`PageAllocator`](crate::PageAllocator) makes: a source outside this crate
/// can wrap another source (to count or route pages) but cannot make pages
/// up.
pub trait PageSource: Send + Sync {
    /// The page sizes (they decide which page type an object goes to).
    fn page_sizes(&self) -> PageSizes;

    /// The partitions' node ids, in partition order.
    fn nodes(&self) -> &[NodeId];

    /// Allocates a page, without waiting for memory to be freed.
    ///
    /// # Errors
    /// [`AllocPageError::HeapExhausted`] when there is no room; others as
    /// the source defines.
    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError>;

    /// Takes back a page that was allocated but is not needed, without
    /// counting it as used (Undo Page Allocation).
    ///
    /// # Errors
    /// As [`PageAllocator::free_page`](crate::PageAllocator::free_page).
    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage>;

    /// Told when an object allocator installs `page` as a shared page.
    fn page_installed(&self, page: &Page) {
        let _ = page;
    }
}

/// A pointer to a page source (`&S`, `Arc<S>`, `Box<S>`, ...) is a page
/// source: it forwards every call to the source it points to.
impl<P> PageSource for P
where
    P: Deref + Send + Sync,
    P::Target: PageSource,
{
    fn page_sizes(&self) -> PageSizes {
        (**self).page_sizes()
    }
    fn nodes(&self) -> &[NodeId] {
        (**self).nodes()
    }
    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError> {
        (**self).alloc_page(request)
    }
    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        (**self).undo_alloc_page(page)
    }
    fn page_installed(&self, page: &Page) {
        (**self).page_installed(page)
    }
}
