//! [`SlotBuffer`]: the slots one mutator's store barrier remembered.

/// A remembered-slot buffer compacts (sorts, drops duplicates) when it
/// grows past this many entries since its last compaction.
/// (Smaller under Miri, so that its unit test interprets in seconds.)
const COMPACT_AFTER: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };

/// The slots one mutator's store barrier remembered.
#[derive(Default)]
pub(crate) struct SlotBuffer {
    slots: Vec<usize>,
    compacted_len: usize,
}

impl SlotBuffer {
    /// Remembers `slot` (a repeat of the last one is dropped at once).
    #[inline]
    pub(crate) fn push(&mut self, slot: usize) {
        if self.slots.last() == Some(&slot) {
            return;
        }
        self.slots.push(slot);
        if self.slots.len() - self.compacted_len > COMPACT_AFTER {
            self.slots.sort_unstable();
            self.slots.dedup();
            self.compacted_len = self.slots.len();
        }
    }

    /// Moves every remembered slot to the end of `all` and empties the
    /// buffer.
    pub(crate) fn drain_into(&mut self, all: &mut Vec<usize>) {
        all.append(&mut self.slots);
        self.compacted_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x4000_0000;

    #[test]
    fn a_slot_buffer_drops_repeats_and_compacts_without_losing_a_slot() {
        let mut b = SlotBuffer::default();
        b.push(BASE);
        b.push(BASE);
        b.push(BASE + 8);
        assert_eq!(
            b.slots,
            [BASE, BASE + 8],
            "a repeated store is recorded once"
        );
        // Past the compaction threshold, duplicates (not only consecutive
        // ones) go and every distinct slot stays.
        let distinct_slots = COMPACT_AFTER / 64;
        for i in 0..=COMPACT_AFTER {
            b.push(BASE + (i % distinct_slots) * 8);
        }
        assert!(
            b.slots.len() < distinct_slots + 64,
            "{} entries",
            b.slots.len()
        );
        let mut distinct = b.slots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct,
            (0..distinct_slots)
                .map(|i| BASE + i * 8)
                .collect::<Vec<_>>()
        );
    }
}
