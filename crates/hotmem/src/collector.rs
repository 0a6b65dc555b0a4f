//! The collector, monomorphized for one [`Binding`] and type-erased behind
//! [`Collect`]: one virtual call per collection, none per object.
//!
//! One collection, at a safepoint: retire the allocation pages; map the
//! heap's pages (a live map each); mark from the roots in parallel; free
//! empty pages; select the pages whose objects pack into fewer pages and
//! give each a forwarding table;
//! relocate them on workers bound to their node (and check every other live
//! page's live map for overlapping objects); update every slot that may
//! refer to a moved object (those marking remembered as referring into a
//! young page, when only young pages moved; else every slot of every live
//! object) and every root; free the evacuated pages.

use crate::GcError;
use crate::binding::{Binding, ObjectReference, Slot};
use crate::forwarding::Forwarding;
use crate::gc::{CollectStats, GcCause, UpdateScope, call_model, free_pages, promoted};
use crate::generations::CollectionKind;
use crate::heapmap::HeapMap;
use crate::mark::Marker;
use crate::reentry;
use crate::runtime::Inner;
use crate::select::{Candidate, select};
use crate::sidetable::SideTable;
use crate::workers::GcWorkers;
use hotmem_os::Address;
use hotmem_page::{NodeId, ObjectLayout, PageRef, PageType};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Whether the relocation phase walks the live map of every page, not only
/// of the pages it evacuates. The walk proves that no two marked objects
/// overlap (a reference into the middle of an object, a size the binding
/// got wrong) and fails the collection with a typed error before anything
/// moves. An evacuated page is always walked, since copying overlapping
/// objects would duplicate bytes; on a page that stays, an overlap moves
/// nothing, so release builds skip the walk there (it was about a seventh
/// of binary-trees' pause time) and debug builds keep it as a check of the
/// binding.
const CHECK_EVERY_LIVE_MAP: bool = cfg!(debug_assertions);

/// Whether a collection overwrites the dead objects of the young pages that
/// stay (promoted where they are) with [`ZAP`]. Nothing may read them: a
/// binding that did not report a slot, or an embedder that stored a
/// reference into an old object without the store barrier, then reads the
/// pattern instead of an object that looks intact until its page is reused.
/// Debug builds only (a write of every dead byte of those pages).
const ZAP_DEAD_YOUNG: bool = cfg!(debug_assertions);

/// The word dead objects are overwritten with.
const ZAP: u64 = 0xdead_beef_dead_beef;

/// One collection, whatever the binding.
pub(crate) trait Collect: Send + Sync {
    /// Runs one collection. The caller holds the GC lock and the safepoint.
    fn collect(
        &self,
        inner: &Inner,
        workers: &mut GcWorkers,
        cause: GcCause,
        kind: CollectionKind,
        cycle: u64,
        time_to_safepoint: Duration,
    ) -> Result<CollectStats, GcError>;
}

/// The collector for binding `B`.
pub(crate) struct Collector<B: Binding> {
    binding: Arc<B>,
}

impl<B: Binding> Collector<B> {
    pub(crate) fn new(binding: Arc<B>) -> Self {
        Collector { binding }
    }
}

impl<B: Binding> Collect for Collector<B> {
    fn collect(
        &self,
        inner: &Inner,
        workers: &mut GcWorkers,
        cause: GcCause,
        kind: CollectionKind,
        cycle: u64,
        time_to_safepoint: Duration,
    ) -> Result<CollectStats, GcError> {
        collect(
            &*self.binding,
            inner,
            workers,
            cause,
            kind,
            cycle,
            time_to_safepoint,
        )
    }
}

/// What relocating (or checking) one page gave.
struct Relocated {
    page: usize,
    moved: u64,
    bytes: u64,
    complete: bool,
    error: Option<GcError>,
}

