//! [`RelocationSet`]: the pages a cycle evacuates while the mutators run,
//! and how a reference into one of them finds its object's new address
//! (relocating the object first if nobody has): the forwarding every
//! collector that moves objects outside a pause uses, the load barrier's
//! slow path (`gc/barriers/`) and its relocation workers alike.
//!
//! The set lives from the cycle's Pause Relocate Start to the next cycle's
//! Pause Mark End. Slots of the heap keep the old addresses meanwhile
//! (stale references, healed lazily): a mutator's load barrier forwards and
//! heals what it loads, and the next marking forwards and heals every slot
//! it visits, after which nothing reachable refers into the set and its
//! pages are freed with the other pages marking found empty.
//!
//! Without colored pointers an address cannot say whether it is stale, so
//! the pages stay allocated until then: were their memory reused, a stale
//! reference and a new object's address would be the same number.

use super::heap::GcAllocator;
use super::meta::{Forwarding, ForwardingTables, GranuleTable, HeapMap, OldPages};
use crate::vm::{ObjectReference, Slot};
use hotmem_os::Address;
use hotmem_page::{Age, NodeId, ObjectLayout};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Publishes `target` (`size` bytes) as where the object at `word` of a
/// page with forwarding table `f` is now, unless another thread's copy was
/// published first: the copy that won. With generations (`old`), the copy
/// is marked old first: a mutator that finds the entry may store a young
/// reference into the copy at once, and its store barrier must see an old
/// object (the insert publishes the mark with the entry).
pub(crate) fn publish_copy(
    f: &Forwarding,
    word: usize,
    target: Address,
    size: usize,
    old: Option<&OldPages>,
) -> Address {
    if let Some(old) = old {
        old.mark(target.get(), size);
    }
    // The table has an entry for every live object of the page.
    f.insert(word, target).unwrap_or(target)
}

/// Gives `slot`, which was seen holding `stale` (a reference into a
/// relocation set), the object's address `to`, unless another thread
/// stored into the slot meanwhile: one compare-and-swap that replaces only
/// the stale value, so that a heal never overwrites a mutator's store (the
/// loom model `a_heal_never_overwrites_a_store` checks it).
#[inline]
pub(crate) fn heal<S: Slot>(slot: &S, stale: ObjectReference, to: ObjectReference) {
    if to != stale {
        slot.compare_exchange(stale, to);
    }
}

/// The pages one concurrent cycle evacuates, with the cycle's heap map
/// (their live maps say where their objects are and how large) and a
/// forwarding table each.
pub(crate) struct RelocationSet {
    map: HeapMap,
    forwarding: ForwardingTables,
    /// Per unit of the heap map's granule: the index + 1 in `map` of the
    /// page in the set that covers it, 0 where none does.
    index: GranuleTable<u32>,
    /// The pages in the set, as indices into `map`.
    pages: Vec<usize>,
    /// Per page of `map`: an object of it could not be copied (no memory)
    /// and stays where it is, forwarded to itself; the page stays.
    incomplete: Box<[AtomicBool]>,
    /// Objects and bytes copied by mutators' load barriers, by the GC
    /// thread in Pause Relocate Start, and for root tables' entries after
    /// it (the workers count their own).
    by_mutators: Counts,
    in_pause: Counts,
    for_root_tables: Counts,
    /// With generations: the table of old pages, where every copy is
    /// marked old before it is published (a mutator may store a young
    /// reference into the copy at once; the store barrier must see an old
    /// object).
    old_pages: Option<Arc<OldPages>>,
}

/// Objects and bytes copied.
#[derive(Default)]
struct Counts {
    objects: AtomicU64,
    bytes: AtomicU64,
}

impl Counts {
    fn add(&self, bytes: usize) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (
            self.objects.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// What forwarding one reference did.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Forwarded {
    /// The object's address now.
    pub(crate) to: ObjectReference,
    /// Bytes this call copied (0: another thread's copy won, or the object
    /// had been forwarded already).
    pub(crate) copied: usize,
}

/// Who relocates an object: the set counts the copies of mutators and of
/// the pause; the workers count theirs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Relocator {
    /// A GC worker in Concurrent Relocate.
    Worker,
    /// The GC thread in Pause Relocate Start (the roots).
    Pause,
    /// A mutator's load barrier.
    Mutator,
    /// Whoever forwards an entry of a root table first after Pause
    /// Relocate Start: the GC thread, or a thread reading the entry.
    RootTable,
}

