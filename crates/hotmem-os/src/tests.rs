//! Unit tests that need the crate's internals: a `munmap` that fails, by
//! fault injection in `sys`.

use crate::sync::{Arc, Mutex};
use crate::{MemRange, MemTag, Memory, MemoryEvent, MemoryObserver, page_size, procfs, sys};
use rustix::io::Errno;
use std::collections::BTreeMap;

/// What one page is, to the kernel or to an observer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Page {
    Reserved,
    Committed,
}

/// An observer that applies every event to a page map, the simplest tracker.
#[derive(Default)]
struct PageModel(Mutex<BTreeMap<usize, (Page, MemTag)>>);

impl MemoryObserver for PageModel {
    fn observe(&self, e: &MemoryEvent) {
        let page = page_size();
        let mut pages = self.0.lock();
        let r = e.range();
        for at in (r.start().get()..r.end().get()).step_by(page) {
            match *e {
                MemoryEvent::Reserve { tag, .. } => {
                    assert!(pages.insert(at, (Page::Reserved, tag)).is_none());
                }
                MemoryEvent::Commit { tag, .. } => {
                    let old = pages.insert(at, (Page::Committed, tag));
                    assert!(old.is_some(), "commit of an unreserved page");
                }
                MemoryEvent::Uncommit { tag, .. } => {
                    let old = pages.insert(at, (Page::Reserved, tag));
                    assert!(old.is_some(), "uncommit of an unreserved page");
                }
                MemoryEvent::Release { .. } => {
                    assert!(pages.remove(&at).is_some(), "release of an unreserved page");
                }
            }
        }
    }
}

impl PageModel {
    /// The observer's view of `range`, page by page.
    fn view(&self, range: MemRange) -> Vec<Option<Page>> {
        let pages = self.0.lock();
        (range.start().get()..range.end().get())
            .step_by(page_size())
            .map(|at| pages.get(&at).map(|p| p.0))
            .collect()
    }
}

/// The kernel's view of `range`, page by page: a committed page is mapped
/// accessible, a reserved one `PROT_NONE`.
fn kernel_view(range: MemRange) -> Vec<Option<Page>> {
    let pieces = procfs::mappings_within(range).unwrap();
    (range.start().get()..range.end().get())
        .step_by(page_size())
        .map(|at| {
            let p = pieces
                .iter()
                .find(|p| p.range.start().get() <= at && at < p.range.end().get())?;
            Some(if p.is_accessible() {
                Page::Committed
            } else {
                Page::Reserved
            })
        })
        .collect()
}

#[test]
#[cfg_attr(
    miri,
    ignore = "mmap, munmap and /proc are system calls Miri cannot run"
)]
fn a_failed_release_is_undone_for_the_observer() {
    let page = page_size();
    let model = Arc::new(PageModel::default());
    let memory = Memory::with_observer(model.clone());
    let phys = memory.physical(page).unwrap();
    for explicit in [true, false] {
        let r = memory.reserve(16 * page, MemTag::CODE).unwrap();
        let range = r.range();
        r.commit(r.subrange(2 * page, 3 * page).unwrap()).unwrap();
        r.map(r.start() + 8 * page, &phys, 0, page).unwrap();
        let before = kernel_view(range);
        assert_eq!(model.view(range), before);

        sys::fail_next_release::set(Errno::NOMEM);
        if explicit {
            let err = r.release().unwrap_err();
            assert_eq!(err.op(), crate::OsOp::Release);
            assert_eq!(err.raw_os_error(), Errno::NOMEM.raw_os_error());
        } else {
            drop(r);
        }
        // The kernel kept everything, and the observer says so again.
        assert_eq!(
            kernel_view(range),
            before,
            "injected failure unmapped nothing"
        );
        assert_eq!(
            model.view(range),
            before,
            "observer restored (explicit {explicit})"
        );
        assert!(
            model
                .0
                .lock()
                .range(range.start().get()..range.end().get())
                .all(|(_, p)| p.1 == MemTag::CODE),
            "with the reservation's tag"
        );
        // SAFETY: the failed release leaked the range to nobody: this test
        // reserved it and no value refers to it any more.
        unsafe { sys::release(range) }.unwrap();
        // Tell the model, so the next round starts clean.
        model.observe(&MemoryEvent::Release {
            range,
            tag: MemTag::CODE,
        });
    }
    // A release that succeeds is reported once and leaves nothing.
    let r = memory.reserve(4 * page, MemTag::CODE).unwrap();
    let range = r.range();
    r.release().unwrap();
    assert_eq!(model.view(range), vec![None; 4]);
}