/// The current address of `r`: its forwarding, or itself.
#[inline]
fn forwarded(
    map: &HeapMap,
    fwd: &[Option<Forwarding>],
    r: ObjectReference,
    inconsistent: &AtomicU64,
) -> Option<ObjectReference> {
    let (pi, wi) = map.locate(r).ok()?;
    let f = fwd[pi].as_ref()?;
    match f.lookup(wi) {
        Some(to) => ObjectReference::from_address(to),
        None => {
            if !map.pages[pi].live.is_marked(wi) {
                // Not an object marking found: the binding reported a slot
                // now that it did not report during marking (or a handle was
                // changed by a running thread). Keep the page.
                map.pages[pi].keep.store(true, Ordering::Relaxed);
                inconsistent.fetch_add(1, Ordering::Relaxed);
            }
            None
        }
    }
}

fn collect<B: Binding>(
    binding: &B,
    inner: &Inner,
    workers: &mut GcWorkers,
    cause: GcCause,
    kind: CollectionKind,
    cycle: u64,
    time_to_safepoint: Duration,
) -> Result<CollectStats, GcError> {
    let started = Instant::now();
    let mut kind = kind;
    // The slots the store barrier remembered since the last collection:
    // taken by every collection of a generational runtime (each one ends
    // with no young page left), used by a young one.
    let remembered_addresses = inner
        .generations
        .as_ref()
        .map(|g| g.take_remembered())
        .unwrap_or_default();
    let used_before = inner.heap.usage().used;
    // SAFETY: `retire_pages` needs nobody allocating in the allocator:
    // every mutator is stopped at the safepoint or in native code, where it
    // cannot allocate (`Mutator::alloc` needs `&mut self`, which a native
    // region borrows; its thread-local buffer is bumped only from `alloc`).
    let retired = unsafe { inner.mutator_alloc.retire_pages() };
    // The mutators' buffers lie in the pages just retired, which this
    // collection may evacuate and free: none may be bumped again. Their
    // unused ends go back to the pages, so that each page's top is the end
    // of its last object (where a reference past it is found to be bad).
    inner.tlabs.retire_all(&retired);
    drop(retired);
    let reserved = inner.heap.reserved();
    let map = HeapMap::new(
        &inner.memory,
        reserved.start().get(),
        reserved.len(),
        inner.heap.pages(),
        inner.generations.as_ref().map(|g| &g.old),
    );
    let barrier_slots = match kind {
        CollectionKind::Young => {
            let slots = rebuild_slots(binding, &map, &remembered_addresses)?;
            if slots.is_none() {
                // The binding cannot rebuild its slots: mark everything.
                kind = CollectionKind::Full;
            }
            slots.unwrap_or_default()
        }
        CollectionKind::Full => Vec::new(),
    };
    drop(remembered_addresses);
    let young_only = kind == CollectionKind::Young;
    if !young_only {
        // The pages the last collections copied survivors into stay
        // installed between collections, so that each collection goes on
        // filling them instead of starting a page of its own for a few
        // survivors. A young collection neither evacuates nor frees them
        // (they are old); a full one may, so they become ordinary pages
        // first.
        // SAFETY: the GC workers are idle between collections and phases,
        // and only they allocate with `gc_alloc`.
        unsafe { inner.gc_alloc.retire_pages() };
    }
    let page_count = map.pages.len();
    let worker_count = workers.count().max(1);
    let partitions = &inner.partitions;
    let node_of = |i: usize| partitions[i % partitions.len()];

    // Mark: roots on this thread, then the trace on the workers.
    let mark_start = Instant::now();
    let marker = Marker::new(binding, &map, worker_count, young_only);
    mark_roots(binding, inner, &marker, &map)?;
    for slot in &barrier_slots {
        if let Some(r) = slot.load() {
            marker.mark_root(r, Some(slot.address()))?;
        }
    }
    let items: Vec<(NodeId, usize)> = (0..worker_count).map(|i| (node_of(i), i)).collect();
    workers.run(items, |i| {
        let _inside = reentry::enter(inner);
        marker.work(i)
    })?;
    if let Some(e) = marker.take_error() {
        return Err(e);
    }
    let objects_marked = marker.marked();
    let mark_ns = mark_start.elapsed().as_nanos() as u64;

    // Select: free empty pages (room for the targets); among the small and
    // the medium pages without a pinned object, evacuate those whose
    // objects pack into fewer pages (see `select`), young and old apart.
    let limit = inner.config.fragmentation_limit;
    let mut empty: Vec<PageRef> = Vec::new();
    let mut live_bytes = 0u64;
    let mut work: Vec<(NodeId, usize)> = Vec::new();
    // Four groups: small and medium pages, young and old. Young pages are
    // selected apart from old ones, so that evacuating young pages never
    // drags in an old page (which would make the update visit every live
    // object instead of the remembered slots).
    let mut groups: [(usize, Vec<Candidate>); 4] = Default::default();
    for (pi, p) in map.pages.iter().enumerate() {
        if young_only && !p.young {
            // Not marked: its objects are taken as live, it stays.
            continue;
        }
        let bytes = p.live.live_bytes();
        live_bytes += bytes as u64;
        if p.live.live_objects() == 0 {
            empty.push(p.page.clone());
            continue;
        }
        if p.large {
            continue;
        }
        work.push((p.page.node(), pi));
        if !p.pinned.load(Ordering::Relaxed) {
            let group = &mut groups
                [usize::from(p.page.page_type() == PageType::Medium) * 2 + usize::from(p.young)];
            group.0 = group.0.max(p.page.size());
            group.1.push(Candidate {
                page: pi,
                live_bytes: bytes.min(p.page.size()),
            });
        }
    }
    let mut selected = vec![false; page_count];
    for (page_size, candidates) in groups {
        for pi in select(candidates, page_size, limit) {
            selected[pi] = true;
        }
    }
    if !CHECK_EVERY_LIVE_MAP {
        work.retain(|&(_, pi)| selected[pi]);
    }
    let fwd_words: usize = (0..page_count)
        .filter(|&pi| selected[pi])
        .map(|pi| Forwarding::words_for(map.pages[pi].live.live_objects()))
        .sum();
    // Outlives `fwd`, whose tables point into it (locals drop in reverse).
    let mut fwd_table = SideTable::new(&inner.memory, fwd_words);
    let fwd: Vec<Option<Forwarding>> = (0..page_count)
        .map(|pi| {
            selected[pi].then(|| Forwarding::new(&mut fwd_table, map.pages[pi].live.live_objects()))
        })
        .collect();
    // SAFETY: at the safepoint, after both object allocators were retired:
    // nobody allocates in these pages, and marking found no object on them,
    // so nothing reachable refers into them (every reference from a root or
    // a live object was checked to point at a marked object).
    let freed_empty = unsafe { free_pages(inner, &empty) };

    // Relocate the selected pages; check the live maps of the others.
    let relocation_start = Instant::now();
    let (results, relocation) = workers.run(work, |pi| {
        let _inside = reentry::enter(inner);
        relocate(inner, &map, &fwd, pi)
    })?;
    let relocation_ns = relocation_start.elapsed().as_nanos() as u64;
    let mut evacuated = vec![false; page_count];
    let (mut objects_relocated, mut bytes_relocated, mut incomplete) = (0u64, 0u64, 0usize);
    for r in &results {
        if let Some(e) = &r.error {
            // Nothing refers to the copies yet: the heap is as it was.
            return Err(e.clone());
        }
        objects_relocated += r.moved;
        bytes_relocated += r.bytes;
        if fwd[r.page].is_some() {
            if r.complete {
                evacuated[r.page] = true;
            } else {
                incomplete += 1;
            }
        }
    }

    // Update the slots that may refer to a moved object, then every root.
    // When every evacuated page was young, those slots are the ones marking
    // remembered plus the slots of the moved objects themselves; otherwise
    // every slot of every live object.
    let update_start = Instant::now();
    let inconsistent = AtomicU64::new(0);
    let remembered = marker.take_remembered();
    let moved = (0..page_count).any(|pi| fwd[pi].is_some());
    let only_young = (0..page_count).all(|pi| fwd[pi].is_none() || map.pages[pi].young);
    let update_scope = if !moved {
        UpdateScope::Nothing
    } else if only_young {
        UpdateScope::Remembered {
            slots: remembered.iter().map(|v| v.len() as u64).sum::<u64>()
                + barrier_slots.len() as u64,
        }
    } else {
        UpdateScope::AllLiveObjects
    };
    let update_items: Vec<(NodeId, UpdateItem<B::Slot>)> = if !moved {
        Vec::new()
    } else if only_young {
        let pages = (0..page_count)
            .filter(|&pi| fwd[pi].is_some())
            .map(|pi| (map.pages[pi].page.node(), UpdateItem::Page(pi)));
        let slots = remembered
            .into_iter()
            .chain(std::iter::once(barrier_slots))
            .filter(|v| !v.is_empty())
            .enumerate()
            .map(|(i, v)| (node_of(i), UpdateItem::Slots(v)));
        pages.chain(slots).collect()
    } else {
        drop(remembered);
        map.pages
            .iter()
            .enumerate()
            .filter(|(_, p)| p.live.live_objects() > 0)
            .map(|(pi, p)| (p.page.node(), UpdateItem::Page(pi)))
            .collect()
    };
    let (updated, _) = workers.run(update_items, |item| {
        let _inside = reentry::enter(inner);
        catch_unwind(AssertUnwindSafe(|| match item {
            UpdateItem::Page(pi) => update_page(binding, &map, &fwd, pi, &inconsistent),
            UpdateItem::Slots(slots) => update_slots(&map, &fwd, &slots, &inconsistent),
        }))
        .map_err(|p| GcError::ObjectModelPanicked(crate::gc::panic_message(&*p)))
    })?;
    let mut update_error = updated.into_iter().find_map(Result::err);
    if update_error.is_none() {
        if let Err(e) = update_roots(binding, inner, &map, &fwd, &inconsistent) {
            update_error = Some(e);
        }
    }
    let update_ns = update_start.elapsed().as_nanos() as u64;
    if let Some(e) = update_error {
        // Some slots may still point into the evacuated pages: keep them
        // all; the next collection frees them once nothing does.
        return Err(e);
    }
    if ZAP_DEAD_YOUNG {
        for (pi, p) in map.pages.iter().enumerate() {
            if p.young && !evacuated[pi] && p.live.live_objects() > 0 {
                zap_dead(&map, pi);
            }
        }
    }
    let to_free: Vec<PageRef> = map
        .pages
        .iter()
        .enumerate()
        .filter(|(pi, p)| evacuated[*pi] && !p.keep.load(Ordering::Relaxed))
        .map(|(_, p)| p.page.clone())
        .collect();
    // SAFETY: still at the safepoint; every live object of these pages was
    // copied and every slot of every live object and every root that
    // referred to one was updated to the copy (a reference found without a
    // forwarding entry kept its page out of this list); the workers are
    // done and these pages were retired before the relocation, so nobody
    // allocates in them or uses their memory.
    let freed_evacuated = unsafe { free_pages(inner, &to_free) };
    let bad = inconsistent.load(Ordering::Relaxed);
    if bad > 0 {
        return Err(GcError::InconsistentBinding { slots: bad });
    }

    Ok(CollectStats {
        cycle,
        cause,
        kind,
        live_objects: objects_marked,
        live_bytes,
        pages: page_count,
        pages_freed_empty: freed_empty,
        pages_evacuated: freed_evacuated,
        pages_evacuation_incomplete: incomplete,
        objects_relocated,
        bytes_relocated,
        used_before,
        used_after: inner.heap.usage().used,
        time_to_safepoint_ns: time_to_safepoint.as_nanos() as u64,
        pause_ns: started.elapsed().as_nanos() as u64,
        mark_ns,
        objects_marked,
        mark_workers: worker_count,
        relocation_ns,
        update_ns,
        update_scope,
        relocation,
    })
}

