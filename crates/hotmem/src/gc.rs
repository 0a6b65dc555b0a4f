//! One collection: mark (the embedder's), select sparse pages, evacuate
//! them on the GC workers, update references, free the evacuated pages.

use crate::GcError;
use crate::model::{Forwarding, ObjectModel};
use crate::runtime::Inner;
use crate::workers::PhaseSummary;
use hotmem_os::Address;
use hotmem_page::{Age, ObjectLayout, PageRef, PageType};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Why a collection ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum GcCause {
    /// Asked for by [`Runtime::collect`](crate::Runtime::collect) or
    /// [`Mutator::collect`](crate::Mutator::collect).
    Explicit,
    /// An allocation found the heap full.
    AllocationFailure,
}

/// What one collection did.
#[derive(Clone, Debug, Serialize)]
pub struct CollectStats {
    /// The collection's number, from 1.
    pub cycle: u64,
    /// Why it ran.
    pub cause: GcCause,
    /// Live objects the model reported.
    pub live_objects: u64,
    /// Their bytes.
    pub live_bytes: u64,
    /// Heap pages examined.
    pub pages: usize,
    /// Pages with no live object, freed without copying.
    pub pages_freed_empty: usize,
    /// Pages evacuated (live objects copied away, page freed).
    pub pages_evacuated: usize,
    /// Pages selected whose evacuation could not finish because no target
    /// memory was left; they stay, their moved objects are forwarded.
    pub pages_evacuation_incomplete: usize,
    /// Objects copied.
    pub objects_relocated: u64,
    /// Bytes copied.
    pub bytes_relocated: u64,
    /// Heap bytes in use before the collection.
    pub used_before: usize,
    /// Heap bytes in use after.
    pub used_after: usize,
    /// Time from asking for the safepoint until all mutators were stopped.
    pub time_to_safepoint_ns: u64,
    /// Time the mutators were stopped for the collection's work.
    pub pause_ns: u64,
    /// Time spent marking (roots and the parallel trace).
    pub mark_ns: u64,
    /// Objects marked (reachable objects found by the trace).
    pub objects_marked: u64,
    /// GC workers that marked.
    pub mark_workers: usize,
    /// Time spent relocating on the workers.
    pub relocation_ns: u64,
    /// Time spent updating references (every slot of every live object,
    /// every root).
    pub update_ns: u64,
    /// The relocation phase on the workers.
    pub relocation: PhaseSummary,
}

impl CollectStats {
    /// Marking throughput: objects marked per millisecond per marking worker
    /// (0 when nothing was marked).
    pub fn marking_rate(&self) -> f64 {
        if self.mark_ns == 0 || self.mark_workers == 0 {
            return 0.0;
        }
        self.objects_marked as f64 / (self.mark_ns as f64 / 1e6) / self.mark_workers as f64
    }
}

/// Totals over every collection of a runtime.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcTotals {
    /// Collections run.
    pub cycles: u64,
    /// Of which caused by allocation failure.
    pub allocation_failures: u64,
    /// Objects copied.
    pub objects_relocated: u64,
    /// Bytes copied.
    pub bytes_relocated: u64,
    /// Pages freed, empty or evacuated.
    pub pages_freed: u64,
    /// Sum of pauses.
    pub pause_ns: u64,
    /// Longest pause.
    pub max_pause_ns: u64,
    /// Sum of marking times.
    pub mark_ns: u64,
    /// Sum of relocation times.
    pub relocation_ns: u64,
    /// Sum of update times.
    pub update_ns: u64,
    /// Objects marked.
    pub objects_marked: u64,
}

impl GcTotals {
    pub(crate) fn add(&mut self, s: &CollectStats) {
        self.cycles += 1;
        if s.cause == GcCause::AllocationFailure {
            self.allocation_failures += 1;
        }
        self.objects_relocated += s.objects_relocated;
        self.bytes_relocated += s.bytes_relocated;
        self.pages_freed += (s.pages_freed_empty + s.pages_evacuated) as u64;
        self.pause_ns += s.pause_ns;
        self.max_pause_ns = self.max_pause_ns.max(s.pause_ns);
        self.mark_ns += s.mark_ns;
        self.relocation_ns += s.relocation_ns;
        self.update_ns += s.update_ns;
        self.objects_marked += s.objects_marked;
    }
}

