//! The free-block list of an arena: metadata deallocated before its loader
//! died (and the committed remainder of a retired chunk), reused best-fit.
//!
//! Kept beside the memory, not in it, so that bad input (a double free, a
//! block the arena never handed out) is detected and refused before anything
//! changes.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Default, Debug)]
pub(crate) struct FreeBlocks {
    by_addr: BTreeMap<usize, usize>,
    by_size: BTreeSet<(usize, usize)>,
    bytes: usize,
}

impl FreeBlocks {
    pub(crate) fn len(&self) -> usize {
        self.by_addr.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `[addr, addr + size)` overlaps a free block.
    pub(crate) fn overlaps(&self, addr: usize, size: usize) -> bool {
        let end = addr.saturating_add(size);
        if let Some((&a, &s)) = self.by_addr.range(..end).next_back() {
            // Blocks lie inside chunks, so `a + s` does not overflow.
            return a + s > addr;
        }
        false
    }

    /// Adds a block that overlaps none.
    pub(crate) fn insert(&mut self, addr: usize, size: usize) {
        debug_assert!(!self.overlaps(addr, size));
        self.by_addr.insert(addr, size);
        self.by_size.insert((size, addr));
        self.bytes += size;
    }

    /// Takes the smallest block of at least `size` bytes; the rest of it (if
    /// any) stays free.
    pub(crate) fn take(&mut self, size: usize) -> Option<usize> {
        let &(found, addr) = self.by_size.range((size, 0)..).next()?;
        self.by_size.remove(&(found, addr));
        self.by_addr.remove(&addr);
        self.bytes -= found;
        if found > size {
            self.insert(addr + size, found - size);
        }
        Some(addr)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.by_addr.iter().map(|(&a, &s)| (a, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_fit_and_overlap() {
        let mut fb = FreeBlocks::default();
        fb.insert(1000, 64);
        fb.insert(2000, 16);
        fb.insert(3000, 32);
        assert!(fb.overlaps(1056, 16));
        assert!(!fb.overlaps(1064, 16));
        assert!(fb.overlaps(990, 16));
        assert_eq!(fb.take(24), Some(3000));
        assert_eq!(fb.bytes(), 64 + 16 + 8);
        assert!(fb.overlaps(3024, 8));
        assert_eq!(fb.take(128), None);
        assert_eq!(fb.take(16), Some(2000));
        assert_eq!(fb.len(), 2);
    }
}