/// The binding's slots at the addresses the store barrier remembered, those
/// that lie in the used part of an old page (the others cannot hold an old
/// object's reference to a young one). `None` if the binding cannot
/// rebuild slots ([`Binding::slot_at`]).
fn rebuild_slots<B: Binding>(
    binding: &B,
    map: &HeapMap,
    addresses: &[usize],
) -> Result<Option<Vec<B::Slot>>, GcError> {
    // One unwind guard for the whole list, not one per slot.
    call_model(|| {
        let mut slots = Vec::with_capacity(addresses.len());
        for &a in addresses {
            let Some(pi) = map.page_of(a) else { continue };
            let p = &map.pages[pi];
            if p.young || a % 8 != 0 || a < p.start || a.saturating_add(8) > p.top {
                continue;
            }
            slots.push(binding.slot_at(Address::new(a))?);
        }
        Some(slots)
    })
}

/// Marks from every root: the binding's global and mutator roots, the
/// runtime's handles and pins.
fn mark_roots<B: Binding>(
    binding: &B,
    inner: &Inner,
    marker: &Marker<'_, B>,
    map: &HeapMap,
) -> Result<(), GcError> {
    let mut error = None;
    let mut visit = |slot: B::Slot| {
        if error.is_some() {
            return;
        }
        if let Some(r) = slot.load() {
            if let Err(e) = marker.mark_root(r, Some(slot.address())) {
                error = Some(e);
            }
        }
    };
    call_model(|| {
        binding.scan_global_roots(&mut visit);
        let mutators = inner.mutators.lock().clone();
        for m in mutators {
            binding.scan_mutator_roots(m, &mut visit);
        }
    })?;
    if let Some(e) = error {
        return Err(e);
    }
    for table in inner.roots.tables() {
        table.for_each(|r| {
            if error.is_none() {
                if let Err(e) = marker.mark_root(*r, None) {
                    error = Some(e);
                }
            }
        });
    }
    for r in inner.roots.pins.snapshot() {
        if error.is_none() {
            match marker.mark_root(r, None) {
                Ok(()) => {
                    if let Ok((pi, _)) = map.locate(r) {
                        map.pages[pi].pinned.store(true, Ordering::Relaxed);
                    }
                }
                Err(e) => error = Some(e),
            }
        }
    }
    error.map_or(Ok(()), Err)
}

