//! Young and old objects: the choice, and what carries it between
//! collections.
//!
//! With [`Generations::YoungAndOld`], most collections are young: they mark
//! from the roots and from the slots the store barrier remembered, trace
//! only through young pages (those allocated since the last collection),
//! and free or evacuate only young pages. Old objects are taken as live
//! without being visited, which is what makes a young collection cheap when
//! most of the heap is long-lived. A full collection marks everything; it
//! runs when asked for, when old objects fill half of the heap, and after a
//! young collection that did not make room.
//!
//! The invariant both kinds end with: no young page is left. A young page
//! with live objects is either evacuated (its objects copied to old pages)
//! or promoted where it is. So after every collection the remembered set is
//! empty, and between collections an old object can refer to a young one
//! only through a store made since, which the barrier
//! ([`Mutator::store_ref`](crate::Mutator::store_ref)) records.
//!
//! The barrier needs to know, from an address alone, whether it lies in an
//! old page: [`OldTable`] holds one byte per smallest page size of the heap
//! reservation, rebuilt at the end of each collection (every page then is
//! old) and set when a mutator allocates an old or a large object.

use crate::runtime::Inner;
use hotmem_page::{Age, PageRef};
use parking_lot::Mutex;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Whether the heap is split into young and old objects.
///
/// ```
/// use hotmem::{Generations, Runtime};
/// let rt = Runtime::builder()
///     .heap_max(64 << 20)
///     .generations(Generations::YoungAndOld)
///     .build()
///     .unwrap();
/// assert_eq!(rt.config().generations(), Generations::YoungAndOld);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Generations {
    /// Every collection marks the whole heap (the default). The store
    /// barrier records nothing.
    #[default]
    Single,
    /// Young collections, with a full one when old objects fill half of the
    /// heap. Every store of a reference into an object that may be old must
    /// go through [`Mutator::store_ref`](crate::Mutator::store_ref), and the
    /// binding must rebuild slots from their addresses
    /// ([`Binding::slot_at`](crate::Binding::slot_at)); a binding that
    /// cannot gets full collections only.
    YoungAndOld,
}

/// Which objects a collection marked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum CollectionKind {
    /// Only young objects, from the roots and the remembered slots.
    Young,
    /// Every object reachable from the roots.
    Full,
}

/// After a young collection, the next one is full when the heap in use is
/// at least this share of the maximum (in percent).
const FULL_WHEN_USED_PERCENT: usize = 50;

/// A remembered-slot buffer compacts (sorts, drops duplicates) when it
/// grows past this many entries since its last compaction.
/// (Smaller under Miri, so that its unit test interprets in seconds.)
const COMPACT_AFTER: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };

/// One byte per page unit of the heap reservation: nonzero where an old
/// page lies.
pub(crate) struct OldTable {
    base: usize,
    len: usize,
    shift: u32,
    old: Box<[AtomicU8]>,
}

