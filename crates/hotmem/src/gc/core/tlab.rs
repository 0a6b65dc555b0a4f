//! Thread-local allocation buffers: a mutator takes a block of a shared
//! small page once, then allocates its small young objects in it with a
//! compare and a store, no atomic read-modify-write and no CPU lookup per
//! object.
//!
//! A buffer is only valid until the next collection: a collection retires
//! the allocation pages, relocates their objects and may free them. So the
//! collector, at its safepoint, gives the unused end of every buffer back
//! to its page (when it is still the page's last allocation) and empties
//! the buffer; the mutator's next allocation takes a new one. The buffer's
//! words are atomics only so that the collector may read and reset them:
//! the mutator uses relaxed loads and stores (plain moves), and the
//! safepoint orders the collector's accesses with the mutator's.

use hotmem_os::Address;
use hotmem_page::ObjectLayout;
use hotmem_page::{ObjectAllocator, OwnedPage, PageSource};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How mutators allocate their small young objects.
///
/// # Example
/// ```
/// use hotmem::{Runtime, Tlabs};
/// let runtime = Runtime::builder().tlabs(Tlabs::Size(32 << 10)).build()?;
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tlabs {
    /// Every object is allocated in the shared per-CPU page with an atomic
    /// compare-and-swap (the path GC workers and medium objects take).
    Off,
    /// Each mutator allocates in its own buffer of this many bytes, taken
    /// from the shared small pages when it is used up. Objects larger than
    /// an eighth of it take the shared path, so a retired buffer wastes at
    /// most that much. A power of two from [`Tlabs::MIN`] up to the small
    /// object limit of the heap's pages (larger is lowered to it).
    Size(usize),
}

impl Tlabs {
    /// The smallest buffer.
    pub const MIN: usize = 4 << 10;
    /// The default buffer: 64 KiB, 32 buffers per 2 MiB small page.
    pub const DEFAULT: Tlabs = Tlabs::Size(64 << 10);

    /// Checks the setting.
    pub(crate) fn validate(self) -> Result<(), String> {
        match self {
            Tlabs::Off => Ok(()),
            Tlabs::Size(bytes) if bytes >= Self::MIN && bytes.is_power_of_two() => Ok(()),
            Tlabs::Size(bytes) => Err(format!(
                "TLAB size {bytes} is not a power of two of at least {} bytes",
                Self::MIN
            )),
        }
    }
}

impl Default for Tlabs {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The buffer size a runtime uses, with the largest object that goes into
/// a buffer: `None` when buffers are off.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TlabSizing {
    pub(crate) size: usize,
    pub(crate) max_object: usize,
}

impl TlabSizing {
    /// `setting` fitted to the heap's small object limit.
    pub(crate) fn new(setting: Tlabs, small_object_max: usize) -> Option<TlabSizing> {
        match setting {
            Tlabs::Off => None,
            Tlabs::Size(bytes) => {
                // The largest power of two a small page accepts as one object.
                let limit = 1usize << (usize::BITS - 1 - small_object_max.leading_zeros());
                let size = bytes.min(limit);
                (size >= Tlabs::MIN).then_some(TlabSizing {
                    size,
                    max_object: size / 8,
                })
            }
        }
    }
}

/// What mutators' buffers did, from [`Runtime::tlab_stats`](crate::Runtime::tlab_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlabStats {
    /// The buffer size in use (0: buffers are off).
    pub size: usize,
    /// Buffers taken from the shared pages.
    pub refills: u64,
    /// Unused ends of buffers given back to their pages (when a buffer is
    /// replaced, its mutator detaches, or a collection retires the pages),
    /// to be allocated again.
    pub returned_bytes: u64,
    /// Unused ends that could not be given back because their page had
    /// allocated something after them: gaps until the page is evacuated
    /// or freed.
    pub wasted_bytes: u64,
}

/// The runtime's side of the buffers: their size, every mutator's buffer,
/// counters.
#[derive(Debug)]
pub(crate) struct TlabShared {
    pub(crate) sizing: Option<TlabSizing>,
    /// The attached mutators' buffers.
    buffers: Mutex<Vec<Arc<Tlab>>>,
    refills: AtomicU64,
    wasted: AtomicU64,
    returned: AtomicU64,
}

