//! `Page`: a range of heap memory that objects are bump-allocated in.

use crate::sync::{AtomicU8, AtomicUsize, CachePadded, Ordering};
use crate::{Age, NodeId, ObjectLayout, PageType};
use hotmem_os::{Address, MemRange};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Who may touch a page right now.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PageState {
    /// Allocated and owned by whoever allocated it (a GC worker's target
    /// page, a large object's page, or a page an object allocator retired).
    /// It may be freed.
    Allocated,
    /// Installed in an [`ObjectAllocator`](crate::ObjectAllocator): other
    /// threads may be bump-allocating in it. It cannot be freed until the
    /// allocator retires it.
    Installed,
    /// Given back to the page cache. Its range means nothing any more.
    Freed,
}

impl PageState {
    const fn to_raw(self) -> u8 {
        match self {
            PageState::Allocated => 0,
            PageState::Installed => 1,
            PageState::Freed => 2,
        }
    }

    const fn from_raw(raw: u8) -> PageState {
        match raw {
            0 => PageState::Allocated,
            1 => PageState::Installed,
            _ => PageState::Freed,
        }
    }
}

/// A page: a type, the age of its objects, the NUMA node of its memory, an
/// address range and a bump pointer. Objects are allocated by moving the
/// bump pointer with one compare-and-swap, so any number of threads may
/// allocate in the same page at once.
///
/// A `Page` is only ever seen through a handle the heap made: its owner
/// holds the [`OwnedPage`] that [`PageAllocator::alloc_page`](crate::PageAllocator::alloc_page)
/// returned (the only way to allocate objects in it or to free it safely);
/// everybody else sees read-only [`PageRef`] views, from
/// [`PageAllocator::pages`](crate::PageAllocator::pages) and the object
/// allocator's reports. There is no public constructor: a page cannot be
/// forged.
///
/// ```compile_fail,E0624
/// # use hotmem_os::{Address, MemRange};
/// # use hotmem_page::{Age, NodeId, Page, PageType};
/// let range = MemRange::new(Address::new(0x10000), 4096).unwrap();
/// let forged = Page::new(PageType::Small, Age::EDEN, NodeId::ZERO, range, 1, 1); // private
/// ```
///
/// A view cannot allocate in the page either (only the owner's handle can):
///
/// ```compile_fail,E0624
/// # use hotmem_os::Memory;
/// # use hotmem_page::{Age, HeapConfig, NodeId, ObjectLayout, PageAllocator, PageRequest};
/// let heap = PageAllocator::new(&Memory::new(), HeapConfig::new(16 << 20)).unwrap();
/// let owned = heap.alloc_page(PageRequest::small(&heap.page_sizes(), Age::EDEN, NodeId::ZERO)).unwrap();
/// let view = heap.pages().pop().unwrap();
/// view.alloc_object(ObjectLayout::new(8).unwrap()); // `Page::alloc_object` is private
/// # drop(owned);
/// ```
///
/// The heap keeps its own reference until the page is freed, so a view is
/// always safe to read, even after the page is freed (it then says
/// [`PageState::Freed`]).
pub struct Page {
    top: CachePadded<AtomicUsize>,
    state: AtomicU8,
    page_type: PageType,
    age: Age,
    node: NodeId,
    range: MemRange,
    heap: u64,
    id: u64,
}

/// A shared, read-only view of a page: what introspection hands out
/// ([`PageAllocator::pages`](crate::PageAllocator::pages),
/// [`ObjectAllocator::installed_pages`](crate::ObjectAllocator::installed_pages)).
/// It can read the page's type, range, bump pointer and state, but neither
/// allocate in the page nor free it safely: freeing pages found through views
/// is the collector's [`unsafe` bulk free](crate::PageAllocator::free_pages).
pub type PageRef = crate::sync::Arc<Page>;

