//! A small, complete object model with references: objects with reference
//! slots and a checksummed payload, root tables, and builders for the usual
//! graph shapes (lists, trees, arrays of references, cycles). It is what the
//! demo, the soak and the tests run on, and a [`Binding`] to start from.
//!
//! Each object is, in 8-byte words:
//! `[size][id][slot count n][payload checksum][n reference slots][payload...]`.
//! A slot holds an object's address or 0. The payload is a pattern derived
//! from the id and its checksum is stored in the header, so
//! [`SimpleObjects::verify`] proves that every reachable object survived
//! every collection intact, and its graph digest that every reference still
//! leads to the right object.
//!
//! # Rooting
//! [`Mutator::alloc`] may collect: keep every object you still need in a
//! [`RootTable`] (or linked from a rooted object) across each allocation,
//! and read it back from there afterwards. The builders below follow that
//! rule: each leaves its result as the last entry of the table.

use crate::vm::{Binding, ObjectReference, SimpleSlot, SlotVisitor};
use crate::{Address, AllocError, Mutator};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Header bytes of every object: size, id, slot count, checksum.
pub const HEADER: usize = 32;

/// An object whose contents are not what was written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// Where it is.
    pub object: ObjectReference,
    /// Its header: size, id, slot count, stored checksum.
    pub header: [u64; 4],
    /// The checksum its payload has now.
    pub payload_checksum: u64,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object at {} (size {}, id {}, {} slots) has payload checksum {:#x}, header says {:#x}",
            self.object,
            self.header[0],
            self.header[1],
            self.header[2],
            self.payload_checksum,
            self.header[3]
        )
    }
}

impl std::error::Error for Corruption {}

pub use crate::roots::RootTable;

fn from_raw(v: usize) -> Option<ObjectReference> {
    ObjectReference::from_address(Address::new(v))
}

/// The object model: objects with reference slots; every [`RootTable`]
/// made by [`SimpleObjects::root_table`] is reported to the runtime.
#[derive(Debug, Default)]
pub struct SimpleObjects {
    tables: Mutex<Vec<Arc<RootTable>>>,
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: a cheap pattern that differs per id and per word.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn seed(id: u64) -> u64 {
    id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

fn mix(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(0x0000_0100_0000_01b3)
}

const FNV: u64 = 0xcbf2_9ce4_8422_2325;

/// The digest of one object for [`GraphSummary::digest`]: its id, its size
/// and the ids its slots refer to (0 for null), in slot order.
pub fn object_digest(id: u64, size: usize, targets: &[u64]) -> u64 {
    let mut h = mix(mix(FNV, id), size as u64);
    for &t in targets {
        h = mix(h, t.wrapping_add(1));
    }
    h ^ (h >> 29)
}

/// What [`SimpleObjects::verify`] found.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphSummary {
    /// Reachable objects.
    pub objects: usize,
    /// Their bytes.
    pub bytes: usize,
    /// The wrapping sum of every reachable object's [`object_digest`]:
    /// equal for two heaps with the same objects, payloads and references,
    /// wherever the objects are.
    pub digest: u64,
}

impl GraphSummary {
    /// Adds one object.
    pub fn add(&mut self, id: u64, size: usize, targets: &[u64]) {
        self.objects += 1;
        self.bytes += size;
        self.digest = self.digest.wrapping_add(object_digest(id, size, targets));
    }

    /// Adds every object of `other`, a graph disjoint from this one.
    pub fn merge(&mut self, other: &GraphSummary) {
        self.objects += other.objects;
        self.bytes += other.bytes;
        self.digest = self.digest.wrapping_add(other.digest);
    }
}

/// Where [`SimpleObjects::init_more`] is in writing an object's payload.
pub(crate) struct Payload {
    state: u64,
    hash: u64,
    /// The next word to write.
    next: usize,
    /// The object's size in words.
    end: usize,
}

#[inline]
fn word(obj: ObjectReference, i: usize) -> *mut u64 {
    obj.to_address().as_ptr::<u64>().wrapping_add(i)
}

impl SimpleObjects {
    /// An empty model.
    pub fn new() -> Arc<SimpleObjects> {
        Arc::new(SimpleObjects::default())
    }

