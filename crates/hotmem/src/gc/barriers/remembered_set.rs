//! The generational store barrier: a store into an old object of a
//! reference to a young one remembers the slot's address, which the next
//! young collection treats as a root (and updates when the young object
//! moves). The mutator's side is [`StoreBarrier`] (one per mutator, its
//! fast path a shift and a compare when slot and value share a page); the
//! collector's side is [`RememberedSet`]: every mutator's buffer of slots
//! ([`SlotBuffer`]) and the table of old pages the barrier reads
//! ([`OldPages`]). The stop-the-world collector takes the slots at each
//! collection and rebuilds the table after it.

use crate::gc::core::meta::OldPages;
use hotmem_page::{Age, PageRef};
use parking_lot::Mutex;
use std::sync::Arc;

/// A remembered-slot buffer compacts (sorts, drops duplicates) when it
/// grows past this many entries since its last compaction.
/// (Smaller under Miri, so that its unit test interprets in seconds.)
const COMPACT_AFTER: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };

/// Entries of a buffer's filter of recently remembered slots.
const RECENT: usize = 256;

/// The slots one mutator's store barrier remembered.
pub(crate) struct SlotBuffer {
    slots: Vec<usize>,
    compacted_len: usize,
    /// Recently remembered slots, direct-mapped by address (0: none): a
    /// slot found here is in `slots` already, so a store that repeats it
    /// (a field updated in a loop) costs a compare. Emptied whenever
    /// `slots` is, so that it never names a slot the collector took.
    recent: [usize; RECENT],
}

impl Default for SlotBuffer {
    fn default() -> Self {
        SlotBuffer {
            slots: Vec::new(),
            compacted_len: 0,
            recent: [0; RECENT],
        }
    }
}

impl SlotBuffer {
    /// Remembers `slot` (a repeat of a recent one is dropped at once).
    #[inline]
    pub(crate) fn push(&mut self, slot: usize) {
        let recent = &mut self.recent[(slot >> 3) % RECENT];
        if *recent == slot {
            return;
        }
        *recent = slot;
        self.slots.push(slot);
        if self.slots.len() - self.compacted_len > COMPACT_AFTER {
            self.slots.sort_unstable();
            self.slots.dedup();
            self.compacted_len = self.slots.len();
        }
    }

    /// Takes every remembered slot (in the order remembered, repeats and
    /// all) and empties the buffer: one swap.
    pub(crate) fn take(&mut self) -> Vec<usize> {
        self.forget_recent();
        std::mem::take(&mut self.slots)
    }

    /// Moves every remembered slot to the end of `all` and empties the
    /// buffer.
    pub(crate) fn drain_into(&mut self, all: &mut Vec<usize>) {
        all.append(&mut self.slots);
        self.forget_recent();
    }

    /// The slots were taken: the next store of any of them must remember
    /// it again.
    fn forget_recent(&mut self) {
        self.compacted_len = 0;
        self.recent = [0; RECENT];
    }
}

/// The collector's side of the store barrier: which pages are old, and
/// the slots each mutator's barrier remembered since the last collection.
pub(crate) struct RememberedSet {
    /// Which pages are old, by address (the barrier's test; the concurrent
    /// relocation marks the pages it copies into).
    pub(crate) old: Arc<OldPages>,
    /// Every mutator's barrier buffer (a detached mutator's stays until the
    /// next collection takes its slots).
    buffers: Mutex<Vec<Arc<Mutex<SlotBuffer>>>>,
    /// Slots the collector remembered for the next collection (a young
    /// concurrent cycle that evacuated: its survivors' slots into young
    /// pages).
    collector: Mutex<Vec<usize>>,
    /// The largest medium object: a larger one lies in a large page, never
    /// young.
    medium_object_max: usize,
}

impl RememberedSet {
    /// The set of a heap reservation `base..base+len` whose smallest page
    /// is `unit` bytes, with no old page and no slot.
    pub(crate) fn new(base: usize, len: usize, unit: usize, medium_object_max: usize) -> Self {
        RememberedSet {
            old: Arc::new(OldPages::new(base, len, unit)),
            buffers: Mutex::new(Vec::new()),
            collector: Mutex::new(Vec::new()),
            medium_object_max,
        }
    }

    /// A barrier buffer for a new mutator.
    pub(crate) fn register(&self) -> Arc<Mutex<SlotBuffer>> {
        let b = Arc::new(Mutex::new(SlotBuffer::default()));
        self.buffers.lock().push(b.clone());
        b
    }

    /// The barrier's slow path: `slot` (in an old page) was given a
    /// reference to a young object.
    #[inline(never)]
    pub(crate) fn remember(buffer: &Mutex<SlotBuffer>, slot: usize) {
        buffer.lock().push(slot);
    }