impl TlabShared {
    pub(crate) fn new(sizing: Option<TlabSizing>) -> TlabShared {
        TlabShared {
            sizing,
            buffers: Mutex::new(Vec::new()),
            refills: AtomicU64::new(0),
            wasted: AtomicU64::new(0),
            returned: AtomicU64::new(0),
        }
    }

    /// A new, empty buffer for a mutator that attaches.
    pub(crate) fn register(&self) -> Arc<Tlab> {
        let tlab = Arc::new(Tlab::default());
        self.buffers.lock().push(tlab.clone());
        tlab
    }

    /// Forgets the buffer of a mutator that detaches.
    pub(crate) fn unregister(&self, tlab: &Arc<Tlab>) {
        self.buffers.lock().retain(|t| !Arc::ptr_eq(t, tlab));
    }

    /// Empties every mutator's buffer, giving its unused end back to its
    /// page where that is still the page's last allocation (`pages`: the
    /// allocation pages just retired, where every buffer lies).
    ///
    /// Call only while no mutator allocates: at the collection's safepoint,
    /// where each mutator is stopped or in native code (which borrows it).
    pub(crate) fn retire_all(&self, pages: &[OwnedPage]) {
        self.retire_all_with(|top, end| {
            let page = pages.iter().find(|p| p.range().contains(top));
            page.is_some_and(|p| p.undo_alloc(top, end))
        });
    }

    /// [`TlabShared::retire_all`], each buffer's unused end `[top, end)` given
    /// back by `undo` (which says whether it could).
    pub(crate) fn retire_all_with(&self, undo: impl Fn(Address, Address) -> bool) {
        let (mut returned, mut wasted) = (0, 0);
        for tlab in self.buffers.lock().iter() {
            let (top, end) = tlab.take();
            if top == end {
                continue;
            }
            let (top, end) = (Address::new(top), Address::new(end));
            if undo(top, end) {
                returned += end.get() - top.get();
            } else {
                wasted += end.get() - top.get();
            }
        }
        self.returned.fetch_add(returned as u64, Ordering::Relaxed);
        self.wasted.fetch_add(wasted as u64, Ordering::Relaxed);
    }