/// A page with the live objects the model reported on it.
struct PageLive {
    page: PageRef,
    objects: Vec<(Address, usize)>,
    bytes: usize,
}

/// What relocating one page gave.
struct Evacuated {
    page: PageRef,
    moved: Vec<(Address, Address)>,
    bytes: usize,
    complete: bool,
}

/// Groups the model's live objects by page. Every object must lie inside
/// the used part of a page; otherwise nothing has been changed yet and the
/// collection stops with an error.
fn live_by_page(
    pages: Vec<PageRef>,
    model: &dyn ObjectModel,
) -> Result<(Vec<PageLive>, u64), GcError> {
    let mut by_page: Vec<PageLive> = pages
        .into_iter()
        .map(|page| PageLive {
            page,
            objects: Vec::new(),
            bytes: 0,
        })
        .collect();
    by_page.sort_unstable_by_key(|p| p.page.range().start());
    let mut invalid = None;
    let mut count = 0u64;
    call_model(|| {
        model.mark(&mut |addr| {
            if invalid.is_some() {
                return;
            }
            let size = model.object_size(addr);
            let i = by_page.partition_point(|p| p.page.range().start() <= addr);
            let inside = i > 0 && {
                let p = &by_page[i - 1].page;
                size > 0
                    && addr
                        .get()
                        .checked_add(size)
                        .is_some_and(|end| end <= p.top().get())
            };
            if inside {
                let p = &mut by_page[i - 1];
                p.objects.push((addr, size));
                p.bytes += size;
                count += 1;
            } else {
                invalid = Some(GcError::InvalidObject { addr, size });
            }
        })
    })?;
    match invalid {
        Some(e) => Err(e),
        None => Ok((by_page, count)),
    }
}

/// Runs an object model callback; its panic becomes
/// [`GcError::ObjectModelPanicked`] instead of unwinding through the pause.
fn call_model<R>(f: impl FnOnce() -> R) -> Result<R, GcError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|payload| GcError::ObjectModelPanicked(panic_message(&*payload)))
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Frees pages the collection found unused; returns how many were freed.
/// The heap refuses only what it does not own (a bug): those stay
/// allocated, the heap consistent, and the pause goes on.
///
/// # Safety
/// As [`PageAllocator::free_pages`](hotmem_page::PageAllocator::free_pages):
/// nobody allocates in `pages` any more and nobody uses their memory.
unsafe fn free_pages(inner: &Inner, pages: &[PageRef]) -> usize {
    // SAFETY: the caller's promise, passed on.
    match unsafe { inner.heap.free_pages(pages) } {
        Ok(()) => pages.len(),
        Err(_) => 0,
    }
}

/// The age an evacuated object gets: one older, up to old.
fn promoted(age: Age) -> Age {
    Age::from_index(age.index() + 1).unwrap_or(Age::OLD)
}

/// Copies every live object of one page to target pages of the page's node.
fn evacuate(inner: &Inner, item: PageLive) -> Evacuated {
    let age = promoted(item.page.age());
    let node = item.page.node();
    let mut moved = Vec::with_capacity(item.objects.len());
    let mut bytes = 0;
    let mut complete = true;
    for &(from, size) in &item.objects {
        // The size fitted its page, so it is a valid layout; should it not
        // be, the object stays where it is (the page is kept).
        let Ok(layout) = ObjectLayout::new(size) else {
            complete = false;
            break;
        };
        let Ok(to) = inner.gc_alloc.alloc_object(layout, age, node) else {
            complete = false;
            break;
        };
        // SAFETY: `from..from+size` lies inside the used part of a page that
        // stays allocated until this collection frees it (`live_by_page`
        // checked it); `to` is a fresh allocation of `size` bytes in another
        // page, so the two do not overlap; mutators are stopped.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr::<u8>(), to.as_ptr::<u8>(), size) };
        moved.push((from, to));
        bytes += size;
    }
    Evacuated {
        page: item.page,
        moved,
        bytes,
        complete,
    }
}

