//! `LiveMap`: what marking found on one page (ZGC's `ZLiveMap`).
//!
//! Two bitmaps with one bit per heap word of the page's used part: the
//! first word of every marked object (set by the marker that wins the
//! race for the object: an object reached twice is marked once) and its
//! last word (set once its size is known). Walking both in address order
//! gives every live object with its size without asking the binding again,
//! and proves that no two marked objects overlap: a reference into the
//! middle of a live object is found there, before anything moves.
//! Live bytes and objects per page drive the choice of pages to evacuate.

use super::side_table::{SideTable, Words};
use crate::sync::Ordering;
use std::sync::atomic::AtomicUsize;

/// A bitmap of atomics, in a collection's side table.
pub(crate) struct Bits {
    words: Words,
}

impl Bits {
    /// The number of words a bitmap of `bits` bits takes.
    pub(crate) fn words_for(bits: usize) -> usize {
        bits.div_ceil(64)
    }

    pub(crate) fn new(words: Words) -> Bits {
        Bits { words }
    }

    /// Sets bit `i`; true if this call set it (it was clear).
    #[inline]
    pub(crate) fn set(&self, i: usize) -> bool {
        let mask = 1u64 << (i % 64);
        let w = &self.words.get()[i / 64];
        // A load first: most repeated visits find the bit set without
        // taking the cache line exclusively.
        if w.load(Ordering::Relaxed) & mask != 0 {
            return false;
        }
        w.fetch_or(mask, Ordering::Relaxed) & mask == 0
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words.get()[i / 64].load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0
    }

    /// Bit `i`, `false` past the end.
    #[inline]
    pub(crate) fn get_checked(&self, i: usize) -> bool {
        self.words
            .get()
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0)
    }

    /// The first set bit at or after `from`.
    pub(crate) fn next_set(&self, from: usize) -> Option<usize> {
        let words = self.words.get();
        let mut wi = from / 64;
        if wi >= words.len() {
            return None;
        }
        let mut w = words[wi].load(Ordering::Relaxed) & (!0u64 << (from % 64));
        loop {
            if w != 0 {
                return Some(wi * 64 + w.trailing_zeros() as usize);
            }
            wi += 1;
            if wi >= words.len() {
                return None;
            }
            w = words[wi].load(Ordering::Relaxed);
        }
    }
}

/// The live map of one page.
pub(crate) struct LiveMap {
    starts: Bits,
    ends: Bits,
    bytes: AtomicUsize,
    objects: AtomicUsize,
}

/// Two marked objects overlap: word indices of the first's start and of the
/// second's start (inside the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overlap {
    pub(crate) first: usize,
    pub(crate) first_end: usize,
    pub(crate) second: usize,
}

impl LiveMap {
    /// Side-table words a live map of `heap_words` heap words takes.
    pub(crate) fn words_for(heap_words: usize) -> usize {
        2 * Bits::words_for(heap_words)
    }

    /// A live map for `heap_words` heap words, in words carved from `table`.
    pub(crate) fn new(table: &mut SideTable, heap_words: usize) -> LiveMap {
        let n = Bits::words_for(heap_words);
        LiveMap {
            starts: Bits::new(table.carve(n)),
            ends: Bits::new(table.carve(n)),
            bytes: AtomicUsize::new(0),
            objects: AtomicUsize::new(0),
        }
    }

    /// Marks the object starting at word `i`; true if this call marked it.
    #[inline]
    pub(crate) fn mark(&self, i: usize) -> bool {
        self.starts.set(i)
    }

    /// Whether the object at word `i` is marked.
    #[inline]
    pub(crate) fn is_marked(&self, i: usize) -> bool {
        self.starts.get(i)
    }

    /// Records the last word of a marked object.
    #[inline]
    pub(crate) fn set_end(&self, last_word: usize) {
        self.ends.set(last_word);
    }

    /// The last word of the marked object that starts at word `i` (its end
    /// was recorded when it was scanned), if it is marked; `None` for any
    /// other word, past the map's end too.
    #[inline]
    pub(crate) fn end_of(&self, i: usize) -> Option<usize> {
        if !self.starts.get_checked(i) {
            return None;
        }
        self.ends.next_set(i)
    }

    /// Adds marked objects and bytes (workers batch these per page).
    #[inline]
    pub(crate) fn add(&self, objects: usize, bytes: usize) {
        self.objects.fetch_add(objects, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn live_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn live_objects(&self) -> usize {
        self.objects.load(Ordering::Relaxed)
    }

    /// Calls `f(first_word, last_word)` for every marked object in address
    /// order; stops at the first overlap of two marked objects.
    pub(crate) fn for_each_object(&self, mut f: impl FnMut(usize, usize)) -> Result<(), Overlap> {
        let mut next = self.starts.next_set(0);
        while let Some(start) = next {
            // Every marked object's end was recorded during marking.
            let Some(end) = self.ends.next_set(start) else {
                // Unreachable after a complete marking; treat the object as
                // one word so that the walk goes on.
                f(start, start);
                next = self.starts.next_set(start + 1);
                continue;
            };
            next = self.starts.next_set(start + 1);
            if let Some(n) = next {
                if n <= end {
                    return Err(Overlap {
                        first: start,
                        first_end: end,
                        second: n,
                    });
                }
            }
            f(start, end);
        }
        Ok(())
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    fn map(words: usize) -> (SideTable, LiveMap) {
        let mut t = SideTable::new(&hotmem_os::Memory::new(), LiveMap::words_for(words));
        let m = LiveMap::new(&mut t, words);
        (t, m)
    }

    #[test]
    fn objects_come_back_in_order_with_their_sizes() {
        let (_t, m) = map(200);
        for (s, e) in [(70, 75), (0, 0), (3, 10), (130, 199)] {
            assert!(m.mark(s));
            m.set_end(e);
        }
        assert!(!m.mark(3), "marked once");
        let mut seen = Vec::new();
        m.for_each_object(|s, e| seen.push((s, e))).unwrap();
        assert_eq!(seen, vec![(0, 0), (3, 10), (70, 75), (130, 199)]);
    }

    #[test]
    fn an_object_inside_another_is_an_overlap() {
        let (_t, m) = map(64);
        m.mark(2);
        m.set_end(20);
        m.mark(8); // an interior "object"
        m.set_end(9);
        let e = m.for_each_object(|_, _| {}).unwrap_err();
        assert_eq!((e.first, e.second), (2, 8));
        let (_t, m) = map(64);
        m.mark(2);
        m.set_end(20);
        m.mark(8);
        m.set_end(30); // running past the first one
        assert!(m.for_each_object(|_, _| {}).is_err());
    }
}