impl RelocationSet {
    /// The set of the pages of `map` that have a forwarding table in
    /// `forwarding`.
    pub(crate) fn new(map: HeapMap, forwarding: ForwardingTables) -> RelocationSet {
        let (base, len, shift) = map.geometry();
        let mut index = GranuleTable::new(base, len, 1 << shift, || 0u32);
        let pages: Vec<usize> = forwarding.pages().collect();
        for &pi in &pages {
            let p = &map.pages[pi];
            for u in index.entries_of_mut(p.start, p.page.size()) {
                *u = pi as u32 + 1;
            }
        }
        let incomplete = (0..map.pages.len())
            .map(|_| AtomicBool::new(false))
            .collect();
        RelocationSet {
            map,
            forwarding,
            index,
            pages,
            incomplete,
            by_mutators: Counts::default(),
            in_pause: Counts::default(),
            for_root_tables: Counts::default(),
            old_pages: None,
        }
    }

    /// Marks every copy old in `old` (with generations: the copies are
    /// old objects). Before the set is installed.
    pub(crate) fn mark_copies_old(&mut self, old: Arc<OldPages>) {
        self.old_pages = Some(old);
    }

    /// Takes out of the set the page of each object of `pinned` that lies
    /// in it (a pinned object never moves). Before the set is installed.
    pub(crate) fn unpin(&mut self, pinned: &[ObjectReference]) -> usize {
        let mut removed = 0;
        for r in pinned {
            let Some(pi) = self.page_in_set(r.get()) else {
                continue;
            };
            let p = &self.map.pages[pi];
            for u in self.index.entries_of_mut(p.start, p.page.size()) {
                *u = 0;
            }
            self.pages.retain(|&q| q != pi);
            removed += 1;
        }
        removed
    }