    /// A new root table, reported to the runtime from now on
    /// ([`Binding::root_tables`]). The builders ([`build`]) refuse a table
    /// that the runtime they allocate in does not scan:
    ///
    /// ```compile_fail,E0599
    /// let t = hotmem::objects::RootTable::default(); // no Default
    /// ```
    pub fn root_table(&self) -> Arc<RootTable> {
        let t = RootTable::new();
        self.tables.lock().push(t.clone());
        t
    }

    /// Whether `table` is one of this model's, scanned by it.
    pub fn scans(&self, table: &RootTable) -> bool {
        self.tables.lock().iter().any(|t| std::ptr::eq(&**t, table))
    }

    /// The size of an object with `slots` reference slots and
    /// `payload_words` words of payload; `usize::MAX`, which no allocation
    /// accepts, where that overflows.
    pub fn size_for(slots: usize, payload_words: usize) -> usize {
        slots
            .checked_add(payload_words)
            .and_then(|w| w.checked_mul(8))
            .and_then(|b| b.checked_add(HEADER))
            .unwrap_or(usize::MAX)
    }

    /// Writes object `id` of `size` bytes with `slots` null slots at `addr`.
    ///
    /// # Safety
    /// `addr` must be a fresh allocation of at least `size` bytes, 8-byte
    /// aligned, that nothing else uses.
    ///
    /// # Panics
    /// If `size` is not a multiple of 8 or too small for the header and
    /// the slots.
    pub unsafe fn init(addr: Address, size: usize, slots: usize, id: u64) -> ObjectReference {
        // SAFETY: passed on.
        let (obj, mut payload) = unsafe { Self::begin_init(addr, size, slots, id) };
        // SAFETY: `obj` was just written; nothing collects meanwhile.
        let done = unsafe { Self::init_more(obj, &mut payload, usize::MAX) };
        debug_assert!(done);
        obj
    }

    /// [`SimpleObjects::init`] in steps, for a builder that polls between
    /// them (a VM clears a large object in segments, polling between
    /// them): the header and the null slots now, with no checksum yet, so
    /// that a collection can trace and move the object; the payload by
    /// [`SimpleObjects::init_more`].
    ///
    /// # Safety
    /// As [`SimpleObjects::init`].
    pub(crate) unsafe fn begin_init(
        addr: Address,
        size: usize,
        slots: usize,
        id: u64,
    ) -> (ObjectReference, Payload) {
        assert!(
            size % 8 == 0 && size >= Self::size_for(slots, 0),
            "object size {size} for {slots} slots"
        );
        let obj = ObjectReference::from_address(addr).expect("an allocation is aligned");
        // SAFETY: the header and the slots lie inside the allocation.
        unsafe {
            word(obj, 0).write(size as u64);
            word(obj, 1).write(id);
            word(obj, 2).write(slots as u64);
            word(obj, 3).write(0);
            for i in 0..slots {
                word(obj, HEADER / 8 + i).write(0);
            }
        }
        let payload = Payload {
            state: seed(id),
            hash: FNV,
            next: HEADER / 8 + slots,
            end: size / 8,
        };
        (obj, payload)
    }

    /// Writes up to `words` more words of `obj`'s payload, and its checksum
    /// once the last is written: whether it was.
    ///
    /// # Safety
    /// `obj` is the current address of the object `payload` came from
    /// ([`SimpleObjects::begin_init`]), and no collection runs meanwhile.
    pub(crate) unsafe fn init_more(
        obj: ObjectReference,
        payload: &mut Payload,
        words: usize,
    ) -> bool {
        let stop = payload.end.min(payload.next.saturating_add(words));
        for i in payload.next..stop {
            let w = next(&mut payload.state);
            payload.hash = mix(payload.hash, w);
            // SAFETY: word `i` lies inside the object (below its size).
            unsafe { word(obj, i).write(w) };
        }
        payload.next = stop;
        if stop < payload.end {
            return false;
        }
        // SAFETY: the checksum word of the object's header.
        unsafe { word(obj, 3).write(payload.hash) };
        true
    }

