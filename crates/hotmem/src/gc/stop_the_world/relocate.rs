//! The stop-the-world relocation phase: the live objects of each page in
//! the relocation set are copied, in the pause, to a target page of the
//! same NUMA node, on a GC worker bound to that node, and recorded in the
//! page's forwarding table. (Relocation while the mutators run is the
//! concurrent collector's, through the core's
//! [`RelocationSet`](crate::gc::core::relocation_set::RelocationSet).)

use super::stw_cycle::{ON_THIS_THREAD, ON_THIS_THREAD_BYTES, StwCycle};
use crate::GcError;
use crate::gc::core::in_collection;
use crate::gc::core::meta::Forwarding;
use crate::gc::core::phases::GcPhase;
use crate::gc::core::workers::GcWorkers;
use crate::vm::Binding;
use hotmem_os::Address;
use hotmem_page::{Age, ObjectLayout};

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

impl<B: Binding> StwCycle<'_, B> {
    /// Relocates the selected pages on the workers (and checks the live
    /// maps of the others, see [`CHECK_EVERY_LIVE_MAP`]). A page whose
    /// targets ran out stays, its moved objects forwarded.
    pub(super) fn relocate(&mut self, workers: &mut GcWorkers) -> Result<(), GcError> {
        let running = self.times.start(GcPhase::Relocate);
        let mut work = std::mem::take(&mut self.c.relocation_work);
        if !CHECK_EVERY_LIVE_MAP {
            work.retain(|&(_, pi)| self.c.forwarding.get(pi).is_some());
        }
        let this = &*self;
        let relocate = |pi| {
            let _inside = in_collection::enter(this.c.heap);
            this.relocate_page(pi)
        };
        let (objects, bytes) = (work.iter())
            .filter(|&&(_, pi)| this.c.forwarding.get(pi).is_some())
            .map(|&(_, pi)| &this.c.map.pages[pi].live)
            .fold((0u64, 0usize), |(o, b), live| {
                (o + live.live_objects() as u64, b + live.live_bytes())
            });
        // Few objects and bytes: copied here, without waking the workers.
        let few = objects <= ON_THIS_THREAD && bytes <= ON_THIS_THREAD_BYTES;
        let (results, summary) = match few {
            true => workers.run_few(work, relocate)?,
            false => workers.run(work, relocate)?,
        };
        self.times.stop(running);
        let stats = &mut self.c.stats;
        stats.relocation = summary;
        for r in &results {
            if let Some(e) = &r.error {
                // Nothing refers to the copies yet: the heap is as it was.
                return Err(e.clone());
            }
            stats.objects_relocated += r.moved;
            stats.bytes_relocated += r.bytes;
            if self.c.forwarding.get(r.page).is_some() {
                if r.complete {
                    self.evacuated[r.page] = true;
                } else {
                    stats.pages_evacuation_incomplete += 1;
                }
            }
        }
        Ok(())
    }

    /// Copies every live object of page `pi`, if selected, to a target page
    /// of the same node and records it in the page's forwarding table; on
    /// any page, walks the live map, which finds overlapping objects.
    fn relocate_page(&self, pi: usize) -> Relocated {
        let p = &self.c.map.pages[pi];
        let mut out = Relocated {
            page: pi,
            moved: 0,
            bytes: 0,
            complete: true,
            error: None,
        };
        let forwarding = self.c.forwarding.get(pi);
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
            out.error = Some(self.c.overlap_error(pi, o));
        }
        out
    }

    /// Copies the object at words `s..=e` of page `pi` to a new place on
    /// the page's node and records it in `f`; its size, or `None` when no
    /// target memory (or forwarding entry) was left.
    fn copy_object(&self, f: &Forwarding, pi: usize, s: usize, e: usize) -> Option<usize> {
        let p = &self.c.map.pages[pi];
        let size = (e - s + 1) * 8;
        let from = Address::new(self.c.map.address(pi, s));
        let layout = ObjectLayout::new(size).ok()?;
        let age = promoted(p.page.age());
        let to = self
            .c
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
