//! [`SlotTable`]: entries addressed by index, each holding a value or
//! none, with a free list: the one table behind the runtime's strong
//! handles ([`Handle`](crate::Handle)), weak handles
//! ([`WeakHandle`](crate::WeakHandle)) and ephemerons
//! ([`Ephemeron`](crate::Ephemeron)). A handle owns its entry from `add`
//! until `release`; the entry's value may be none meanwhile (a weak handle
//! a collection cleared). The owner keeps the table behind its lock, so
//! that an operation that reads one entry and adds another (a clone) is
//! one lock acquisition, which a collection's update of the table also
//! takes.

/// Entries by index, a value or none each, and the free ones.
pub(crate) struct SlotTable<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for SlotTable<T> {
    fn default() -> Self {
        SlotTable {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T: Copy> SlotTable<T> {
    /// A new entry holding `value`; its index (a free one reused first).
    pub(crate) fn add(&mut self, value: Option<T>) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = value;
                i
            }
            None => {
                self.slots.push(value);
                self.slots.len() - 1
            }
        }
    }

    /// What entry `index` holds.
    ///
    /// # Panics
    /// If `index` was never added.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<T> {
        self.slots[index]
    }

    /// Makes entry `index` hold `value`.
    ///
    /// # Panics
    /// If `index` was never added.
    pub(crate) fn set(&mut self, index: usize, value: Option<T>) {
        self.slots[index] = value;
    }

    /// Frees entry `index` (its handle is gone).
    ///
    /// # Panics
    /// If `index` was never added.
    pub(crate) fn release(&mut self, index: usize) {
        self.slots[index] = None;
        self.free.push(index);
    }

    /// Every entry, in a stable order while the table is borrowed: the
    /// values and the `None`s of cleared and free entries.
    pub(crate) fn entries_mut(&mut self) -> &mut [Option<T>] {
        &mut self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_entries_are_reused_and_values_are_visited() {
        let mut t = SlotTable::default();
        let (a, b, c) = (t.add(Some(1)), t.add(None), t.add(Some(3)));
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(t.get(b), None, "an entry may hold nothing");
        t.release(a);
        assert_eq!(t.get(a), None);
        assert_eq!(t.add(Some(4)), a, "a free entry is reused");
        t.set(b, Some(2));
        for v in t.entries_mut().iter_mut().flatten() {
            *v *= 10;
        }
        assert_eq!(t.entries_mut(), [Some(40), Some(20), Some(30)]);
    }
}