/// The owner's handle of a page: returned by
/// [`PageAllocator::alloc_page`](crate::PageAllocator::alloc_page) (and
/// [`ObjectAllocator::retire_pages`](crate::ObjectAllocator::retire_pages)),
/// unique (not `Clone`, no public constructor), and the only safe way to
/// allocate objects in the page ([`OwnedPage::alloc_object`], from any number
/// of threads through `&OwnedPage`) and to free it
/// ([`PageAllocator::free_page`](crate::PageAllocator::free_page) consumes it).
/// It dereferences to the read-only [`Page`].
///
/// Dropping the handle does not free the page: it stays allocated (listed by
/// [`PageAllocator::pages`](crate::PageAllocator::pages)) until a collector
/// frees it with [`PageAllocator::free_pages`](crate::PageAllocator::free_pages).
///
/// ```compile_fail,E0599
/// # use hotmem_os::Memory;
/// # use hotmem_page::{Age, HeapConfig, NodeId, PageAllocator, PageRequest};
/// let heap = PageAllocator::new(&Memory::new(), HeapConfig::new(16 << 20)).unwrap();
/// let page = heap.alloc_page(PageRequest::small(&heap.page_sizes(), Age::EDEN, NodeId::ZERO)).unwrap();
/// let copy = page.clone(); // an owner's handle cannot be duplicated
/// ```
pub struct OwnedPage {
    page: PageRef,
}

impl OwnedPage {
    /// The owner's handle of a page the caller just created and shares with
    /// nobody but the heap's live list.
    pub(crate) fn new(page: PageRef) -> OwnedPage {
        OwnedPage { page }
    }

    /// Allocates an object in this page: one compare-and-swap on the bump
    /// pointer (retried only when another thread moved it first). `None`
    /// when the object does not fit in what is left. The memory is mapped
    /// and committed for as long as the page is not freed and its heap lives.
    #[inline]
    pub fn alloc_object(&self, layout: ObjectLayout) -> Option<Address> {
        self.page.alloc_object(layout)
    }

    /// Takes back the page's last allocation, `[start, end)`: if the bump
    /// pointer is still at `end`, it goes back to `start` and the bytes can
    /// be allocated again. Returns whether it did; `false` (and nothing
    /// changes) when something was allocated after it, or when `[start,
    /// end)` is not an allocated part of this page.
    ///
    /// A runtime uses it to give back the unused end of a thread-local
    /// buffer when it retires the page, so that the page's top is again
    /// the end of its last object.
    ///
    /// ```
    /// # use hotmem_os::Memory;
    /// # use hotmem_page::{Age, HeapConfig, NodeId, ObjectLayout, PageAllocator, PageRequest};
    /// let heap = PageAllocator::new(&Memory::new(), HeapConfig::new(16 << 20)).unwrap();
    /// let page = heap.alloc_page(PageRequest::small(&heap.page_sizes(), Age::EDEN, NodeId::ZERO)).unwrap();
    /// let a = page.alloc_object(ObjectLayout::new(64).unwrap()).unwrap();
    /// let b = page.alloc_object(ObjectLayout::new(64).unwrap()).unwrap();
    /// assert!(!page.undo_alloc(a, b), "not the last allocation");
    /// assert!(page.undo_alloc(b, page.top()));
    /// assert_eq!(page.top(), b);
    /// ```
    pub fn undo_alloc(&self, start: Address, end: Address) -> bool {
        let range = self.page.range();
        if start < range.start() || start > end || end > range.end() {
            return false;
        }
        // Relaxed, as for allocation: whoever allocates these bytes next
        // owns them alone.
        self.page
            .top
            .compare_exchange(end.get(), start.get(), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// A read-only view of the page (for reports, or to keep after freeing it).
    pub fn view(&self) -> PageRef {
        self.page.clone()
    }
}

impl std::ops::Deref for OwnedPage {
    type Target = Page;

    #[inline]
    fn deref(&self) -> &Page {
        &self.page
    }
}

impl fmt::Debug for OwnedPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedPage").field(&*self.page).finish()
    }
}

