//! Thread stacks in native memory tracking: an attached thread's stack
//! mapping is recorded with tag Thread Stack (reserved: the mapping;
//! committed: its resident top, where a downward-growing stack has been
//! used), as HotSpot's NMT does for Java threads.

use hotmem_nmt::Tracker;
use hotmem_os::{MemRange, MemTag, page_size, procfs};

/// A stack recorded in a tracker, released from it on detach.
#[derive(Debug)]
pub(crate) struct ThreadStack {
    range: MemRange,
}

impl ThreadStack {
    /// Finds the calling thread's stack mapping in `/proc/self/maps` (read
    /// up to it: attaching is on every embedder's start path) and records
    /// it. `None` if it cannot be found or the tracker refuses (a second
    /// attach of the same thread).
    pub(crate) fn record_current(nmt: &Tracker) -> Option<ThreadStack> {
        let marker = 0u8;
        let here = hotmem_os::Address::from_ptr(std::hint::black_box(&marker));
        let mapping = procfs::mapping_containing(here).ok()??;
        let range = mapping.range;
        let resident = procfs::resident_bytes(range).ok()?.min(range.len());
        let stack = nmt.capture_stack();
        nmt.reserve(range, MemTag::THREAD_STACK, &stack).ok()?;
        let committed = resident.max(page_size()).min(range.len());
        let top_start = hotmem_os::Address::new(range.end().get() - committed);
        if let Ok(top) = MemRange::new(top_start, committed) {
            let _ = nmt.commit(top, &stack);
        }
        Some(ThreadStack { range })
    }

    /// Removes the record.
    pub(crate) fn release(self, nmt: &Tracker) {
        let _ = nmt.release(self.range);
    }
}