    /// Empties `tlab` (a mutator's own, outside collections), giving its
    /// unused end back to its page if nothing was allocated there since;
    /// else counts it as waste.
    pub(crate) fn give_back<S: PageSource>(&self, tlab: &Tlab, alloc: &ObjectAllocator<S>) {
        let (top, end) = tlab.take();
        if top == end {
            return;
        }
        let (start, stop) = (Address::new(top), Address::new(end));
        if alloc.undo_alloc(start, stop) {
            self.returned
                .fetch_add((end - top) as u64, Ordering::Relaxed);
        } else {
            self.wasted.fetch_add((end - top) as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn count_refill(&self) {
        self.refills.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> TlabStats {
        TlabStats {
            size: self.sizing.map_or(0, |s| s.size),
            refills: self.refills.load(Ordering::Relaxed),
            wasted_bytes: self.wasted.load(Ordering::Relaxed),
            returned_bytes: self.returned.load(Ordering::Relaxed),
        }
    }
}

/// One mutator's buffer: `[start, top)` allocated, `[top, end)` free.
/// Empty (`top == end`) until the first refill and after each collection.
/// Only its mutator allocates in it; the collector resets it at
/// safepoints.
#[derive(Debug, Default)]
pub(crate) struct Tlab {
    start: AtomicUsize,
    top: AtomicUsize,
    end: AtomicUsize,
}

impl Tlab {
    /// Bumps `layout` out of the buffer if it has room.
    #[inline]
    pub(crate) fn alloc(&self, layout: ObjectLayout) -> Option<Address> {
        let top = self.top.load(Ordering::Relaxed);
        // `align` is a power of two; `top` is a heap address (or 0), far
        // below `usize::MAX`, and `size` at most a small object.
        let start = (top + layout.align() - 1) & !(layout.align() - 1);
        let new_top = start + layout.size();
        if new_top <= self.end.load(Ordering::Relaxed) {
            self.top.store(new_top, Ordering::Relaxed);
            Some(Address::new(start))
        } else {
            None
        }
    }

    /// Whether `addr` lies in what was allocated from the buffer since its
    /// last refill. Every collection empties the buffers at its first
    /// pause, so while a concurrent cycle marks, such an address is in an
    /// object allocated since the cycle's mark start. Called by the
    /// buffer's own mutator.
    #[inline]
    pub(crate) fn allocated_from(&self, addr: usize) -> bool {
        let start = self.start.load(Ordering::Relaxed);
        addr.wrapping_sub(start) < self.top.load(Ordering::Relaxed).wrapping_sub(start)
    }

    /// Replaces the (empty) buffer by `[start, start + size)`.
    pub(crate) fn refill(&self, start: Address, size: usize) {
        self.start.store(start.get(), Ordering::Relaxed);
        self.top.store(start.get(), Ordering::Relaxed);
        self.end.store(start.get() + size, Ordering::Relaxed);
    }

    /// Empties the buffer and returns what was left of it, `(top, end)`.
    pub(crate) fn take(&self) -> (usize, usize) {
        self.start.store(0, Ordering::Relaxed);
        let top = self.top.swap(0, Ordering::Relaxed);
        let end = self.end.swap(0, Ordering::Relaxed);
        (top, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> ObjectLayout {
        ObjectLayout::aligned(size, align).unwrap()
    }

    #[test]
    fn bumps_within_the_buffer_until_refilled_or_taken() {
        let t = Tlab::default();
        assert_eq!(t.alloc(layout(16, 8)), None, "empty until refilled");
        t.refill(Address::new(0x1000), 64);
        assert_eq!(t.alloc(layout(16, 8)), Some(Address::new(0x1000)));
        assert_eq!(t.alloc(layout(8, 8)), Some(Address::new(0x1010)));
        assert_eq!(t.alloc(layout(16, 32)), Some(Address::new(0x1020)));
        assert_eq!(t.alloc(layout(32, 8)), None, "no room");
        assert_eq!(t.alloc(layout(16, 8)), Some(Address::new(0x1030)));
        assert_eq!(t.alloc(layout(8, 8)), None, "used up");
        assert_eq!(t.take(), (0x1040, 0x1040));
        t.refill(Address::new(0x3000), 64);
        assert_eq!(t.alloc(layout(8, 8)), Some(Address::new(0x3000)));
        assert_eq!(t.take(), (0x3008, 0x3040));
        assert_eq!(t.alloc(layout(8, 8)), None, "emptied");
    }

    #[test]
    fn what_was_allocated_since_the_refill_is_known_until_the_buffer_is_taken() {
        let t = Tlab::default();
        assert!(!t.allocated_from(0) && !t.allocated_from(0x1000), "empty");
        t.refill(Address::new(0x1000), 64);
        assert!(!t.allocated_from(0x1000), "nothing allocated yet");
        t.alloc(layout(16, 8)).unwrap();
        t.alloc(layout(8, 8)).unwrap();
        let inside = [0x1000, 0x1008, 0x1010, 0x1017];
        assert!(inside.iter().all(|&a| t.allocated_from(a)));
        // The free part, and either side of the buffer.
        let outside = [0x1018, 0x103f, 0x1040, 0xfff, 0, usize::MAX];
        assert!(outside.iter().all(|&a| !t.allocated_from(a)));
        t.take();
        assert!(inside.iter().all(|&a| !t.allocated_from(a)), "taken");
    }

    #[test]
    fn sizing_fits_the_small_object_limit() {
        let s = TlabSizing::new(Tlabs::Size(64 << 10), 256 << 10).unwrap();
        assert_eq!((s.size, s.max_object), (64 << 10, 8 << 10));
        let s = TlabSizing::new(Tlabs::Size(1 << 20), 96 << 10).unwrap();
        assert_eq!(s.size, 64 << 10, "lowered to a power of two that fits");
        assert!(TlabSizing::new(Tlabs::Size(64 << 10), 2 << 10).is_none());
        assert!(TlabSizing::new(Tlabs::Off, 256 << 10).is_none());
        assert!(Tlabs::Size(3 << 10).validate().is_err());
        assert!(Tlabs::Size(48 << 10).validate().is_err());
        assert!(Tlabs::DEFAULT.validate().is_ok());
    }
}