    /// The pages in the set (indices into the map) with their nodes.
    pub(crate) fn pages(&self) -> impl Iterator<Item = (NodeId, usize)> + '_ {
        self.pages
            .iter()
            .map(|&pi| (self.map.pages[pi].page.node(), pi))
    }

    /// The pages in the set: index in the map, start, size.
    pub(crate) fn page_ranges(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        self.pages.iter().map(|&pi| {
            let p = &self.map.pages[pi];
            (pi, p.start, p.page.size())
        })
    }

    /// Whether page `pi` of the set's map is in the set.
    pub(crate) fn contains_page(&self, pi: usize) -> bool {
        self.forwarding.get(pi).is_some()
    }

    /// The collection's heap map the set was made from (its pages' live
    /// maps say where the marked objects were).
    pub(crate) fn map(&self) -> &HeapMap {
        &self.map
    }

    /// How many pages are in the set.
    pub(crate) fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// The pages of the set where an object stayed (no memory to copy it).
    pub(crate) fn incomplete_pages(&self) -> usize {
        (self.pages.iter())
            .filter(|&&pi| self.incomplete[pi].load(Ordering::Relaxed))
            .count()
    }

    /// Objects and bytes the mutators' load barriers copied.
    pub(crate) fn copied_by_mutators(&self) -> (u64, u64) {
        self.by_mutators.get()
    }

    /// Objects and bytes the GC thread copied in Pause Relocate Start.
    pub(crate) fn copied_in_pause(&self) -> (u64, u64) {
        self.in_pause.get()
    }

    /// Objects and bytes copied for root tables' entries after Pause
    /// Relocate Start.
    pub(crate) fn copied_for_root_tables(&self) -> (u64, u64) {
        self.for_root_tables.get()
    }

    /// Whether `r` lies in a page of the set.
    #[inline]
    pub(crate) fn holds(&self, r: ObjectReference) -> bool {
        self.page_in_set(r.get()).is_some()
    }

    /// The page of the set `addr` lies in, as an index into the map: the
    /// barrier's test, one table load.
    #[inline]
    pub(crate) fn page_in_set(&self, addr: usize) -> Option<usize> {
        (*self.index.entry(addr)? as usize).checked_sub(1)
    }

    /// Where the object `r` of page `pi` of the set is now, if it was
    /// relocated (or forwarded to itself). `None` for an object that was
    /// not relocated yet, or that marking did not find (dead).
    #[inline]
    pub(crate) fn forwarded(&self, pi: usize, r: ObjectReference) -> Option<ObjectReference> {
        let word = self.word_of(pi, r)?;
        let to = self.forwarding.get(pi)?.lookup(word)?;
        ObjectReference::from_address(to)
    }

    /// The word of page `pi` (one of the set's, found by
    /// [`RelocationSet::page_in_set`]) where `r` points, if `r` is
    /// word-aligned and inside the page: any value reaches here (the
    /// barrier's callers pass what they read), and one that does not name
    /// a word of the page names no object of it.
    #[inline]
    fn word_of(&self, pi: usize, r: ObjectReference) -> Option<usize> {
        let p = &self.map.pages[pi];
        let off = r.get().checked_sub(p.start)?;
        (off % 8 == 0 && off < p.page.size()).then_some(off / 8)
    }

    /// Where the object `r` of page `pi` of the set is now, relocating it
    /// first if nobody has: it is copied into `alloc` (old, on its page's
    /// node) and the copy is published in the page's forwarding table; of
    /// two threads that copy the same object, the one whose entry is
    /// published first wins and the other takes its own copy back. When no
    /// memory is left the object is forwarded to itself: it stays, and so
    /// does its page. Any other value (an object marking did not find, an
    /// address between objects or past the page's top, misaligned) is
    /// returned as it is: nothing reachable holds one.
    pub(crate) fn forward(
        &self,
        pi: usize,
        r: ObjectReference,
        alloc: &GcAllocator,
        by: Relocator,
    ) -> Forwarded {
        let p = &self.map.pages[pi];
        let (Some(word), Some(f)) = (self.word_of(pi, r), self.forwarding.get(pi)) else {
            return Forwarded { to: r, copied: 0 };
        };
        if let Some(to) = f.lookup(word).and_then(ObjectReference::from_address) {
            return Forwarded { to, copied: 0 };
        }
        // Not an object marking found (a stale or made-up address, which
        // nothing reachable holds): nothing to relocate.
        let Some(last) = p.live.end_of(word) else {
            return Forwarded { to: r, copied: 0 };
        };
        let size = (last - word + 1) * 8;
        let from = Address::new(r.get());
        let copy = ObjectLayout::new(size)
            .ok()
            .and_then(|layout| alloc.alloc_object(layout, Age::OLD, p.page.node()).ok());
        let target = match copy {
            Some(to) => {
                // SAFETY: `from..from+size` is a marked object in the used
                // part of a page that stays allocated while this set lives
                // (marking checked its size against the page's top); nobody
                // writes it any more: mutators reach objects of the set only
                // through this function (the roots were forwarded in Pause
                // Relocate Start, and every load of a heap reference goes
                // through the load barrier), so they write copies only. `to`
                // is a fresh allocation of `size` bytes in a page allocated
                // after the map was made: no overlap, and nobody reads it
                // before it is published below.
                unsafe {
                    std::ptr::copy_nonoverlapping(from.as_ptr::<u8>(), to.as_ptr::<u8>(), size)
                };
                to
            }
            None => from,
        };
        // An object that could not be copied stays where it is, and its
        // page stays as old or young as it was: marking the units under it
        // old made a young page of the set old, and the slots of its other
        // survivors into it (stale references to the objects that were
        // copied) went unremembered, then unhealed when the set left the
        // load barrier.
        let old = self.old_pages.as_deref().filter(|_| target != from);
        let won = publish_copy(f, word, target, size, old);
        let to = ObjectReference::from_address(won).expect("a heap address is not null");
        if won != target {
            if target != from {
                // Another thread's copy won: this one was never seen.
                alloc.undo_alloc(target, target + size);
            }
            return Forwarded { to, copied: 0 };
        }
        if target == from {
            self.incomplete[pi].store(true, Ordering::Relaxed);
            return Forwarded { to, copied: 0 };
        }
        match by {
            Relocator::Mutator => self.by_mutators.add(size),
            Relocator::Pause => self.in_pause.add(size),
            Relocator::RootTable => self.for_root_tables.add(size),
            Relocator::Worker => {}
        }
        Forwarded { to, copied: size }
    }

    /// Relocates every live object of page `pi` of the set that nobody
    /// relocated yet: the objects and bytes this call copied.
    pub(crate) fn relocate_page(&self, pi: usize, alloc: &GcAllocator) -> (u64, u64) {
        let p = &self.map.pages[pi];
        let (mut objects, mut bytes) = (0u64, 0u64);
        // Marking recorded every object's end; the walk cannot find an
        // overlap the stop-the-world relocation would not have refused
        // (the concurrent cycle walks every page of the set here first).
        let _ = p.live.for_each_object(|s, _| {
            let r = ObjectReference::from_address(Address::new(self.map.address(pi, s)))
                .expect("a page address is not null");
            let done = self.forward(pi, r, alloc, Relocator::Worker);
            if done.copied > 0 {
                objects += 1;
                bytes += done.copied as u64;
            }
        });
        (objects, bytes)
    }

    /// Forwards `r` if it lies in the set (relocating its object if
    /// needed, in the pause); `r` otherwise.
    #[inline]
    pub(crate) fn forward_in_pause(
        &self,
        r: ObjectReference,
        alloc: &GcAllocator,
    ) -> ObjectReference {
        match self.page_in_set(r.get()) {
            Some(pi) => self.forward(pi, r, alloc, Relocator::Pause).to,
            None => r,
        }
    }
}
