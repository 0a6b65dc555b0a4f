//! The relocation phase: the live objects of each page in the relocation
//! set are copied to a target page of the same NUMA node, on a GC worker
//! bound to that node, and recorded in the page's forwarding table.

use super::cycle::Cycle;
use super::in_collection;
use super::meta::{Forwarding, Overlap};
use super::workers::GcWorkers;
use crate::GcError;
use crate::vm::{Binding, ObjectReference};
use hotmem_os::Address;
use hotmem_page::{Age, ObjectLayout};
use std::time::Instant;

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

/// The age an evacuated object gets: old. Survivor ages would decide
/// nothing (a young collection promotes whatever it keeps); they would
/// only spread the survivors over a target page per age (a small heap
/// filled up with half-empty pages of fifteen ages). What survives once is
/// old, and pages split into young (eden: allocated since the last
/// collection) and old.
fn promoted(_age: Age) -> Age {
    Age::OLD
}

/// What relocating (or checking) one page gave.
struct Relocated {
    page: usize,
    moved: u64,
    bytes: u64,
    complete: bool,
    error: Option<GcError>,
}

impl<B: Binding> Cycle<'_, B> {
    /// Relocates the selected pages on the workers (and checks the live
    /// maps of the others, see [`CHECK_EVERY_LIVE_MAP`]). A page whose
    /// targets ran out stays, its moved objects forwarded.
    pub(super) fn relocate(&mut self, workers: &mut GcWorkers) -> Result<(), GcError> {
        let start = Instant::now();
        let mut work = std::mem::take(&mut self.relocation_work);
        if !CHECK_EVERY_LIVE_MAP {
            work.retain(|&(_, pi)| self.forwarding.get(pi).is_some());
        }
        let this = &*self;
        let (results, summary) = workers.run(work, |pi| {
            let _inside = in_collection::enter(this.heap);
            this.relocate_page(pi)
        })?;
        self.stats.relocation_ns = start.elapsed().as_nanos() as u64;
        self.stats.relocation = summary;
        for r in &results {
            if let Some(e) = &r.error {
                // Nothing refers to the copies yet: the heap is as it was.
                return Err(e.clone());
            }
            self.stats.objects_relocated += r.moved;
            self.stats.bytes_relocated += r.bytes;
            if self.forwarding.get(r.page).is_some() {
                if r.complete {
                    self.evacuated[r.page] = true;
                } else {
                    self.stats.pages_evacuation_incomplete += 1;
                }
            }
        }
        Ok(())
    }

    /// Copies every live object of page `pi`, if selected, to a target page
    /// of the same node and records it in the page's forwarding table; on
    /// any page, walks the live map, which finds overlapping objects.
    fn relocate_page(&self, pi: usize) -> Relocated {
        let p = &self.map.pages[pi];
        let mut out = Relocated {
            page: pi,
            moved: 0,
            bytes: 0,
            complete: true,
            error: None,
        };
        let forwarding = self.forwarding.get(pi);
        let walk = p.live.for_each_object(|s, e| {
            let Some(f) = forwarding else { return };
            if out.complete {
                match self.copy_object(f, pi, s, e) {
                    Some(size) => {
                        out.moved += 1;
                        out.bytes += size as u64;
                    }
                    None => out.complete = false,
                }
            }
        });
        if let Err(o) = walk {
            out.error = Some(self.overlap_error(pi, o));
        }
        out
    }

    /// The error for two marked objects of page `pi` that overlap.
    fn overlap_error(&self, pi: usize, o: Overlap) -> GcError {
        let at = |word| {
            ObjectReference::from_address(Address::new(self.map.address(pi, word)))
                .expect("a page address is not null")
        };
        GcError::OverlappingObjects {
            first: at(o.first),
            first_size: (o.first_end - o.first + 1) * 8,
            second: at(o.second),
        }
    }

    /// Walks the live map of every selected page: an overlap of two marked
    /// objects fails the collection before anything moves (copying them
    /// would duplicate bytes). The concurrent cycle's check; the
    /// stop-the-world relocation walks each page as it copies it.
    pub(super) fn check_relocation_set(&self) -> Result<(), GcError> {
        for pi in self.forwarding.pages() {
            if let Err(o) = self.map.pages[pi].live.for_each_object(|_, _| {}) {
                return Err(self.overlap_error(pi, o));
            }
        }
        Ok(())
    }

    /// Copies the object at words `s..=e` of page `pi` to a new place on
    /// the page's node and records it in `f`; its size, or `None` when no
    /// target memory (or forwarding entry) was left.
    fn copy_object(&self, f: &Forwarding, pi: usize, s: usize, e: usize) -> Option<usize> {
        let p = &self.map.pages[pi];
        let size = (e - s + 1) * 8;
        let from = Address::new(self.map.address(pi, s));
        let layout = ObjectLayout::new(size).ok()?;
        let age = promoted(p.page.age());
        let to = self
            .heap
            .gc_alloc
            .alloc_object(layout, age, p.page.node())
            .ok()?;
        // SAFETY: `from..from+size` is a marked object inside the used part
        // of a page that stays allocated until this collection frees it
        // (marking checked `size` against the page's top, and the live map
        // walk found no overlap before it); `to` is a fresh allocation of
        // `size` bytes in a target page allocated after the heap map was
        // made, so the two do not overlap; mutators are stopped.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr::<u8>(), to.as_ptr::<u8>(), size) };
        f.insert(s, to).map(|_| size)
    }
}