/// Copies every live object of a selected page to a target page of the
/// same node and records it in the page's forwarding table; on any other
/// page (in debug builds: see [`CHECK_EVERY_LIVE_MAP`]), only walks the live
/// map, which finds overlapping objects.
fn relocate(inner: &Inner, map: &HeapMap, fwd: &[Option<Forwarding>], pi: usize) -> Relocated {
    let p = &map.pages[pi];
    let f = fwd[pi].as_ref();
    let age = promoted(p.page.age());
    let node = p.page.node();
    let mut out = Relocated {
        page: pi,
        moved: 0,
        bytes: 0,
        complete: true,
        error: None,
    };
    let walk = p.live.for_each_object(|s, e| {
        let Some(f) = f else { return };
        if !out.complete {
            return;
        }
        let size = (e - s + 1) * 8;
        let from = Address::new(map.address(pi, s));
        let Ok(layout) = ObjectLayout::new(size) else {
            out.complete = false;
            return;
        };
        let Ok(to) = inner.gc_alloc.alloc_object(layout, age, node) else {
            out.complete = false;
            return;
        };
        // SAFETY: `from..from+size` is a marked object inside the used part
        // of a page that stays allocated until this collection frees it
        // (marking checked `size` against the page's top, and the live map
        // walk found no overlap before it); `to` is a fresh allocation of
        // `size` bytes in a target page allocated after the heap map was
        // made, so the two do not overlap; mutators are stopped.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr::<u8>(), to.as_ptr::<u8>(), size) };
        match f.insert(s, to) {
            Some(_) => {
                out.moved += 1;
                out.bytes += size as u64;
            }
            None => out.complete = false,
        }
    });
    if let Err(o) = walk {
        out.error = Some(GcError::OverlappingObjects {
            first: ObjectReference::from_address(Address::new(map.address(pi, o.first)))
                .expect("a page address is not null"),
            first_size: (o.first_end - o.first + 1) * 8,
            second: ObjectReference::from_address(Address::new(map.address(pi, o.second)))
                .expect("a page address is not null"),
        });
    }
    out
}

