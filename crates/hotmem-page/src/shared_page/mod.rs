//! The shared page slot and its installation protocol, in both modes.
//!
//! This is the code the loom models check (`shared_page/tests/`). The
//! protocol, as ZGC has it: a thread that finds the slot's page full
//! allocates a new page, allocates its object in it, and installs it with a
//! compare-and-swap on the slot. If another thread installed one first, the
//! loser undoes its page and retries in the winner's. In
//! [`MediumPageMode::Synchronized`] the whole slow path runs under a lock
//! that only the slow path takes, so a thread that finds the page full while
//! another is replacing it waits and then allocates in the new page: the
//! compare-and-swap cannot lose, and no page is allocated in vain.

use crate::error::AllocPageError;
use crate::source::{PageRequest, PageSource};
use crate::sync::{AtomicPtr, CachePadded, Mutex, Ordering};
use crate::{MediumPageMode, ObjectLayout, OwnedPage, Page, PageState};
use hotmem_os::Address;
use std::ptr;

/// A slot holding the page that several threads allocate in (the per-age
/// medium page, or a per-CPU small page).
pub(crate) struct SharedPage {
    page: CachePadded<AtomicPtr<Page>>,
    lock: Mutex<()>,
}

/// Keeps installed pages alive while other threads may still read them
/// through a slot: every page ever installed stays here until the owning
/// allocator retires its pages.
pub(crate) type Installed = Mutex<Vec<OwnedPage>>;

impl SharedPage {
    pub(crate) fn new() -> SharedPage {
        SharedPage {
            page: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            lock: Mutex::new(()),
        }
    }

    /// The fast path: one bump in the installed page.
    #[inline]
    pub(crate) fn alloc_fast(&self, layout: ObjectLayout) -> Option<Address> {
        let page = self.page.load(Ordering::Acquire);
        // SAFETY: a non-null slot points at a page in the owner's
        // `Installed` list, which holds a reference to it until
        // `take`, and `take` runs only when no thread is allocating through
        // this slot (the `retire_pages` contract). So the page is alive.
        unsafe { page.as_ref() }.and_then(|p| p.alloc_object(layout))
    }

    /// The slow path: the page is full (or there is none).
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_slow<S: PageSource>(
        &self,
        layout: ObjectLayout,
        request: PageRequest,
        mode: MediumPageMode,
        source: &S,
        installed: &Installed,
    ) -> Result<Address, AllocPageError> {
        match mode {
            MediumPageMode::Synchronized => {
                // Only one thread allocates a new page; the others wait here
                // and then find the page it installed. Page allocation never
                // waits for memory, so nobody stalls holding the lock.
                let _guard = self.lock.lock();
                self.alloc_or_install(layout, request, source, installed)
            }
            MediumPageMode::Racy => self.alloc_or_install(layout, request, source, installed),
        }
    }

    /// Retries the installed page, else allocates a page and installs it.
    fn alloc_or_install<S: PageSource>(
        &self,
        layout: ObjectLayout,
        request: PageRequest,
        source: &S,
        installed: &Installed,
    ) -> Result<Address, AllocPageError> {
        let mut current = self.page.load(Ordering::Acquire);
        loop {
            // SAFETY: as in `alloc_fast`: installed pages stay alive until
            // retired, and retiring excludes concurrent allocation.
            if let Some(addr) = unsafe { current.as_ref() }.and_then(|p| p.alloc_object(layout)) {
                return Ok(addr);
            }
            let page = match source.alloc_page(request) {
                Ok(page) => page,
                Err(e) => {
                    // Someone may have installed a page meanwhile.
                    let now = self.page.load(Ordering::Acquire);
                    if now != current {
                        current = now;
                        continue;
                    }
                    return Err(e);
                }
            };
            let addr = page
                .alloc_object(layout)
                .expect("an object of this page type fits in an empty page");
            page.transition(PageState::Allocated, PageState::Installed)
                .expect("a fresh page is allocated");
            let new = ptr::from_ref::<Page>(&*page).cast_mut();
            match self
                .page
                .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    source.page_installed(&page);
                    installed.lock().push(page);
                    return Ok(addr);
                }
                Err(winner) => {
                    // Lost the race: the page was allocated in vain.
                    page.transition(PageState::Installed, PageState::Allocated)
                        .expect("nobody else saw the page");
                    source
                        .undo_alloc_page(page)
                        .expect("a page of this source, allocated and not installed");
                    current = winner;
                }
            }
        }
    }

    /// Empties the slot. The caller guarantees that nobody allocates
    /// through it meanwhile.
    pub(crate) fn clear(&self) {
        self.page.store(ptr::null_mut(), Ordering::Release);
    }

    /// The installed page, if any, for reports.
    pub(crate) fn current(&self) -> *const Page {
        self.page.load(Ordering::Acquire)
    }
}

#[cfg(all(test, hotmem_loom))]
mod tests {
    mod loom_medium_page;
}
