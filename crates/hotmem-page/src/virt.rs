//! The heap's address space: which parts of the reservation are free.

use hotmem_os::{Address, MemRange};
use std::collections::BTreeMap;

/// Free ranges of the heap reservation, coalesced. Small pages are placed at
/// the lowest free address, medium and large pages at the highest (as ZGC
/// does), which keeps small pages packed at the bottom.
#[derive(Debug)]
pub(crate) struct VirtualSpace {
    whole: MemRange,
    /// start -> length
    free: BTreeMap<usize, usize>,
}

impl VirtualSpace {
    pub(crate) fn new(whole: MemRange) -> VirtualSpace {
        let mut free = BTreeMap::new();
        free.insert(whole.start().get(), whole.len());
        VirtualSpace { whole, free }
    }

    /// The lowest-addressed free range of `size` bytes.
    pub(crate) fn alloc_low(&mut self, size: usize) -> Option<MemRange> {
        let (&start, &len) = self.free.iter().find(|(_, len)| **len >= size)?;
        self.free.remove(&start);
        if len > size {
            self.free.insert(start + size, len - size);
        }
        MemRange::new(Address::new(start), size).ok()
    }

    /// The highest-addressed free range of `size` bytes.
    pub(crate) fn alloc_high(&mut self, size: usize) -> Option<MemRange> {
        let (&start, &len) = self.free.iter().rev().find(|(_, len)| **len >= size)?;
        if len > size {
            self.free.insert(start, len - size);
        } else {
            self.free.remove(&start);
        }
        MemRange::new(Address::new(start + len - size), size).ok()
    }

    /// Gives a range back, merging it with its free neighbours.
    pub(crate) fn free(&mut self, range: MemRange) {
        debug_assert!(self.whole.contains_range(range));
        let mut start = range.start().get();
        let mut len = range.len();
        if let Some((&prev, &plen)) = self.free.range(..start).next_back() {
            debug_assert!(prev + plen <= start, "double free of address space");
            if prev + plen == start {
                self.free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        if let Some(&nlen) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nlen;
        }
        self.free.insert(start, len);
    }

    /// Bytes free.
    pub(crate) fn free_bytes(&self) -> usize {
        self.free.values().sum()
    }

    /// The whole reservation.
    pub(crate) fn whole(&self) -> MemRange {
        self.whole
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn low_high_and_coalescing() {
        let whole = MemRange::new(Address::new(0x100000), 0x10000).unwrap();
        let mut v = VirtualSpace::new(whole);
        let a = v.alloc_low(0x1000).unwrap();
        let b = v.alloc_high(0x2000).unwrap();
        assert_eq!(a.start(), whole.start());
        assert_eq!(b.end(), whole.end());
        assert_eq!(v.free.keys().next(), Some(&a.end().get()));
        let c = v.alloc_low(0x1000).unwrap();
        v.free(a);
        assert_eq!(v.free.keys().next(), Some(&whole.start().get()));
        v.free(c);
        v.free(b);
        assert_eq!(v.free.len(), 1);
        assert_eq!(v.free_bytes(), whole.len());
        assert!(v.alloc_low(0x10001).is_none());
    }
}
