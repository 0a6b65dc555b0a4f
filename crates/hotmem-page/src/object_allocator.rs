//! `ObjectAllocator`: objects for mutators and GC workers, by size, age and node.

use crate::error::AllocError;
use crate::error::AllocPageError;
use crate::shared_page::{Installed, SharedPage};
use crate::source::{PageRequest, PageSource};
use crate::sync::Mutex;
use crate::{
    Age, MediumPageMode, NodeId, ObjectLayout, OwnedPage, Page, PageRef, PageSizes, PageState,
    PageType,
};
use hotmem_os::Address;
use std::fmt;

/// Allocates objects in pages from a [`PageSource`] (normally a
/// [`PageAllocator`](crate::PageAllocator)), like ZGC's object allocator:
///
/// - small objects in per-CPU small pages, one per age and node;
/// - medium objects in one shared medium page per age and node, replaced
///   according to the [`MediumPageMode`];
/// - large objects in a page of their own.
///
/// Every method takes `&self`: mutators and GC workers call it from any
/// number of threads. The fast path is one compare-and-swap on the bump
/// pointer of the installed page; everything else is in cold functions.
///
/// A runtime typically has two: one for mutators (eden) and one for GC
/// workers relocating objects (survivor and old ages), so that retiring one
/// does not disturb the other.
pub struct ObjectAllocator<S: PageSource> {
    source: S,
    sizes: PageSizes,
    mode: MediumPageMode,
    nodes: Vec<NodeId>,
    cpus: usize,
    /// `[age][node]`
    medium: Box<[SharedPage]>,
    /// `[age][node][cpu]`
    small: Box<[SharedPage]>,
    installed: Installed,
}

impl<S: PageSource> fmt::Debug for ObjectAllocator<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectAllocator")
            .field("mode", &self.mode)
            .field("nodes", &self.nodes)
            .field("cpus", &self.cpus)
            .field("installed_pages", &self.installed.lock().len())
            .finish()
    }
}

impl<S: PageSource> ObjectAllocator<S> {
    /// An allocator over `source` with medium pages installed in `mode`.
    pub fn new(source: S, mode: MediumPageMode) -> ObjectAllocator<S> {
        #[cfg(not(hotmem_loom))]
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        #[cfg(hotmem_loom)]
        let cpus = 1;
        let sizes = source.page_sizes();
        let nodes = source.nodes().to_vec();
        let slots = |n: usize| (0..n).map(|_| SharedPage::new()).collect::<Box<[_]>>();
        ObjectAllocator {
            medium: slots(Age::COUNT * nodes.len()),
            small: slots(Age::COUNT * nodes.len() * cpus),
            source,
            sizes,
            mode,
            nodes,
            cpus,
            installed: Mutex::new(Vec::new()),
        }
    }

    /// The page source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The medium page installation mode.
    pub fn mode(&self) -> MediumPageMode {
        self.mode
    }

    /// The page sizes objects are sorted by.
    pub fn page_sizes(&self) -> PageSizes {
        self.sizes
    }

    #[inline]
    fn node_index(&self, node: NodeId) -> Result<usize, AllocError> {
        // Nodes are usually 0..n: try the identity first.
        let i = node.index();
        if self.nodes.get(i) == Some(&node) {
            return Ok(i);
        }
        self.node_index_slow(node)
    }

    #[cold]
    fn node_index_slow(&self, node: NodeId) -> Result<usize, AllocError> {
        self.nodes
            .iter()
            .position(|&n| n == node)
            .ok_or(AllocError::Page(AllocPageError::UnknownNode(node)))
    }