    /// Takes every remembered slot (sorted, without duplicates) and forgets
    /// the buffers of detached mutators. At a safepoint.
    pub(crate) fn take_remembered(&self) -> Vec<usize> {
        let mut all = std::mem::take(&mut *self.collector.lock());
        self.buffers.lock().retain(|buffer| {
            buffer.lock().drain_into(&mut all);
            Arc::strong_count(buffer) > 1
        });
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Takes every remembered slot, a list per buffer, unsorted, and
    /// forgets the buffers of detached mutators: one swap per buffer, for
    /// a pause that must not grow with the slots (a concurrent cycle's
    /// Pause Mark Start; it sorts them after, see [`sorted`]).
    pub(crate) fn take_unsorted(&self) -> Vec<Vec<usize>> {
        let mut all = vec![std::mem::take(&mut *self.collector.lock())];
        self.buffers.lock().retain(|buffer| {
            all.push(buffer.lock().take());
            Arc::strong_count(buffer) > 1
        });
        all
    }

    /// Remembers `slots` for the next collection, as the store barrier
    /// would have (the collector's own slots: see `collector`).
    pub(crate) fn remember_all(&self, mut slots: Vec<usize>) {
        self.collector.lock().append(&mut slots);
    }

    /// After a successful collection: every page is old now. (A
    /// concurrent cycle does it in Pause Mark Start: see
    /// [`RememberedSet::freed`].)
    pub(crate) fn all_old(&self, pages: &[PageRef]) {
        self.old.rebuild(pages);
    }

    /// `pages` are about to be freed: they are no longer old, so that a
    /// mutator that allocates in one of them later (before the next
    /// rebuild) gets a young page. A concurrent cycle frees pages while the
    /// mutators run: a freed page left old would hold objects born old,
    /// whose initializing stores the barrier never sees.
    pub(crate) fn freed(&self, pages: &[PageRef]) {
        for p in pages {
            self.old.clear(p.range().start().get(), p.size());
        }
    }

    /// A mutator allocated `size` bytes of `age` at `addr`: an object of an
    /// old age, or a large one, makes its page old (the collector never
    /// treats such a page as young, so the barrier must not either).
    #[inline]
    pub(crate) fn allocated(&self, addr: usize, size: usize, age: Age) {
        if age != Age::EDEN || size > self.medium_object_max {
            self.old.mark(addr, size);
        }
    }
}

/// A mutator's side of the store barrier.
pub(crate) struct StoreBarrier {
    set: Arc<RememberedSet>,
    buffer: Arc<Mutex<SlotBuffer>>,
    /// [`OldPages::unit_shift`], kept here so that the common store (slot
    /// and value in the same page) is decided without a load.
    shift: u32,
}

impl StoreBarrier {
    pub(crate) fn new(set: &Arc<RememberedSet>) -> StoreBarrier {
        StoreBarrier {
            buffer: set.register(),
            shift: set.old.unit_shift(),
            set: set.clone(),
        }
    }

    /// After `slot` was given `value`: remembers the slot if it lies in an
    /// old page and `value` in a young one. A slot and a value in the same
    /// page are both old or both young: no table lookup. Only that test is
    /// inline, on the two words alone; the table lookups are out of line.
    /// With the lookups inline at every store, an interpreter's dispatch
    /// loop compiled worse as a whole: the Lox VM ran 4.5-9.4% more
    /// instructions on every benchmark program in its stop-the-world copy
    /// (stores of references or not), and up to 1.8% more in its concurrent
    /// copy. A store the barrier must remember costs 5-8 instructions more
    /// (`store_barrier_instructions`: 193-198 -> 198-206 per store across
    /// its four sides), most of the count being the remembering itself.
    #[inline(always)]
    pub(crate) fn stored(&self, slot: usize, value: usize) {
        if (slot ^ value) >> self.shift != 0 {
            self.stored_across_pages(slot, value);
        }
    }

    /// [`StoreBarrier::stored`]'s table lookups, out of line.
    #[inline(never)]
    fn stored_across_pages(&self, slot: usize, value: usize) {
        let old = &self.set.old;
        if old.is_old(slot) && old.is_young(value) {
            RememberedSet::remember(&self.buffer, slot);
        }
    }

    /// A mutator allocated `size` bytes of `age` at `addr` (see
    /// [`RememberedSet::allocated`]).
    #[inline]
    pub(crate) fn allocated(&self, addr: usize, size: usize, age: Age) {
        self.set.allocated(addr, size, age);
    }
}

/// What [`RememberedSet::take_unsorted`] took, as one sorted list without
/// repeats.
pub(crate) fn sorted(lists: Vec<Vec<usize>>) -> Vec<usize> {
    let mut all = lists.concat();
    all.sort_unstable();
    all.dedup();
    all
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

    #[test]
    fn a_recent_slot_is_dropped_until_the_collector_takes_the_buffer() {
        let mut b = SlotBuffer::default();
        // Stores into a few fields in turn: each remembered once.
        for _ in 0..100 {
            for f in 0..4 {
                b.push(BASE + f * 8);
            }
        }
        assert_eq!(b.slots, [BASE, BASE + 8, BASE + 16, BASE + 24]);
        // A slot that shares a filter entry pushes the other out: both
        // stay remembered, the evicted one is pushed again (a repeat the
        // next compaction or the collector's sort drops).
        let alias = BASE + RECENT * 8;
        b.push(alias);
        b.push(BASE);
        assert_eq!(b.slots.len(), 6);
        // Once the collector took them, the next store of any is
        // remembered again: the filter never hides a taken slot.
        assert_eq!(b.take().len(), 6);
        b.push(BASE + 8);
        assert_eq!(b.slots, [BASE + 8]);
        let mut all = Vec::new();
        b.drain_into(&mut all);
        b.push(BASE + 8);
        assert_eq!(b.slots, [BASE + 8]);
    }
}