/// Overwrites everything below page `pi`'s top that no marked object covers
/// with [`ZAP`] (nothing, if its live map has overlapping objects).
fn zap_dead(map: &HeapMap, pi: usize) {
    let p = &map.pages[pi];
    let mut dead = Vec::new();
    let mut next = p.start;
    let walk = p.live.for_each_object(|s, e| {
        let at = map.address(pi, s);
        if at > next {
            dead.push((next, at));
        }
        next = map.address(pi, e) + 8;
    });
    if walk.is_err() {
        return;
    }
    if p.top > next {
        dead.push((next, p.top));
    }
    for (from, to) in dead {
        let words = (to - from) / 8;
        // SAFETY: `from..to` lies below the page's top, in a page that stays
        // allocated, and holds no marked object: nothing reachable is there
        // (marking found every object reachable from the roots, and in a
        // young collection from the remembered slots). The mutators are
        // stopped and the workers done. Both ends are word-aligned (object
        // boundaries, the page start and the top).
        unsafe { std::slice::from_raw_parts_mut(from as *mut u64, words).fill(ZAP) };
    }
}

/// Updates every slot of every live object of page `pi` (at its new address
/// if it moved).
fn update_page<B: Binding>(
    binding: &B,
    map: &HeapMap,
    fwd: &[Option<Forwarding>],
    pi: usize,
    inconsistent: &AtomicU64,
) {
    let p = &map.pages[pi];
    let f = fwd[pi].as_ref();
    let mut visit = |slot: B::Slot| {
        if let Some(t) = slot.load() {
            if let Some(n) = forwarded(map, fwd, t, inconsistent) {
                slot.store(n);
            }
        }
    };
    // The relocation phase already walked this map without an overlap.
    let _ = p.live.for_each_object(|s, _| {
        let here = map.address(pi, s);
        let at = f.and_then(|f| f.lookup(s)).map_or(here, |to| to.get());
        if let Some(obj) = ObjectReference::from_address(Address::new(at)) {
            binding.scan_object(obj, &mut visit);
        }
    });
}

