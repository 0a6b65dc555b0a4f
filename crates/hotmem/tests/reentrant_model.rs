//! A binding whose callbacks call back into the runtime: every such call
//! returns (an error where it would wait for the collection itself), from
//! the collecting thread and from the GC workers alike, and the collection
//! completes; a panicking callback is an error, not a torn pause. Each
//! scenario runs under a deadline: a hang fails the test instead of
//! blocking the suite. The locks are parking_lot's, whose contended path
//! ThreadSanitizer sees (std's is uninstrumented).

use hotmem::{
    AttachError, Binding, GcError, ObjectReference, Runtime, SafepointRequestError, SimpleSlot,
    SlotVisitor,
};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

mod common;

/// Generous: the scenarios take milliseconds; this only turns a hang into a
/// failure.
const DEADLINE: Duration = Duration::from_secs(120);

/// What a callback does besides its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Meddle {
    Nothing,
    /// Calls the runtime from `scan_global_roots` (the collecting thread).
    CallRuntime,
    /// Calls the runtime from `scan_object` (a GC worker).
    CallRuntimeFromWorker,
    /// Panics in the root scan of marking.
    PanicInMark,
    /// Panics in `scan_object` on a worker, during marking.
    PanicInScan,
    /// Panics in the root scan of the update phase.
    PanicInUpdate,
}

/// Objects are `[size][payload][next]`; the roots are a list of words.
struct Model {
    roots: Mutex<Vec<usize>>,
    runtime: Mutex<Option<Runtime>>,
    meddle: Mutex<Meddle>,
    /// Root scans so far: odd ones mark, even ones update.
    root_scans: AtomicUsize,
    /// What each call into the runtime returned, from inside a callback.
    seen: Mutex<Vec<String>>,
    /// Whether `scan_object` has panicked (Meddle::PanicInScan) already.
    panicked: AtomicBool,
}

impl Model {
    fn meddle(&self) -> Meddle {
        *self.meddle.lock()
    }

    /// Every facade entry point that would wait for the collection; each
    /// must return `InsideCollection`, on the collecting thread and on GC
    /// workers alike (the safepoint requests go through the runtime's
    /// `Safepoints`, which knows the workers; the bare coordinator does not).
    fn call_facade(&self) {
        let rt = self.runtime.lock().clone().expect("set after build");
        let mut seen = self.seen.lock();
        match rt.collect() {
            Err(GcError::InsideCollection) => seen.push("collect: inside".into()),
            other => seen.push(format!("collect: {other:?}")),
        }
        match rt.run_at_safepoint("nested", || ()) {
            Err(GcError::InsideCollection) => seen.push("run_at_safepoint: inside".into()),
            other => seen.push(format!("run_at_safepoint: {other:?}")),
        }
        match rt.attach_mutator() {
            Err(AttachError::InsideCollection) => seen.push("attach: inside".into()),
            other => seen.push(format!("attach: {other:?}")),
        }
        match rt.safepoints().begin("nested") {
            Err(SafepointRequestError::InsideCollection) => seen.push("begin: inside".into()),
            other => seen.push(format!("begin: {other:?}")),
        }
        match rt.safepoints().handshake_all(|_| {}) {
            Err(SafepointRequestError::InsideCollection) => {
                seen.push("handshake_all: inside".into())
            }
            other => seen.push(format!("handshake_all: {other:?}")),
        }
        seen.push(format!("report: {} sections", rt.report().sections().len()));
    }

    /// Everything `call_facade` tries, then read-only calls that must work
    /// from inside a collection.
    fn call_runtime(&self) {
        self.call_facade();
        let rt = self.runtime.lock().clone().expect("set after build");
        let mut seen = self.seen.lock();
        // Read-only calls work from inside a collection.
        seen.push(format!("gc_totals: {}", rt.gc_totals().cycles));
        seen.push(format!("heap used: {}", rt.heap().usage().used > 0));
    }
}

impl Binding for Model {
    type Slot = SimpleSlot;