impl fmt::Debug for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Page")
            .field("id", &self.id)
            .field("type", &self.page_type)
            .field("age", &self.age)
            .field("node", &self.node)
            .field("range", &self.range)
            .field("used", &self.used_bytes())
            .field("state", &self.state())
            .finish()
    }
}

impl Page {
    /// A page over `range`, empty, in state [`PageState::Allocated`].
    ///
    /// Page sources create pages; the memory behind `range` is theirs to
    /// provide (the [`PageAllocator`](crate::PageAllocator) maps real
    /// memory there; a model may use addresses that are never touched).
    /// `heap` tells which heap a page belongs to (0: none). Crate-private:
    /// a page made outside the heap could be passed off as a live one.
    pub(crate) fn new(
        page_type: PageType,
        age: Age,
        node: NodeId,
        range: MemRange,
        heap: u64,
        id: u64,
    ) -> Page {
        Page {
            top: CachePadded::new(AtomicUsize::new(range.start().get())),
            state: AtomicU8::new(PageState::Allocated.to_raw()),
            page_type,
            age,
            node,
            range,
            heap,
            id,
        }
    }

    /// Allocates an object in this page: one compare-and-swap on the bump
    /// pointer (retried only when another thread moved it first). `None`
    /// when the object does not fit in what is left. Crate-private: only the
    /// owner ([`OwnedPage`]) and the object allocator's slots allocate.
    #[inline]
    pub(crate) fn alloc_object(&self, layout: ObjectLayout) -> Option<Address> {
        let end = self.range.end().get();
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            // `top <= end` lies in the address space, far below
            // `usize::MAX - MAX_ALIGN`: aligning it cannot overflow. The size
            // is the caller's and can be close to `usize::MAX`: checked.
            let start = (top + layout.align() - 1) & !(layout.align() - 1);
            let new_top = match start.checked_add(layout.size()) {
                Some(new_top) if new_top <= end => new_top,
                _ => return None,
            };
            // Relaxed is enough: the bytes belong to the winner alone, and
            // the page itself was published with release/acquire.
            match self
                .top
                .compare_exchange_weak(top, new_top, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(Address::new(start)),
                Err(current) => top = current,
            }
        }
    }

    /// The page type.
    #[inline]
    pub fn page_type(&self) -> PageType {
        self.page_type
    }

    /// The age of the objects in this page.
    #[inline]
    pub fn age(&self) -> Age {
        self.age
    }

    /// The NUMA node (partition) whose memory the page is made of.
    #[inline]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The page's address range.
    #[inline]
    pub fn range(&self) -> MemRange {
        self.range
    }

    /// The page's size in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        self.range.len()
    }

    /// The current bump pointer: objects lie in `[range.start, top)`.
    #[inline]
    pub fn top(&self) -> Address {
        Address::new(self.top.load(Ordering::Acquire))
    }

    /// Bytes allocated so far (alignment padding included).
    #[inline]
    pub fn used_bytes(&self) -> usize {
        self.top.load(Ordering::Acquire) - self.range.start().get()
    }

    /// Bytes still free.
    #[inline]
    pub fn free_bytes(&self) -> usize {
        self.range.end().get() - self.top.load(Ordering::Acquire)
    }

    /// The page's current state.
    #[inline]
    pub fn state(&self) -> PageState {
        PageState::from_raw(self.state.load(Ordering::Acquire))
    }

    /// Whether `addr` lies in the allocated part of the page.
    pub fn contains_object(&self, addr: Address) -> bool {
        self.range.start() <= addr && addr.get() < self.top.load(Ordering::Acquire)
    }

    /// A number unique within the heap, in allocation order.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id of the heap the page belongs to (0 for pages made by other page sources).
    #[inline]
    pub fn heap_id(&self) -> u64 {
        self.heap
    }

    /// A plain-data snapshot, for reports and GC page selection.
    pub fn info(&self) -> PageInfo {
        PageInfo {
            id: self.id,
            page_type: self.page_type,
            age: self.age,
            node: self.node,
            start: self.range.start().get(),
            size: self.size(),
            used: self.used_bytes(),
            state: self.state(),
        }
    }

    /// Moves the state from `from` to `to`; `Err(actual)` if it was not `from`.
    pub(crate) fn transition(&self, from: PageState, to: PageState) -> Result<(), PageState> {
        self.state
            .compare_exchange(
                from.to_raw(),
                to.to_raw(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(drop)
            .map_err(PageState::from_raw)
    }
}

/// What a GC needs to know about a page to select it: plain data, serializable.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    /// [`Page::id`].
    pub id: u64,
    /// [`Page::page_type`].
    pub page_type: PageType,
    /// [`Page::age`].
    pub age: Age,
    /// [`Page::node`].
    pub node: NodeId,
    /// The first address.
    pub start: usize,
    /// Bytes in the page.
    pub size: usize,
    /// Bytes allocated.
    pub used: usize,
    /// [`Page::state`].
    pub state: PageState,
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn bump_allocation_respects_alignment_and_end() {
        let range = MemRange::new(Address::new(0x10000), 256).unwrap();
        let page = Page::new(PageType::Small, Age::EDEN, NodeId::ZERO, range, 0, 1);
        let a = page.alloc_object(ObjectLayout::new(10).unwrap()).unwrap();
        assert_eq!(a, Address::new(0x10000));
        let b = page
            .alloc_object(ObjectLayout::aligned(8, 64).unwrap())
            .unwrap();
        assert_eq!(b, Address::new(0x10040));
        assert_eq!(page.used_bytes(), 0x48);
        assert!(page.contains_object(b));
        assert!(!page.contains_object(Address::new(0x10048)));
        assert!(page.alloc_object(ObjectLayout::new(256).unwrap()).is_none());
        let c = page
            .alloc_object(ObjectLayout::new(256 - 0x48).unwrap())
            .unwrap();
        assert_eq!(c, Address::new(0x10048));
        assert_eq!(page.free_bytes(), 0);
        assert!(page.alloc_object(ObjectLayout::new(8).unwrap()).is_none());
        assert_eq!(page.info().used, 256);
    }

    /// Issue 12: the bump added the caller's size unchecked; a layout near
    /// `usize::MAX` wrapped the bump pointer (backwards, in release builds).
    #[test]
    fn a_size_near_the_top_of_usize_does_not_fit() {
        let range = MemRange::new(Address::new(0x10000), 256).unwrap();
        let page = Page::new(PageType::Small, Age::EDEN, NodeId::ZERO, range, 0, 1);
        page.alloc_object(ObjectLayout::new(16).unwrap()).unwrap();
        for size in [
            usize::MAX - ObjectLayout::MAX_ALIGN - ObjectLayout::MIN_ALIGN,
            usize::MAX - 0x10000 - 16,
            isize::MAX as usize,
        ] {
            for align in [8, ObjectLayout::MAX_ALIGN] {
                let layout = ObjectLayout::aligned(size, align).unwrap();
                assert_eq!(page.alloc_object(layout), None, "{size:#x}");
            }
        }
        assert_eq!(page.used_bytes(), 16);
    }

    #[test]
    fn state_transitions() {
        let range = MemRange::new(Address::new(0x10000), 256).unwrap();
        let page = Page::new(PageType::Medium, Age::OLD, NodeId::new(1), range, 7, 2);
        assert_eq!(page.state(), PageState::Allocated);
        assert_eq!(
            page.transition(PageState::Installed, PageState::Allocated),
            Err(PageState::Allocated)
        );
        page.transition(PageState::Allocated, PageState::Installed)
            .unwrap();
        assert_eq!(page.state(), PageState::Installed);
    }
}