impl OldTable {
    /// A table for the reservation `base..base+len`, in units of `unit`
    /// bytes (a power of two that every page's start and size are multiples
    /// of), with no old page.
    pub(crate) fn new(base: usize, len: usize, unit: usize) -> OldTable {
        debug_assert!(unit.is_power_of_two());
        OldTable {
            base,
            len,
            shift: unit.trailing_zeros(),
            old: (0..len.div_ceil(unit)).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    /// log2 of the unit: two addresses that agree above these bits lie in
    /// the same page.
    #[inline]
    pub(crate) fn unit_shift(&self) -> u32 {
        self.shift
    }

    /// Whether `addr` lies in an old page.
    #[inline]
    pub(crate) fn is_old(&self, addr: usize) -> bool {
        let off = addr.wrapping_sub(self.base);
        off < self.len && self.old[off >> self.shift].load(Ordering::Relaxed) != 0
    }

    /// Whether `addr` lies in the heap, outside every old page.
    #[inline]
    pub(crate) fn is_young(&self, addr: usize) -> bool {
        let off = addr.wrapping_sub(self.base);
        off < self.len && self.old[off >> self.shift].load(Ordering::Relaxed) == 0
    }

    /// Marks the units that `start..start+len` touches as old.
    pub(crate) fn mark(&self, start: usize, len: usize) {
        let off = start.wrapping_sub(self.base);
        if off >= self.len || len == 0 {
            return;
        }
        let first = off >> self.shift;
        let last = ((off + len - 1).min(self.len - 1)) >> self.shift;
        for unit in &self.old[first..=last] {
            unit.store(1, Ordering::Relaxed);
        }
    }

    /// Makes exactly `pages` old.
    pub(crate) fn rebuild(&self, pages: &[PageRef]) {
        for unit in self.old.iter() {
            unit.store(0, Ordering::Relaxed);
        }
        for p in pages {
            self.mark(p.range().start().get(), p.size());
        }
    }
}

/// The slots one mutator's store barrier remembered.
#[derive(Default)]
pub(crate) struct SlotBuffer {
    slots: Vec<usize>,
    compacted_len: usize,
}

impl SlotBuffer {
    #[inline]
    fn push(&mut self, slot: usize) {
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
}

/// A mutator's side of the store barrier.
pub(crate) struct StoreBarrier {
    state: Arc<GenerationalState>,
    buffer: Arc<Mutex<SlotBuffer>>,
    /// [`OldTable::unit_shift`], kept here so that the common store (slot
    /// and value in the same page) is decided without a load.
    shift: u32,
}

impl StoreBarrier {
    pub(crate) fn new(state: &Arc<GenerationalState>) -> StoreBarrier {
        StoreBarrier {
            buffer: state.register(),
            shift: state.old.unit_shift(),
            state: state.clone(),
        }
    }

    /// After `slot` was given `value`: remembers the slot if it lies in an
    /// old page and `value` in a young one. A slot and a value in the same
    /// page are both old or both young: no table lookup.
    #[inline]
    pub(crate) fn stored(&self, slot: usize, value: usize) {
        if (slot ^ value) >> self.shift == 0 {
            return;
        }
        let old = &self.state.old;
        if old.is_old(slot) && old.is_young(value) {
            GenerationalState::remember(&self.buffer, slot);
        }
    }
}

/// The generational state of a runtime that has [`Generations::YoungAndOld`].
pub(crate) struct GenerationalState {
    pub(crate) old: OldTable,
    /// Every mutator's barrier buffer (a detached mutator's stays until the
    /// next collection takes its slots).
    buffers: Mutex<Vec<Arc<Mutex<SlotBuffer>>>>,
    /// The next automatic collection is full.
    full_next: AtomicBool,
    /// A collection failed after taking the remembered slots: young pages
    /// may be left that old objects refer to unseen. Every collection is
    /// full until one succeeds.
    slots_lost: AtomicBool,
    medium_object_max: usize,
    heap_max: usize,
}

impl GenerationalState {
    pub(crate) fn new(
        base: usize,
        len: usize,
        unit: usize,
        medium_object_max: usize,
        heap_max: usize,
    ) -> Self {
        GenerationalState {
            old: OldTable::new(base, len, unit),
            buffers: Mutex::new(Vec::new()),
            full_next: AtomicBool::new(false),
            slots_lost: AtomicBool::new(false),
            medium_object_max,
            heap_max,
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
        let mut all = Vec::new();
        self.buffers.lock().retain(|buffer| {
            let mut b = buffer.lock();
            all.append(&mut b.slots);
            b.compacted_len = 0;
            drop(b);
            Arc::strong_count(buffer) > 1
        });
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The kind of the next collection: `wanted` if given (the policy's
    /// choice if not), but full whenever remembered slots were lost.
    pub(crate) fn next_kind(&self, wanted: Option<CollectionKind>) -> CollectionKind {
        if self.slots_lost.load(Ordering::Relaxed) {
            return CollectionKind::Full;
        }
        wanted.unwrap_or(if self.full_next.load(Ordering::Relaxed) {
            CollectionKind::Full
        } else {
            CollectionKind::Young
        })
    }

    /// Asks for the next automatic collection to be full: a young one did
    /// not make room.
    pub(crate) fn ask_full(&self) {
        self.full_next.store(true, Ordering::Relaxed);
    }

    /// A collection failed: its remembered slots are gone, so only a full
    /// collection may run until one succeeds.
    pub(crate) fn failed(&self) {
        self.slots_lost.store(true, Ordering::Relaxed);
    }

    /// After a successful collection of `kind`: every page is old now, and
    /// the next collection is full if the heap is still half full.
    pub(crate) fn collected(&self, inner: &Inner, kind: CollectionKind) {
        self.old.rebuild(&inner.heap.pages());
        let used = inner.heap.usage().used;
        let full = kind == CollectionKind::Young
            && used.saturating_mul(100) >= self.heap_max.saturating_mul(FULL_WHEN_USED_PERCENT);
        self.full_next.store(full, Ordering::Relaxed);
        if kind == CollectionKind::Full {
            self.slots_lost.store(false, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x4000_0000;
    const UNIT: usize = 1 << 21;

    #[test]
    fn the_old_table_marks_the_units_a_range_touches_and_nothing_outside_the_heap() {
        let t = OldTable::new(BASE, 8 * UNIT, UNIT);
        assert_eq!(t.unit_shift(), 21);
        assert!((0..8).all(|u| t.is_young(BASE + u * UNIT) && !t.is_old(BASE + u * UNIT)));
        // Outside the reservation: neither old nor young.
        for addr in [0, BASE - 8, BASE + 8 * UNIT, usize::MAX] {
            assert!(!t.is_old(addr) && !t.is_young(addr), "{addr:#x}");
        }
        // A range from the last word of unit 2 into unit 3.
        t.mark(BASE + 3 * UNIT - 8, 16);
        let old: Vec<usize> = (0..8).filter(|u| t.is_old(BASE + u * UNIT)).collect();
        assert_eq!(old, [2, 3]);
        assert!(t.is_old(BASE + 2 * UNIT) && t.is_old(BASE + 4 * UNIT - 1));
        assert!(t.is_young(BASE + 4 * UNIT));
        // Empty ranges, ranges outside, and a range past the end (clamped).
        t.mark(BASE + 5 * UNIT, 0);
        t.mark(BASE - UNIT, UNIT);
        t.mark(BASE + 9 * UNIT, UNIT);
        t.mark(BASE + 7 * UNIT, 4 * UNIT);
        let old: Vec<usize> = (0..8).filter(|u| t.is_old(BASE + u * UNIT)).collect();
        assert_eq!(old, [2, 3, 7]);
    }

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