/// An event log.
#[derive(Default)]
struct Log(Mutex<Vec<MemoryEvent>>);

impl MemoryObserver for Log {
    fn observe(&self, e: &MemoryEvent) {
        self.0.lock().push(*e);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "mmap, munmap and /proc are system calls Miri cannot run"
)]
fn a_refused_padding_trim_is_reported_as_reserved() {
    let page = page_size();
    let log = Arc::new(Log::default());
    let memory = Memory::with_observer(log.clone());
    let align = 2 << 20;
    // The first trim (the head if the kernel's address was not aligned,
    // else the tail) fails; the other one goes through.
    sys::fail_next_release::set(Errno::NOMEM);
    let r = memory.reserve_aligned(4 * page, align, MemTag::GC).unwrap();
    assert!(r.start().is_aligned(align));
    let events = log.0.lock().clone();
    let [
        MemoryEvent::Reserve {
            range: leftover,
            tag: MemTag::GC,
        },
        MemoryEvent::Reserve {
            range,
            tag: MemTag::GC,
        },
    ] = events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!(range, r.range());
    // The leftover is padding, next to the reservation, and the kernel
    // still maps all of it (inaccessible): the observer saw what is there.
    assert!(leftover.end() == range.start() || leftover.start() == range.end());
    assert!(leftover.len() < align && !leftover.overlaps(range));
    assert_eq!(
        kernel_view(leftover),
        vec![Some(Page::Reserved); leftover.len() / page]
    );
    drop(r);
    // SAFETY: the leftover padding belongs to no value; this test unmaps it.
    unsafe { sys::release(leftover) }.unwrap();
}

/// An observer that operates on a reservation from its notification.
#[derive(Default)]
struct Meddler {
    target: Mutex<Option<Arc<crate::Reservation>>>,
    results: Mutex<Vec<String>>,
}

impl MemoryObserver for Meddler {
    fn observe(&self, e: &MemoryEvent) {
        let MemoryEvent::Commit { .. } = *e else {
            return;
        };
        let Some(target) = self.target.lock().clone() else {
            return;
        };
        let page = page_size();
        let phys = target.memory().physical(page).unwrap();
        let results = [
            format!(
                "{:?}",
                target.uncommit(target.subrange(page, page).unwrap())
            ),
            format!("{:?}", target.commit(target.subrange(0, page).unwrap())),
            format!("{:?}", target.map(target.start(), &phys, 0, page)),
            // Reserving and releasing take no operation lock: allowed.
            format!("{:?}", target.memory().reserve(page, MemTag::GC).map(drop)),
        ];
        self.results.lock().extend(results);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "mmap, munmap and /proc are system calls Miri cannot run"
)]
fn an_observer_operating_on_reservations_gets_an_error_not_a_deadlock() {
    let page = page_size();
    let meddler = Arc::new(Meddler::default());
    let memory = Memory::with_observer(meddler.clone());
    let r = Arc::new(memory.reserve(4 * page, MemTag::GC).unwrap());
    let other = Arc::new(memory.reserve(4 * page, MemTag::GC).unwrap());
    for target in [&r, &other] {
        *meddler.target.lock() = Some(target.clone());
        let part = r.subrange(page, page).unwrap();
        r.commit(part).unwrap();
        assert_eq!(
            *meddler.results.lock(),
            [
                "Err(Reentrant)",
                "Err(Reentrant)",
                "Err(Reentrant)",
                "Ok(())"
            ]
        );
        meddler.results.lock().clear();
        // Nothing the observer tried happened; the commit did.
        assert_eq!(
            kernel_view(r.range()),
            [
                Some(Page::Reserved),
                Some(Page::Committed),
                Some(Page::Reserved),
                Some(Page::Reserved)
            ]
        );
        assert_eq!(kernel_view(other.range()), vec![Some(Page::Reserved); 4]);
        r.uncommit(part).unwrap();
    }
    // Outside a notification, the same calls work.
    *meddler.target.lock() = None;
    r.commit(r.subrange(0, page).unwrap()).unwrap();
    other.commit(other.subrange(0, page).unwrap()).unwrap();
}
