//! Loom models of the shared medium page race, run over the real
//! `SharedPage` / `ObjectAllocator` code with a page source that hands out
//! tiny pages at made-up addresses (no memory behind them: the models only
//! compare addresses).
//!
//! Run: `RUSTFLAGS="--cfg hotmem_loom" LOOM_MAX_PREEMPTIONS=2 cargo test
//! --release -p hotmem-page --lib -- loom`

use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::{
    Age, AllocPageError, FreeError, MediumPageMode, NodeId, ObjectAllocator, ObjectLayout,
    OwnedPage, Page, PageRef, PageRequest, PageSizes, PageSource, PageState, RejectedPage,
};
use hotmem_os::{Address, MemRange};
use loom::thread;

/// Medium pages of 256 bytes; objects of 128 bytes are medium (two per page).
const MEDIUM: usize = 256;
const OBJECT: usize = 128;
const BASE: usize = 0x1000_0000;

struct ModelPages {
    sizes: PageSizes,
    nodes: [NodeId; 1],
    next: AtomicUsize,
    allocated: AtomicUsize,
    undone: AtomicUsize,
    installed: AtomicUsize,
}

impl ModelPages {
    fn new() -> ModelPages {
        ModelPages {
            sizes: PageSizes::custom(64, 64, MEDIUM, 8, OBJECT).expect("model sizes"),
            nodes: [NodeId::ZERO],
            next: AtomicUsize::new(0),
            allocated: AtomicUsize::new(0),
            undone: AtomicUsize::new(0),
            installed: AtomicUsize::new(0),
        }
    }
}

impl PageSource for ModelPages {
    fn page_sizes(&self) -> PageSizes {
        self.sizes
    }

    fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    fn alloc_page(&self, request: PageRequest) -> Result<OwnedPage, AllocPageError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.allocated.fetch_add(1, Ordering::Relaxed);
        let range =
            MemRange::new(Address::new(BASE + n * request.size), request.size).expect("range");
        Ok(OwnedPage::new(PageRef::new(Page::new(
            request.page_type,
            request.age,
            request.node,
            range,
            0,
            n as u64,
        ))))
    }

    fn undo_alloc_page(&self, page: OwnedPage) -> Result<(), RejectedPage> {
        if page
            .transition(PageState::Allocated, PageState::Freed)
            .is_err()
        {
            return Err(RejectedPage::new(FreeError::InUse, page));
        }
        self.undone.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn page_installed(&self, _page: &Page) {
        self.installed.fetch_add(1, Ordering::Relaxed);
    }
}

struct Outcome {
    objects: Vec<Address>,
    installed: Vec<PageRef>,
    allocated: usize,
    undone: usize,
    installed_count: usize,
}

/// `threads` threads allocate `per_thread` medium objects each.
fn run(mode: MediumPageMode, threads: usize, per_thread: usize) -> Outcome {
    let alloc = Arc::new(ObjectAllocator::new(ModelPages::new(), mode));
    let layout = ObjectLayout::new(OBJECT).expect("layout");
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let alloc = alloc.clone();
            thread::spawn(move || {
                (0..per_thread)
                    .map(|_| {
                        alloc
                            .alloc_object(layout, Age::EDEN, NodeId::ZERO)
                            .expect("every allocation succeeds")
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut objects: Vec<Address> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    objects.sort();
    let src = alloc.source();
    let installed = alloc.installed_pages();
    assert!(installed.iter().all(|p| p.state() == PageState::Installed));
    Outcome {
        objects,
        installed,
        allocated: src.allocated.load(Ordering::Relaxed),
        undone: src.undone.load(Ordering::Relaxed),
        installed_count: src.installed.load(Ordering::Relaxed),
    }
}

/// Objects are disjoint and each lies inside an installed page.
fn check_placement(o: &Outcome) {
    for w in o.objects.windows(2) {
        assert!(
            w[0].get() + OBJECT <= w[1].get(),
            "objects overlap: {:?}",
            o.objects
        );
    }
    for &obj in &o.objects {
        let end = Address::new(obj.get() + OBJECT);
        assert!(
            o.installed.iter().any(|p| p.range().contains(obj)
                && end <= p.range().end()
                && p.contains_object(obj)),
            "object {obj:?} is not inside an installed page"
        );
    }
}

fn check_synchronized(threads: usize, per_thread: usize) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = executions.clone();
    builder.check(move || {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let o = run(MediumPageMode::Synchronized, threads, per_thread);
        assert_eq!(o.objects.len(), threads * per_thread);
        check_placement(&o);
        assert_eq!(o.undone, 0, "a synchronized installation undid a page");
        assert_eq!(
            o.allocated, o.installed_count,
            "pages allocated != installed"
        );
        assert_eq!(o.installed.len(), o.installed_count);
        // Exactly the pages needed: two objects per page.
        assert_eq!(
            o.allocated,
            (threads * per_thread).div_ceil(MEDIUM / OBJECT)
        );
    });
    println!(
        "loom synchronized {threads} threads x {per_thread}: {} interleavings, 0 undo in all",
        executions.load(std::sync::atomic::Ordering::Relaxed)
    );
}

#[test]
fn loom_synchronized_two_threads_fill_and_replace() {
    check_synchronized(2, 2);
}

#[test]
fn loom_synchronized_three_threads() {
    check_synchronized(3, 1);
}

#[test]
fn loom_racy_finds_the_undo() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let with_undo = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (count, undos) = (executions.clone(), with_undo.clone());
    builder.check(move || {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let o = run(MediumPageMode::Racy, 2, 1);
        // The race wastes pages but never corrupts the heap.
        check_placement(&o);
        assert_eq!(o.allocated, o.installed_count + o.undone);
        if o.undone > 0 {
            undos.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let (executions, with_undo) = (
        executions.load(std::sync::atomic::Ordering::Relaxed),
        with_undo.load(std::sync::atomic::Ordering::Relaxed),
    );
    println!("loom racy 2 threads x 1: {executions} interleavings, {with_undo} with an undo");
    assert!(
        with_undo > 0,
        "the model must find the interleaving where a racy installation is undone"
    );
}