    /// The object's header: size, id, slot count, stored checksum.
    ///
    /// # Safety
    /// `obj` must be a live object of this model, and no collection may run
    /// meanwhile (call it from an attached mutator between calls that may
    /// collect).
    pub unsafe fn header(obj: ObjectReference) -> [u64; 4] {
        // SAFETY: the caller's promise: a whole live object.
        unsafe { [0, 1, 2, 3].map(|i| word(obj, i).read()) }
    }

    /// The reference in slot `i`.
    ///
    /// # Safety
    /// As [`SimpleObjects::header`].
    ///
    /// # Panics
    /// If `i` is not a slot of the object.
    pub unsafe fn slot(obj: ObjectReference, i: usize) -> Option<ObjectReference> {
        // SAFETY: passed on.
        let n = unsafe { Self::header(obj)[2] } as usize;
        assert!(i < n, "slot {i} of an object with {n}");
        // SAFETY: slot `i` lies inside the object.
        from_raw(unsafe { word(obj, HEADER / 8 + i).read() } as usize)
    }

    /// The reference in slot `i`, read through the mutator's load barrier
    /// ([`Mutator::load_ref`]): what every read of a slot must be with the
    /// concurrent collector, which moves objects while the mutators run
    /// (a direct read, [`SimpleObjects::slot`], may return an old copy's
    /// address there).
    ///
    /// # Safety
    /// `obj` must be a live object of this model, read by an attached
    /// mutator between calls that may collect.
    ///
    /// # Panics
    /// If `i` is not a slot of the object.
    pub unsafe fn load_slot(
        mutator: &Mutator,
        obj: ObjectReference,
        i: usize,
    ) -> Option<ObjectReference> {
        // SAFETY: passed on.
        let n = unsafe { Self::header(obj)[2] } as usize;
        assert!(i < n, "slot {i} of an object with {n}");
        // SAFETY: slot `i` is a word of the live object.
        mutator.load_ref(unsafe { SimpleSlot::new(Address::new(obj.get() + HEADER + 8 * i)) })
    }

    /// Stores `target` in slot `i` (through the mutator's store barrier).
    ///
    /// # Safety
    /// As [`SimpleObjects::header`]; `target` must be a live object or null.
    ///
    /// # Panics
    /// If `i` is not a slot of the object.
    pub unsafe fn set_slot(
        mutator: &Mutator,
        obj: ObjectReference,
        i: usize,
        target: Option<ObjectReference>,
    ) {
        // SAFETY: passed on.
        let n = unsafe { Self::header(obj)[2] } as usize;
        assert!(i < n, "slot {i} of an object with {n}");
        // SAFETY: slot `i` is a word of the live object; mutators do not
        // touch it during a collection.
        let slot = unsafe { SimpleSlot::new(Address::new(obj.get() + HEADER + 8 * i)) };
        match target {
            Some(t) => mutator.store_ref(slot, t),
            None => {
                // The reference overwritten by null is logged while the
                // concurrent collector marks.
                mutator.before_overwrite(&slot);
                // SAFETY: as above; a relaxed atomic store, as the slot's
                // own (the concurrent collector may load the word now).
                unsafe { AtomicU64::from_ptr(word(obj, HEADER / 8 + i)) }
                    .store(0, Ordering::Relaxed);
            }
        }
    }