    fn object_size(&self, obj: ObjectReference) -> usize {
        // SAFETY: the runtime asks only about marked objects, which start
        // with their size.
        unsafe { obj.to_address().as_ptr::<usize>().read() }
    }

    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        match self.meddle() {
            // One worker panics, once: panics on several threads at once
            // write libtest's captured output concurrently, under std's
            // lock, which ThreadSanitizer cannot see.
            Meddle::PanicInScan if !self.panicked.swap(true, Ordering::Relaxed) => {
                panic!("scan failed on purpose")
            }
            // Once per collection is enough.
            Meddle::CallRuntimeFromWorker if self.seen.lock().is_empty() => self.call_facade(),
            _ => {}
        }
        // SAFETY: word 2 of a live object is its reference slot.
        v.visit_slot(unsafe { SimpleSlot::new(obj.to_address() + 16) });
    }

    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, v: &mut V) {
        let scan = self.root_scans.fetch_add(1, Ordering::SeqCst) + 1;
        let marking = scan % 2 == 1;
        match self.meddle() {
            Meddle::CallRuntime if marking => self.call_runtime(),
            Meddle::PanicInMark if marking => panic!("mark failed on purpose"),
            Meddle::PanicInUpdate if !marking => panic!("update failed on purpose"),
            _ => {}
        }
        for r in self.roots.lock().iter_mut() {
            // SAFETY: the list is locked for the visit.
            v.visit_slot(unsafe { SimpleSlot::from_ref(r) });
        }
    }
}

fn setup() -> (Runtime, Arc<Model>) {
    let model = Arc::new(Model {
        roots: Mutex::new(Vec::new()),
        runtime: Mutex::new(None),
        meddle: Mutex::new(Meddle::Nothing),
        root_scans: AtomicUsize::new(0),
        seen: Mutex::new(Vec::new()),
        panicked: AtomicBool::new(false),
    });
    let rt = common::builder(64 << 20, Some(2))
        .binding(model.clone())
        .build()
        .expect("runtime");
    *model.runtime.lock() = Some(rt.clone());
    (rt, model)
}

/// Fills a few pages, keeping every tenth object, and returns the expected
/// payload of each root.
fn populate(rt: &Runtime, model: &Model) -> Vec<u64> {
    let mut me = rt.attach_mutator().expect("attach");
    let mut expected = Vec::new();
    for i in 0..20_000u64 {
        let obj = me.alloc(64).expect("alloc");
        // SAFETY: a fresh 64-byte object: we write its first three words.
        unsafe {
            obj.as_ptr::<u64>().write(64);
            obj.as_ptr::<u64>().add(1).write(i);
            obj.as_ptr::<u64>().add(2).write(0);
        }
        if i % 10 == 0 {
            model.roots.lock().push(obj.get());
            expected.push(i);
        }
    }
    expected
}

fn check_roots(model: &Model, expected: &[u64]) {
    let roots = model.roots.lock();
    assert_eq!(roots.len(), expected.len());
    for (&obj, &want) in roots.iter().zip(expected) {
        // SAFETY: roots are live objects, updated when they moved.
        let got = unsafe { (obj as *const u64).add(1).read() };
        assert_eq!(got, want, "object at {obj:#x} lost its payload");
    }
}

/// Runs `f` on its own thread; fails the test if it does not finish in time.
fn with_deadline<R: Send + 'static>(name: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    common::with_deadline(name, DEADLINE, f)
}

#[test]
fn callbacks_that_call_the_runtime_get_errors_and_the_collection_completes() {
    with_deadline("reentrant callbacks", || {
        let (rt, model) = setup();
        let expected = populate(&rt, &model);
        *model.meddle.lock() = Meddle::CallRuntime;
        let stats = rt.collect().expect("the collection itself succeeds");
        assert_eq!(stats.live_objects, expected.len() as u64);
        check_roots(&model, &expected);
        let seen = model.seen.lock().clone();
        let want_prefixes = [
            "collect: inside",
            "run_at_safepoint: inside",
            "attach: inside",
            "begin: inside",
            "handshake_all: inside",
            "report: ",
            "gc_totals: 0",
            "heap used: true",
        ];
        assert_eq!(seen.len(), want_prefixes.len(), "{seen:#?}");
        for (got, want) in seen.iter().zip(want_prefixes) {
            assert!(got.starts_with(want), "expected {want:?}, got {got:?}");
        }
        // And the runtime works normally afterwards.
        *model.meddle.lock() = Meddle::Nothing;
        rt.collect().expect("a normal collection");
        check_roots(&model, &expected);
        *model.runtime.lock() = None;
    });
}

