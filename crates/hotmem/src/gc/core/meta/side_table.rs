//! `SideTable`: zeroed words for one collection's live maps and forwarding
//! tables, mapped through the runtime's memory (NMT tag GC) and unmapped
//! when the collection ends.
//!
//! A collection needs megabytes of bitmaps and tables for a moment. From
//! `malloc` they would be served by the arena of whichever thread happened
//! to collect, and stay resident in that arena afterwards; mapped here they
//! are zero without a memset, accounted under GC in native memory tracking
//! like HotSpot's mark bitmaps, and gone when the collection is.

use crate::sync::AtomicU64;
use hotmem_os::{MemTag, Memory, Reservation, round_to_pages};

/// Zeroed words, handed out in slices by a bump pointer.
pub(crate) struct SideTable {
    mapping: Option<Reservation>,
    /// Used when the mapping failed (or is empty): ordinary heap memory. A
    /// `Vec`, not a `Box`: moving a `Box` asserts unique access to its
    /// contents, which would invalidate the `Words` already carved from it.
    fallback: Vec<AtomicU64>,
    words: usize,
    next: usize,
}

/// A run of zeroed words carved from a [`SideTable`]; valid while the table
/// lives (the owner keeps the table alive longer than every `Words`).
pub(crate) struct Words {
    ptr: *const AtomicU64,
    len: usize,
}

// SAFETY: `Words` is a shared slice of atomics (`&[AtomicU64]` is Send and
// Sync); the table it points into outlives it.
unsafe impl Send for Words {}
// SAFETY: as above.
unsafe impl Sync for Words {}

impl Words {
    #[inline]
    pub(crate) fn get(&self) -> &[AtomicU64] {
        // SAFETY: `ptr..ptr+len` was carved from a live table, zeroed, and
        // is only ever accessed atomically.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl SideTable {
    /// A table of `words` zeroed words.
    pub(crate) fn new(memory: &Memory, words: usize) -> SideTable {
        // Miri cannot map memory, and loom's atomics are not plain words:
        // the fallback is the same words, in a vector.
        let mapped = (!cfg!(miri) && !cfg!(hotmem_loom))
            .then_some(words)
            .and_then(|w| w.checked_mul(8))
            .and_then(round_to_pages)
            .filter(|&b| b > 0)
            .and_then(|bytes| memory.reserve(bytes, MemTag::GC).ok())
            .filter(|r| r.commit(r.range()).is_ok());
        let fallback = if mapped.is_some() {
            Vec::new()
        } else {
            (0..words).map(|_| AtomicU64::new(0)).collect()
        };
        SideTable {
            mapping: mapped,
            fallback,
            words,
            next: 0,
        }
    }

    /// The next `len` words.
    ///
    /// # Panics
    /// If the table has fewer words left (a bug in the caller's sizing).
    pub(crate) fn carve(&mut self, len: usize) -> Words {
        assert!(self.words - self.next >= len, "side table too small");
        let base: *const AtomicU64 = match &self.mapping {
            Some(r) => r.start().as_ptr(),
            None => self.fallback.as_ptr(),
        };
        let ptr = base.wrapping_add(self.next);
        self.next += len;
        Words { ptr, len }
    }
}