    /// Checks one object's payload against its checksum.
    ///
    /// # Safety
    /// As [`SimpleObjects::header`].
    ///
    /// # Errors
    /// [`Corruption`] if they differ.
    pub unsafe fn check(obj: ObjectReference) -> Result<(), Corruption> {
        // SAFETY: passed on.
        let header = unsafe { Self::header(obj) };
        let (size, slots) = (header[0] as usize, header[2] as usize);
        let mut hash = FNV;
        if size % 8 == 0 && size >= Self::size_for(slots, 0) {
            for i in HEADER / 8 + slots..size / 8 {
                // SAFETY: inside the object.
                hash = mix(hash, unsafe { word(obj, i).read() });
            }
        }
        if hash == header[3] {
            Ok(())
        } else {
            Err(Corruption {
                object: obj,
                header,
                payload_checksum: hash,
            })
        }
    }

    /// Every object the root tables refer to now.
    fn roots(&self) -> Vec<ObjectReference> {
        self.tables
            .lock()
            .iter()
            .flat_map(|t| t.roots())
            .flatten()
            .collect()
    }

    /// Walks the whole graph reachable from the root tables, checks every
    /// object's payload, and sums it up.
    ///
    /// # Safety
    /// No collection may run meanwhile (see [`SimpleObjects::header`]), and
    /// every root must be a live object of this model.
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify(&self) -> Result<GraphSummary, Corruption> {
        let roots = self.roots();
        // SAFETY: passed on.
        unsafe { Self::verify_from(roots) }
    }

    /// [`SimpleObjects::verify`] from the given roots.
    ///
    /// # Safety
    /// As [`SimpleObjects::verify`].
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify_from(
        roots: impl IntoIterator<Item = ObjectReference>,
    ) -> Result<GraphSummary, Corruption> {
        // SAFETY: passed on; a direct read of each slot.
        unsafe { Self::walk(roots, |obj, i| Self::slot(obj, i)) }
    }

    /// [`SimpleObjects::verify`] through `mutator`'s load barrier: what
    /// checks the graph with the concurrent collector, whose cycles may
    /// move objects meanwhile (each slot read is forwarded and healed as
    /// [`SimpleObjects::load_slot`] does).
    ///
    /// # Safety
    /// Every root must be a live object of this model; `mutator` must not
    /// poll or allocate meanwhile (it does not).
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify_with(&self, mutator: &Mutator) -> Result<GraphSummary, Corruption> {
        let roots = self.roots();
        // SAFETY: passed on.
        unsafe { Self::walk(roots, |obj, i| Self::load_slot(mutator, obj, i)) }
    }

    /// [`SimpleObjects::verify_from`] through `mutator`'s load barrier (see
    /// [`SimpleObjects::verify_with`]).
    ///
    /// # Safety
    /// As [`SimpleObjects::verify_with`].
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify_from_with(
        mutator: &Mutator,
        roots: impl IntoIterator<Item = ObjectReference>,
    ) -> Result<GraphSummary, Corruption> {
        // SAFETY: passed on.
        unsafe { Self::walk(roots, |obj, i| Self::load_slot(mutator, obj, i)) }
    }

    /// [`SimpleObjects::verify`] inside
    /// [`Runtime::run_at_safepoint`](crate::Runtime::run_at_safepoint)
    /// (see [`SimpleObjects::verify_from_at_safepoint`]).
    ///
    /// # Safety
    /// As [`SimpleObjects::verify`], at a safepoint of `runtime`.
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify_at_safepoint(
        &self,
        runtime: &crate::Runtime,
    ) -> Result<GraphSummary, Corruption> {
        let roots = self.roots();
        // SAFETY: passed on.
        unsafe { Self::verify_from_at_safepoint(runtime, roots) }
    }

