//! [`NonMovingSpace`]: pages whose objects never move, for what a binding
//! wants to read without the load barrier (a VM's functions, constants,
//! interned names).
//!
//! Its objects are old from birth and lie in pages of their own, which no
//! collector evacuates (the heap map marks them pinned) and no cycle
//! retires: the space goes on bumping its current small page across
//! collections, so that a few objects allocated at each cycle fill one
//! page instead of starting a page each (which pinning objects of the
//! moving heap did: every cycle retires the allocation pages, and each
//! pinned object kept its page for good). A larger object (medium or
//! large) gets a page of its own, sized to it (whole granules): a current
//! medium page would keep 4 to 32 MiB for what may be one object. What a
//! concurrent marking finds
//! above a current page's top at mark start is new, as in a page allocated
//! since (see [`NewPages`](super::meta::NewPages)): allocated black. A page
//! goes back to the heap once marking finds none of its objects live and
//! nothing was allocated in it since; until then its dead objects keep
//! their room (a non-moving page is never compacted).

use hotmem_os::Address;
use hotmem_page::{
    Age, AllocError, AllocPageError, NodeId, ObjectLayout, OwnedPage, PageRef, PageRequest,
    PageSource, PageType,
};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// The non-moving space of a heap.
pub(crate) struct NonMovingSpace {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The page small objects go to.
    current: Option<OwnedPage>,
    /// The start and size of every allocated page of the space.
    pages: BTreeMap<usize, usize>,
}

impl State {
    fn is_current(&self, start: usize) -> bool {
        (self.current.as_ref()).is_some_and(|p| p.range().start().get() == start)
    }
}

impl NonMovingSpace {
    pub(crate) fn new() -> NonMovingSpace {
        NonMovingSpace {
            state: Mutex::new(State::default()),
        }
    }

    /// Allocates a small object of `layout` in the current small page, or
    /// in a new one from `source` (on `node`) when it does not fit; a
    /// larger one in a page of its own, whole granules. The memory is not
    /// initialized.
    ///
    /// # Errors
    /// The source's, when it has no page (the heap is full: collect and
    /// retry) or the size is too large for any.
    pub(crate) fn alloc<S: PageSource>(
        &self,
        source: &S,
        layout: ObjectLayout,
        node: NodeId,
    ) -> Result<Address, AllocError> {
        let sizes = source.page_sizes();
        if sizes.page_type_for(layout) != PageType::Small {
            let size =
                (sizes.page_size_for(PageType::Large, layout)).ok_or(AllocPageError::BadSize {
                    size: layout.size(),
                })?;
            let request = PageRequest {
                page_type: PageType::Large,
                size,
                age: Age::OLD,
                node,
            };
            let page = source.alloc_page(request)?;
            let addr = (page.alloc_object(layout)).expect("a page sized to its object fits it");
            let mut state = self.state.lock();
            state.pages.insert(page.range().start().get(), page.size());
            return Ok(addr);
        }
        let mut state = self.state.lock();
        if let Some(addr) = (state.current.as_ref()).and_then(|p| p.alloc_object(layout)) {
            return Ok(addr);
        }
        let request = PageRequest::small(&sizes, Age::OLD, node);
        let page = source.alloc_page(request)?;
        let addr = (page.alloc_object(layout)).expect("a new page fits an object of its size");
        state.pages.insert(page.range().start().get(), page.size());
        // The page it replaces stays allocated: the collector frees it
        // once nothing in it lives.
        state.current = Some(page);
        Ok(addr)
    }

    /// The start of every page of the space, sorted (at a pause, for the
    /// heap map).
    pub(crate) fn page_starts(&self) -> Vec<usize> {
        self.state.lock().pages.keys().copied().collect()
    }

    /// Whether `addr` lies in a page of the space.
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let state = self.state.lock();
        (state.pages.range(..=addr).next_back()).is_some_and(|(&start, &size)| addr - start < size)
    }

    /// `[top, end)` of the current page: where objects allocated from now
    /// on lie. At a pause (nobody allocates), for a concurrent mark start.
    pub(crate) fn growing(&self) -> Vec<(usize, usize)> {
        let state = self.state.lock();
        (state.current.iter())
            .map(|p| (p.top().get(), p.range().end().get()))
            .collect()
    }

    /// Whether `page`, a page of the space in which marking found no live
    /// object, may be freed: it is not a current page (which is never
    /// made current again once replaced) and nothing was allocated in it
    /// since the map saw its top at `top_at_map`. If so it leaves the
    /// space, and the caller frees it.
    pub(crate) fn release_if_unused(&self, page: &PageRef, top_at_map: usize) -> bool {
        let mut state = self.state.lock();
        let start = page.range().start().get();
        if state.is_current(start) || page.top().get() != top_at_map {
            return false;
        }
        state.pages.remove(&start).is_some()
    }
}