/// One piece of the update phase.
enum UpdateItem<S> {
    /// Every slot of every live object of a page (at its new address if
    /// it moved).
    Page(usize),
    /// Slots that marking remembered.
    Slots(Vec<S>),
}

/// Updates remembered slots, except those inside an evacuated page (their
/// objects moved, and the copies are updated whole).
fn update_slots<S: Slot>(
    map: &HeapMap,
    fwd: &[Option<Forwarding>],
    slots: &[S],
    inconsistent: &AtomicU64,
) {
    for slot in slots {
        let holder = map.page_of(slot.address().get());
        if holder.is_some_and(|pi| fwd[pi].is_some()) {
            continue;
        }
        if let Some(t) = slot.load() {
            if let Some(n) = forwarded(map, fwd, t, inconsistent) {
                slot.store(n);
            }
        }
    }
}

/// Updates every root.
fn update_roots<B: Binding>(
    binding: &B,
    inner: &Inner,
    map: &HeapMap,
    fwd: &[Option<Forwarding>],
    inconsistent: &AtomicU64,
) -> Result<(), GcError> {
    let mut visit = |slot: B::Slot| {
        if let Some(t) = slot.load() {
            if let Some(n) = forwarded(map, fwd, t, inconsistent) {
                slot.store(n);
            }
        }
    };
    call_model(|| {
        binding.scan_global_roots(&mut visit);
        let mutators = inner.mutators.lock().clone();
        for m in mutators {
            binding.scan_mutator_roots(m, &mut visit);
        }
    })?;
    for table in inner.roots.tables() {
        table.for_each(|r| {
            if let Some(n) = forwarded(map, fwd, *r, inconsistent) {
                *r = n;
            }
        });
    }
    Ok(())
}
