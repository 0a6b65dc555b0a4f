//! [`GcPages`]: the GC allocator's page source, the heap's page allocator
//! with the concurrent collector's record of new pages. A young cycle that
//! runs inside a full cycle's marking copies its survivors into pages
//! allocated then: the full marking must find them new (allocated since
//! its mark start), as it finds the mutators' pages.

use super::meta::NewPages;
use hotmem_page::{
    AllocPageError, NodeId, OwnedPage, Page, PageAllocator, PageRequest, PageSizes, PageSource,
    RejectedPage,
};
use std::sync::Arc;

/// The pages the GC copies into: the heap's, recorded in `new_pages` (the
/// concurrent collector's) while a marking records.
pub(crate) struct GcPages {
    heap: Arc<PageAllocator>,
    new_pages: Option<Arc<NewPages>>,
}

impl GcPages {
    /// The pages of `heap`, recorded in `new_pages` if given.
    pub(crate) fn new(heap: Arc<PageAllocator>, new_pages: Option<Arc<NewPages>>) -> GcPages {
        GcPages { heap, new_pages }
    }
}

impl PageSource for GcPages {
    fn page_sizes(&self) -> PageSizes {
        self.heap.page_sizes()
    }

    fn nodes(&self) -> &[NodeId] {
        self.heap.nodes()
    }

    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError> {
        let page = self.heap.alloc_page(request)?;
        if let Some(n) = &self.new_pages {
            n.allocated(page.range().start().get(), page.size());
        }
        Ok(page)
    }

    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        self.heap.undo_alloc_page(page)
    }

    fn page_installed(&self, page: &Page) {
        self.heap.page_installed(page)
    }
}