    /// [`SimpleObjects::verify_from`] without a mutator, inside
    /// [`Runtime::run_at_safepoint`](crate::Runtime::run_at_safepoint)
    /// of `runtime`: each slot's reference is taken where
    /// [`Runtime::forwarded`](crate::Runtime::forwarded) says its object
    /// is (the concurrent collector may have moved it and left the slot
    /// stale).
    ///
    /// # Safety
    /// As [`SimpleObjects::verify`], at a safepoint of `runtime`.
    ///
    /// # Errors
    /// The first [`Corruption`].
    pub unsafe fn verify_from_at_safepoint(
        runtime: &crate::Runtime,
        roots: impl IntoIterator<Item = ObjectReference>,
    ) -> Result<GraphSummary, Corruption> {
        let roots: Vec<ObjectReference> = roots.into_iter().map(|r| runtime.forwarded(r)).collect();
        // SAFETY: passed on.
        unsafe {
            Self::walk(roots, |obj, i| {
                Self::slot(obj, i).map(|t| runtime.forwarded(t))
            })
        }
    }

    /// Walks the graph from `roots`, reading slot `i` of `obj` with
    /// `slot(obj, i)`, checks every object and sums the graph up.
    ///
    /// # Safety
    /// As [`SimpleObjects::verify`], with `slot` a way to read a slot that
    /// returns a live object.
    unsafe fn walk(
        roots: impl IntoIterator<Item = ObjectReference>,
        slot: impl Fn(ObjectReference, usize) -> Option<ObjectReference>,
    ) -> Result<GraphSummary, Corruption> {
        let mut seen = HashSet::new();
        let mut stack: Vec<ObjectReference> = roots.into_iter().collect();
        let mut sum = GraphSummary::default();
        let mut targets = Vec::new();
        while let Some(obj) = stack.pop() {
            if !seen.insert(obj) {
                continue;
            }
            // SAFETY: reachable from live roots: a live object.
            unsafe { Self::check(obj)? };
            // SAFETY: as above.
            let h = unsafe { Self::header(obj) };
            targets.clear();
            for i in 0..h[2] as usize {
                let t = slot(obj, i);
                if let Some(t) = t {
                    // SAFETY: a reference of a live object is live.
                    targets.push(unsafe { Self::header(t)[1] });
                    stack.push(t);
                } else {
                    targets.push(0);
                }
            }
            sum.add(h[1], h[0] as usize, &targets);
        }
        Ok(sum)
    }
}

impl Binding for SimpleObjects {
    type Slot = SimpleSlot;

    fn object_size(&self, obj: ObjectReference) -> usize {
        // SAFETY: the runtime asks only about marked objects inside the used
        // part of a heap page; their first word is their size.
        unsafe { word(obj, 0).read() as usize }
    }

    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        // SAFETY: as in `object_size`; the runtime checked that the size
        // fits the page, and the slots are checked against it below.
        let (size, n) = unsafe { (word(obj, 0).read(), word(obj, 2).read()) };
        let fits = n
            .checked_mul(8)
            .and_then(|b| b.checked_add(HEADER as u64))
            .is_some_and(|b| b <= size);
        assert!(
            fits,
            "object {obj}: {n} slots do not fit its size of {size} bytes"
        );
        for i in 0..n as usize {
            // SAFETY: slot `i` lies inside the object (checked above), in a
            // heap page that stays mapped for the collection.
            visitor
                .visit_slot(unsafe { SimpleSlot::new(Address::new(obj.get() + HEADER + 8 * i)) });
        }
    }

    fn slot_at(&self, addr: Address) -> Option<SimpleSlot> {
        // SAFETY: the runtime passes only an aligned word inside the used
        // part of a heap page that stays allocated for the collection, with
        // every mutator stopped (`Binding::slot_at`).
        Some(unsafe { SimpleSlot::new(addr) })
    }

    fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
        for t in self.tables.lock().iter() {
            report(t);
        }
    }
}

/// Ids for new objects, counted up.
#[derive(Debug)]
pub struct Ids {
    next: u64,
}

impl Ids {
    /// Ids from `first` (not 0: 0 stands for null in digests).
    pub fn from(first: u64) -> Ids {
        Ids { next: first.max(1) }
    }

    /// The next id.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }
}

pub mod build;
pub use build::GraphError;
mod hooked;
pub use hooked::HookedObjects;