#[test]
fn callbacks_on_gc_workers_that_call_the_runtime_get_errors_too() {
    with_deadline("reentrant callbacks on workers", || {
        let (rt, model) = setup();
        let expected = populate(&rt, &model);
        *model.meddle.lock() = Meddle::CallRuntimeFromWorker;
        let stats = rt.collect().expect("the collection itself succeeds");
        assert_eq!(stats.live_objects, expected.len() as u64);
        check_roots(&model, &expected);
        let seen = model.seen.lock().clone();
        assert!(seen[0].starts_with("collect: inside"), "{seen:#?}");
        assert!(seen[1].starts_with("run_at_safepoint: inside"), "{seen:#?}");
        assert!(seen[2].starts_with("attach: inside"), "{seen:#?}");
        assert!(seen[3].starts_with("begin: inside"), "{seen:#?}");
        assert!(seen[4].starts_with("handshake_all: inside"), "{seen:#?}");
        assert!(seen[5].starts_with("report: "), "{seen:#?}");
        *model.meddle.lock() = Meddle::Nothing;
        *model.runtime.lock() = None;
    });
}

#[test]
fn a_panicking_scan_on_a_worker_is_an_error_and_changes_nothing() {
    with_deadline("panicking scan", || {
        let (rt, model) = setup();
        let expected = populate(&rt, &model);
        let used = rt.heap().usage().used;
        *model.meddle.lock() = Meddle::PanicInScan;
        match rt.collect() {
            Err(GcError::ObjectModelPanicked(m)) => assert!(m.contains("on purpose"), "{m}"),
            other => panic!("expected ObjectModelPanicked, got {other:?}"),
        }
        assert_eq!(rt.heap().usage().used, used, "nothing was freed");
        *model.meddle.lock() = Meddle::Nothing;
        let stats = rt.collect().expect("the runtime recovers");
        assert_eq!(stats.live_objects, expected.len() as u64);
        check_roots(&model, &expected);
        *model.runtime.lock() = None;
    });
}

#[test]
fn a_panicking_mark_is_an_error_and_changes_nothing() {
    with_deadline("panicking mark", || {
        let (rt, model) = setup();
        let expected = populate(&rt, &model);
        let used = rt.heap().usage().used;
        *model.meddle.lock() = Meddle::PanicInMark;
        match rt.collect() {
            Err(GcError::ObjectModelPanicked(m)) => assert!(m.contains("on purpose"), "{m}"),
            other => panic!("expected ObjectModelPanicked, got {other:?}"),
        }
        assert_eq!(rt.heap().usage().used, used, "nothing was freed");
        rt.heap().check_invariants();
        *model.meddle.lock() = Meddle::Nothing;
        let stats = rt.collect().expect("the runtime recovers");
        assert_eq!(stats.live_objects, expected.len() as u64);
        check_roots(&model, &expected);
        *model.runtime.lock() = None;
    });
}

#[test]
fn a_panicking_update_poisons_the_runtime_and_keeps_both_copies() {
    with_deadline("panicking update", || {
        let (rt, model) = setup();
        let expected = populate(&rt, &model);
        *model.meddle.lock() = Meddle::PanicInUpdate;
        match rt.collect() {
            Err(GcError::ObjectModelPanicked(m)) => assert!(m.contains("on purpose"), "{m}"),
            other => panic!("expected ObjectModelPanicked, got {other:?}"),
        }
        // The binding's roots were not updated and still point at the old
        // copies, which were kept; the slots and handles that were point
        // at the new ones. No later collection may free either: the
        // runtime is poisoned.
        check_roots(&model, &expected);
        rt.heap().check_invariants();
        *model.meddle.lock() = Meddle::Nothing;
        for _ in 0..2 {
            match rt.collect() {
                Err(GcError::Poisoned { cause }) => {
                    assert!(matches!(*cause, GcError::ObjectModelPanicked(_)), "{cause}")
                }
                other => panic!("expected Poisoned, got {other:?}"),
            }
        }
        check_roots(&model, &expected);
        rt.heap().check_invariants();
        *model.runtime.lock() = None;
    });
}