    /// Allocates an object of `layout` with objects of `age`, preferring the
    /// memory of `node`. Returns its address; the memory is mapped and
    /// zeroed or reused, not initialized.
    ///
    /// # Errors
    /// [`AllocError::Page`] with [`AllocPageError::HeapExhausted`] when no
    /// page could be had: free memory (run a GC) and retry;
    /// [`AllocPageError::BadSize`] for an object larger than any partition
    /// could ever hold (no GC helps: do not retry);
    /// [`AllocPageError::UnknownNode`] for a node that is not a partition.
    ///
    /// # Panics
    /// If the page source hands out a page the object does not fit in, or
    /// refuses to take back a page it just handed out.
    #[inline]
    pub fn alloc_object(
        &self,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Result<Address, AllocError> {
        let n = self.node_index(node)?;
        match self.sizes.page_type_for(layout) {
            PageType::Medium => {
                let slot = &self.medium[age.index() * self.nodes.len() + n];
                match slot.alloc_fast(layout) {
                    Some(addr) => Ok(addr),
                    None => self.alloc_medium_slow(slot, layout, age, node),
                }
            }
            PageType::Small => {
                let cpu = current_cpu() % self.cpus;
                let slot = &self.small[(age.index() * self.nodes.len() + n) * self.cpus + cpu];
                match slot.alloc_fast(layout) {
                    Some(addr) => Ok(addr),
                    None => self.alloc_small_slow(slot, layout, age, node),
                }
            }
            PageType::Large => self.alloc_large(layout, age, node),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_medium_slow(
        &self,
        slot: &SharedPage,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Result<Address, AllocError> {
        let request = PageRequest::medium(&self.sizes, age, node);
        Ok(slot.alloc_slow(layout, request, self.mode, &self.source, &self.installed)?)
    }

    #[cold]
    #[inline(never)]
    fn alloc_small_slow(
        &self,
        slot: &SharedPage,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Result<Address, AllocError> {
        // Per-CPU small pages race only when a thread is preempted on the
        // slow path; ZGC keeps the compare-and-swap for them, and so do we.
        let request = PageRequest::small(&self.sizes, age, node);
        match slot.alloc_slow(
            layout,
            request,
            MediumPageMode::Racy,
            &self.source,
            &self.installed,
        ) {
            Err(e @ AllocPageError::HeapExhausted { .. }) => self
                .alloc_in_other_lanes(layout, age, node)
                .ok_or(AllocError::Page(e)),
            done => Ok(done?),
        }
    }

    /// A small object in the page installed for another CPU (of `age` and
    /// `node`), when the source has no page left for this CPU's: room left
    /// in those pages is memory already taken, and a heap of a few pages
    /// must not fail an allocation it has room for because the thread is
    /// on another CPU. A collector's relocation needs this most: with one
    /// page left for its targets, a worker and a mutator that relocates
    /// through its load barrier, each on its own CPU, would otherwise take
    /// one page and find none for the other.
    #[cold]
    #[inline(never)]
    fn alloc_in_other_lanes(
        &self,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Option<Address> {
        let n = self.node_index(node).ok()?;
        let lanes = (age.index() * self.nodes.len() + n) * self.cpus;
        self.small
            .get(lanes..lanes + self.cpus)?
            .iter()
            .find_map(|slot| slot.alloc_fast(layout))
    }

    #[cold]
    #[inline(never)]
    fn alloc_large(
        &self,
        layout: ObjectLayout,
        age: Age,
        node: NodeId,
    ) -> Result<Address, AllocError> {
        let request = PageRequest::for_object(&self.sizes, layout, age, node)?;
        // The page stays allocated (listed by the heap) when the handle is
        // dropped; the collector frees it when the object is dead.
        let page = self.source.alloc_page(request)?;
        Ok(page
            .alloc_object(layout)
            .expect("a large page fits its object"))
    }

    /// Empties every slot and hands back the pages that were installed (in
    /// state [`PageState::Installed`] until now, [`PageState::Allocated`]
    /// afterwards, so that they can be freed), as their owners' handles: the
    /// caller owns them now and may free them with
    /// [`PageAllocator::free_page`](crate::PageAllocator::free_page). The next allocation of each
    /// kind installs a new page. This is what a GC does at the start of a
    /// cycle: the pages allocation was going on in become ordinary pages.
    ///
    /// # Safety
    /// No thread may be inside [`ObjectAllocator::alloc_object`] on this
    /// allocator while this runs (in a runtime: mutators are stopped at a
    /// safepoint, or GC workers are between phases). Allocating threads read
    /// the installed pages without holding references to them.
    pub unsafe fn retire_pages(&self) -> Vec<OwnedPage> {
        for slot in self.medium.iter().chain(self.small.iter()) {
            slot.clear();
        }
        let pages = std::mem::take(&mut *self.installed.lock());
        for page in &pages {
            // Pages a caller already freed behind our back stay freed.
            let _ = page.transition(PageState::Installed, PageState::Allocated);
        }
        pages
    }

    /// Retires the installed pages that no slot allocates in any more
    /// (replaced since they were installed), as
    /// [`ObjectAllocator::retire_pages`] retires all of them, and leaves
    /// the current ones installed: allocation goes on in them, above their
    /// tops now. A collector that marks without moving keeps a mutator's
    /// pages this way across its cycles, so that a few survivors of each
    /// cycle do not each keep a page of their own.
    ///
    /// # Safety
    /// As [`ObjectAllocator::retire_pages`]: nobody allocates with this
    /// allocator meanwhile (so that nobody holds a replaced page read from
    /// a slot).
    pub unsafe fn retire_replaced_pages(&self) -> Vec<OwnedPage> {
        let current: Vec<*const Page> = (self.medium.iter().chain(self.small.iter()))
            .map(SharedPage::current)
            .filter(|p| !p.is_null())
            .collect();
        let mut installed = self.installed.lock();
        let (kept, replaced): (Vec<OwnedPage>, Vec<OwnedPage>) = std::mem::take(&mut *installed)
            .into_iter()
            .partition(|p| current.contains(&std::ptr::from_ref::<Page>(p)));
        *installed = kept;
        for page in &replaced {
            // Pages a caller already freed behind our back stay freed.
            let _ = page.transition(PageState::Installed, PageState::Allocated);
        }
        replaced
    }

    /// [`ObjectAllocator::retire_pages`] when the allocator is not shared:
    /// the exclusive borrow proves that nobody allocates.
    pub fn retire_pages_exclusive(&mut self) -> Vec<OwnedPage> {
        // SAFETY: `&mut self` excludes every other use of the allocator,
        // allocation included.
        unsafe { self.retire_pages() }
    }

    /// Pages installed since the last retirement, in installation order, as
    /// read-only views.
    pub fn installed_pages(&self) -> Vec<PageRef> {
        self.installed.lock().iter().map(OwnedPage::view).collect()
    }

    /// Takes back the last allocation `[start, end)` of an installed page
    /// (see [`OwnedPage::undo_alloc`]): a thread that allocated a block for
    /// its own use and used only `[.., start)` of it gives the rest back.
    /// Returns whether it did; `false` when something was allocated in the
    /// page after the block, or the page is no longer installed (retired
    /// since: then its owner decides).
    pub fn undo_alloc(&self, start: Address, end: Address) -> bool {
        // Under the lock, so that the page cannot be retired (and then
        // freed) meanwhile.
        let installed = self.installed.lock();
        installed
            .iter()
            .find(|p| p.range().contains(start))
            .is_some_and(|p| p.undo_alloc(start, end))
    }

    /// The medium page allocations currently go to for `age` on `node`, if any.
    pub fn current_medium_page(&self, age: Age, node: NodeId) -> Option<PageRef> {
        let n = self.node_index(node).ok()?;
        let ptr = self.medium[age.index() * self.nodes.len() + n].current();
        self.installed
            .lock()
            .iter()
            .find(|p| std::ptr::eq::<Page>(&***p, ptr))
            .map(OwnedPage::view)
    }
}

/// The CPU the calling thread runs on, which picks its small page. Under
/// loom every model thread is "CPU 0", which keeps the models small.
#[inline]
fn current_cpu() -> usize {
    #[cfg(not(hotmem_loom))]
    {
        rustix::thread::sched_getcpu()
    }
    #[cfg(hotmem_loom)]
    {
        0
    }
}

impl<S: PageSource> Drop for ObjectAllocator<S> {
    fn drop(&mut self) {
        // Leave the pages freeable for whoever owns the page source.
        let _ = self.retire_pages_exclusive();
    }
}
