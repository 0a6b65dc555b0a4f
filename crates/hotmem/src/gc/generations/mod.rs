//! Young and old objects: the choice, and what carries it between
//! collections.
//!
//! With [`Generations::YoungAndOld`], most collections are young: they mark
//! from the roots and from the slots the store barrier remembered, trace
//! only through young pages (those allocated since the last collection),
//! and free or evacuate only young pages. Old objects are taken as live
//! without being visited, which is what makes a young collection cheap when
//! most of the heap is long-lived. A full collection marks everything; it
//! runs when asked for, when what survives reaches the heap's target (see
//! [`sizing`](super::sizing)), and after a young collection that did not
//! make room.
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

mod old_table;
mod remembered;

pub(crate) use old_table::OldTable;
pub(crate) use remembered::SlotBuffer;

use hotmem_page::{Age, PageAllocator};
use parking_lot::Mutex;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// Young collections, with a full one when what survives reaches the
    /// heap's target (see [`HeapSizing`](crate::HeapSizing)). Every store of a reference into an object that may be old must
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
}

impl GenerationalState {
    pub(crate) fn new(base: usize, len: usize, unit: usize, medium_object_max: usize) -> Self {
        GenerationalState {
            old: OldTable::new(base, len, unit),
            buffers: Mutex::new(Vec::new()),
            full_next: AtomicBool::new(false),
            slots_lost: AtomicBool::new(false),
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
        let mut all = Vec::new();
        self.buffers.lock().retain(|buffer| {
            buffer.lock().drain_into(&mut all);
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
    /// the next collection is full if a young one left at least `full_at`
    /// bytes in use (the sizing policy's target).
    pub(crate) fn collected(&self, heap: &PageAllocator, kind: CollectionKind, full_at: usize) {
        self.old.rebuild(&heap.pages());
        let full = kind == CollectionKind::Young && heap.used_bytes() >= full_at;
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