/// Runs one collection. The caller holds the GC lock and the safepoint.
pub(crate) fn collect(
    inner: &Inner,
    workers: &mut crate::workers::GcWorkers,
    cause: GcCause,
    cycle: u64,
    time_to_safepoint: Duration,
) -> Result<CollectStats, GcError> {
    let started = Instant::now();
    let model = inner
        .config
        .object_model
        .as_deref()
        .ok_or(GcError::NoObjectModel)?;
    let used_before = inner.heap.usage().used;
    // The pages allocation went on in become ordinary pages; targets of the
    // last collection too.
    // SAFETY: every mutator is stopped at the safepoint or in native code,
    // where it cannot allocate (`Mutator::alloc` needs `&mut self`, which a
    // native region borrows), and the GC workers are idle between phases.
    unsafe {
        inner.mutator_alloc.retire_pages();
        inner.gc_alloc.retire_pages();
    }
    let pages = inner.heap.pages();
    let page_count = pages.len();
    let (by_page, live_objects) = live_by_page(pages, model)?;
    let live_bytes: u64 = by_page.iter().map(|p| p.bytes as u64).sum();

    // Select: empty pages are freed at once (that makes room for the
    // targets); small and medium pages with enough garbage are evacuated.
    let limit = inner.config.fragmentation_limit;
    let mut empty = Vec::new();
    let mut selected = Vec::new();
    for p in by_page {
        if p.objects.is_empty() {
            empty.push(p.page);
        } else if p.page.page_type() != PageType::Large
            && (p.page.size() - p.bytes) as f64 >= limit * p.page.size() as f64
        {
            selected.push(p);
        }
    }
    // A refusal changes nothing: the pages stay allocated, and the
    // collection goes on (the next one finds them empty again).
    // SAFETY: at the safepoint, after both object allocators were retired:
    // nobody allocates in these pages, and they hold no live object, so
    // nobody uses their memory any more (the retired handles were dropped).
    let freed_empty = unsafe { free_pages(inner, &empty) };

    let relocation_start = Instant::now();
    let items: Vec<(hotmem_page::NodeId, PageLive)> =
        selected.into_iter().map(|p| (p.page.node(), p)).collect();
    let (results, relocation) = workers.run(items, |item| evacuate(inner, item))?;
    let relocation_ns = relocation_start.elapsed().as_nanos() as u64;

    let mut all_moved = Vec::new();
    let mut evacuated = Vec::new();
    let mut incomplete = 0;
    let mut bytes_relocated = 0u64;
    for r in results {
        bytes_relocated += r.bytes as u64;
        all_moved.extend_from_slice(&r.moved);
        if r.complete {
            evacuated.push(r.page);
        } else {
            incomplete += 1;
        }
    }
    let objects_relocated = all_moved.len() as u64;
    let forwarding = Forwarding::from_unsorted(all_moved);
    // SAFETY: the workers are done; mutators are still stopped.
    unsafe { inner.gc_alloc.retire_pages() };
    // If the model panics here, some references may still point into the
    // evacuated pages: they are kept, and the next collection frees them
    // once nothing does.
    call_model(|| model.update_references(&forwarding))?;
    // SAFETY: still at the safepoint; every live object of these pages was
    // copied and every reference updated to the copies, the workers are done,
    // and these pages were retired before the relocation (targets are
    // allocated in new pages): nobody allocates in them or uses their memory.
    let freed_evacuated = unsafe { free_pages(inner, &evacuated) };

    Ok(CollectStats {
        cycle,
        cause,
        live_objects,
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
        mark_ns: 0,
        objects_marked: live_objects,
        mark_workers: 0,
        relocation_ns,
        update_ns: 0,
        relocation,
    })
}
