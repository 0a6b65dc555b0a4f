//! The soundness contract (the crate docs' "Soundness"), one misuse class
//! at a time: each test does through the public API only what a hostile
//! or careless embedder may (leaked guards, calls from threads that are no
//! mutators, panicking callbacks, two runtimes, made-up addresses), and
//! checks that the runtime neither corrupts the heap nor hangs nor panics.
//! A race is run many times over; after its fix no interleaving fails, so
//! no test depends on timing (a deadline only turns a hang into a
//! failure). The random mix of all of them is the hostile-embedder suite
//! (`examples/tests/hostile.rs`).

use hotmem::objects::{GraphError, Ids, RootTable, SimpleObjects, build};
use hotmem::{
    AllocError, Binding, CollectorMode, GcError, Generations, Handle, HeapSizing, Mutator,
    ObjectReference, RootTableVisit, Runtime, SimpleSlot, SlotVisitor, WeakHandle,
};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

mod common;

/// Generous: every scenario takes seconds at most once fixed.
const DEADLINE: Duration = Duration::from_secs(180);

fn runtime<B: Binding>(mode: CollectorMode, binding: Arc<B>) -> Runtime {
    runtime_visiting(mode, RootTableVisit::Concurrent, binding)
}

fn runtime_visiting<B: Binding>(
    mode: CollectorMode,
    tables: RootTableVisit,
    binding: Arc<B>,
) -> Runtime {
    common::builder(64 << 20, Some(2))
        .collector(mode)
        .root_table_visit(tables)
        // Collections run when the tests ask for them (and when the heap
        // is full): what each finds does not depend on timing.
        .heap_sizing(HeapSizing::Maximum)
        .binding(binding)
        .build()
        .expect("a runtime")
}

/// Allocates `n` objects of `payload` words, keeping every `keep`-th in
/// `roots` (the others die: their pages are worth evacuating), calling
/// `kept(me, obj, id)` for each one kept. Returns the ids kept.
fn fragmented(
    me: &mut Mutator,
    roots: &RootTable,
    ids: &mut Ids,
    n: usize,
    keep: usize,
    mut kept: impl FnMut(&mut Mutator, ObjectReference, u64),
) -> Vec<u64> {
    let mut out = Vec::new();
    for i in 0..n {
        let id = ids.next();
        let obj = build::object(me, roots, 0, 6, id).expect("the heap holds them");
        if i % keep == 0 {
            kept(me, obj, id);
            out.push(id);
        } else {
            roots.pop();
        }
    }
    out
}

/// At a safepoint of `rt`: the object `r` refers to is intact and has id
/// `id` (with the concurrent collector, where `forwarded` says it is).
fn check_object(rt: &Runtime, r: ObjectReference, id: u64) -> Result<(), String> {
    check_in_place(rt.forwarded(r), id)
}

/// [`check_object`] where no collection can run (the only mutator, in
/// managed code, nobody else collecting) and nothing moved concurrently.
fn check_in_place(r: ObjectReference, id: u64) -> Result<(), String> {
    // SAFETY: the callers' promise: `r` is a root's object, and no
    // collection runs meanwhile.
    let header = unsafe { SimpleObjects::header(r) };
    if header[1] != id {
        return Err(format!("{r} has id {}, expected {id}", header[1]));
    }
    // SAFETY: as above.
    unsafe { SimpleObjects::check(r) }.map_err(|c| c.to_string())
}

// ---- 1. A leaked native region: every barrier's slow path leaves it
// before it reads the relocation set.

#[test]
fn barriers_after_a_leaked_native_region_never_read_a_freed_relocation_set() {
    common::with_deadline("leaked native region", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = runtime(CollectorMode::Concurrent, objects.clone());
        let published: Arc<Vec<AtomicUsize>> =
            Arc::new((0..2048).map(|_| AtomicUsize::new(0)).collect());
        let done = Arc::new(AtomicBool::new(false));
        // Objects allocated and mostly dropped, their addresses published:
        // each cycle evacuates some of their pages.
        let churn = {
            let (rt, objects, published, done) =
                (rt.clone(), objects.clone(), published.clone(), done.clone());
            std::thread::spawn(move || {
                let mut me = rt.attach_mutator().unwrap();
                let roots = objects.root_table();
                let mut ids = Ids::from(1);
                let mut i = 0usize;
                while !done.load(Ordering::Relaxed) {
                    let obj = build::object(&mut me, &roots, 0, 6, ids.next()).unwrap();
                    published[i % published.len()].store(obj.get(), Ordering::Relaxed);
                    if i % 8 != 0 {
                        roots.pop();
                    }
                    if roots.len() > 4096 {
                        roots.clear();
                    }
                    i += 1;
                }
            })
        };
        let collector = {
            let rt = rt.clone();
            std::thread::spawn(move || {
                for _ in 0..40 {
                    rt.collect().expect("a cycle");
                }
            })
        };
        let mut me = rt.attach_mutator().unwrap();
        while !collector.is_finished() {
            std::mem::forget(me.enter_native());
            for a in published.iter() {
                let Some(r) =
                    ObjectReference::from_address(hotmem::Address::new(a.load(Ordering::Relaxed)))
                else {
                    continue;
                };
                let _ = me.resolve(r);
                let mut word = r.get();
                // SAFETY: a word of this frame, used only here.
                let _ = me.load_ref(unsafe { SimpleSlot::from_ref(&mut word) });
            }
            me.poll();
        }
        collector.join().unwrap();
        // Detached before waiting for the churn, whose stalled allocation
        // may wait for a cycle that waits for every attached mutator.
        drop(me);
        done.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        assert!(rt.safepoints().leaked_regions() > 0);
    });
}

// ---- 2. Handle::clone from a thread that is no mutator, racing moving
// collections.

#[test]
fn handles_cloned_on_any_thread_name_their_objects_after_moving_collections() {
    common::with_deadline("handle clones", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = runtime(CollectorMode::StopTheWorld, objects.clone());
        let shared: Arc<Mutex<Vec<(Handle, u64)>>> = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let maker = {
            let (rt, objects, shared, done) =
                (rt.clone(), objects.clone(), shared.clone(), done.clone());
            std::thread::spawn(move || {
                let mut me = rt.attach_mutator().unwrap();
                let roots = objects.root_table();
                let mut ids = Ids::from(1);
                while !done.load(Ordering::Relaxed) {
                    fragmented(&mut me, &roots, &mut ids, 64, 16, |me, obj, id| {
                        let mut s = shared.lock();
                        s.push((me.handle(obj), id));
                        if s.len() > 512 {
                            s.drain(..256);
                        }
                    });
                    roots.clear();
                    me.poll();
                }
            })
        };
        let cloner = {
            let (shared, done) = (shared.clone(), done.clone());
            std::thread::spawn(move || {
                let mut clones = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    let picked: Vec<(Handle, u64)> = {
                        let s = shared.lock();
                        s.iter()
                            .rev()
                            .take(8)
                            .map(|(h, id)| (h.clone(), *id))
                            .collect()
                    };
                    // Clones of clones: each made while collections run.
                    clones.extend(picked.iter().map(|(h, id)| (h.clone(), *id)));
                    if clones.len() > 4096 {
                        clones.drain(..2048);
                    }
                }
                clones
            })
        };
        for _ in 0..150 {
            rt.collect().expect("every collection succeeds");
        }
        done.store(true, Ordering::Relaxed);
        maker.join().unwrap();
        let clones = cloner.join().unwrap();
        rt.collect().expect("a collection after the race");
        let bad: Vec<String> = rt
            .run_at_safepoint("check clones", || {
                clones
                    .iter()
                    .filter_map(|(h, id)| check_object(&rt, h.get(), *id).err())
                    .collect()
            })
            .unwrap();
        assert!(
            bad.is_empty(),
            "{} bad clones: {:?}",
            bad.len(),
            &bad[..bad.len().min(5)]
        );
    });
}

// ---- 3. A weak handle upgraded to a strong one on a thread that is no
// mutator, racing collections that clear it.

fn weak_upgrades_race(mode: CollectorMode) {
    let objects = SimpleObjects::new();
    let rt = runtime(mode, objects.clone());
    let published: Arc<Mutex<Vec<(WeakHandle, u64)>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let maker = {
        let (rt, objects, published, done) =
            (rt.clone(), objects.clone(), published.clone(), done.clone());
        std::thread::spawn(move || {
            let mut me = rt.attach_mutator().unwrap();
            let roots = objects.root_table();
            let mut ids = Ids::from(1);
            while !done.load(Ordering::Relaxed) {
                // Objects of 1 KiB, each with a weak handle; every eighth
                // stays strongly reachable until the next round, the
                // others die at the next collection, whole pages of them
                // (freed as empty), unless an upgrade keeps them.
                roots.clear();
                fragmented(&mut me, &roots, &mut ids, 64, 4, |_, _, _| {});
                for k in 0..64u64 {
                    let id = ids.next();
                    let obj = build::object(&mut me, &roots, 0, 124, id).unwrap();
                    let mut p = published.lock();
                    p.push((rt.weak_handle(obj), id));
                    if k % 8 != 0 {
                        roots.pop();
                    }
                    if p.len() > 512 {
                        p.drain(..256);
                    }
                }
                me.poll();
            }
        })
    };
    let upgrader = {
        let (published, done) = (published.clone(), done.clone());
        std::thread::spawn(move || {
            let mut strong = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let weak: Vec<(WeakHandle, u64)> = published
                    .lock()
                    .iter()
                    .map(|(w, id)| (w.clone(), *id))
                    .collect();
                for (w, id) in weak {
                    if let Some(h) = w.upgrade().expect("not inside a collection") {
                        strong.push((h, id));
                    }
                }
                if strong.len() > 4096 {
                    strong.drain(..2048);
                }
            }
            strong
        })
    };
    for _ in 0..600 {
        rt.collect().expect("every collection succeeds");
    }
    done.store(true, Ordering::Relaxed);
    maker.join().unwrap();
    let strong = upgrader.join().unwrap();
    rt.collect().expect("a collection after the race");
    let bad: Vec<String> = rt
        .run_at_safepoint("check upgrades", || {
            strong
                .iter()
                .filter_map(|(h, id)| check_object(&rt, h.get(), *id).err())
                .collect()
        })
        .unwrap();
    assert!(
        bad.is_empty(),
        "{mode:?}: {} bad upgrades: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

#[test]
fn weak_handles_upgraded_on_any_thread_never_name_a_freed_object_stop_the_world() {
    common::with_deadline("weak upgrades (stop-the-world)", DEADLINE, || {
        weak_upgrades_race(CollectorMode::StopTheWorld)
    });
}

#[test]
fn weak_handles_upgraded_on_any_thread_never_name_a_freed_object_concurrent() {
    common::with_deadline("weak upgrades (concurrent)", DEADLINE, || {
        weak_upgrades_race(CollectorMode::Concurrent)
    });
}

#[test]
fn upgrading_from_inside_a_collection_is_an_error() {
    struct Upgrades {
        objects: Arc<SimpleObjects>,
        weak: Mutex<Option<WeakHandle>>,
        seen: Mutex<Vec<String>>,
    }
    impl Binding for Upgrades {
        type Slot = SimpleSlot;
        fn object_size(&self, obj: ObjectReference) -> usize {
            self.objects.object_size(obj)
        }
        fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
            self.objects.scan_object(obj, v)
        }
        fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, v: &mut V) {
            if let Some(w) = &*self.weak.lock() {
                self.seen
                    .lock()
                    .push(format!("{:?}", w.upgrade().map(|h| h.is_some())));
                // A plain read from a callback runs at once (no wait for
                // the pause it is inside of).
                let _ = w.get();
            }
            self.objects.scan_global_roots(v)
        }

        fn root_tables(&self, report: &mut dyn FnMut(&Arc<hotmem::RootTable>)) {
            self.objects.root_tables(report)
        }
    }
    common::with_deadline("upgrade inside a collection", DEADLINE, || {
        let objects = SimpleObjects::new();
        let binding = Arc::new(Upgrades {
            objects: objects.clone(),
            weak: Mutex::new(None),
            seen: Mutex::new(Vec::new()),
        });
        let rt = runtime(CollectorMode::StopTheWorld, binding.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let obj = build::object(&mut me, &roots, 0, 2, 1).unwrap();
        *binding.weak.lock() = Some(rt.weak_handle(obj));
        me.collect().unwrap();
        let seen = binding.seen.lock().clone();
        assert!(!seen.is_empty());
        assert!(
            seen.iter().all(|s| s == "Err(InsideCollection)"),
            "{seen:?}"
        );
        *binding.weak.lock() = None;
    });
}

// ---- 4. A binding that panics while roots are updated: every root kind
// is updated, and the runtime is poisoned, never silently torn.

/// [`SimpleObjects`] whose `root_tables` panics on its `n`-th call once
/// armed (the first call of a collection marks, the second updates, when
/// the tables are visited in the pauses).
struct PanicAt {
    objects: Arc<SimpleObjects>,
    armed_at: AtomicUsize,
    calls: AtomicUsize,
}

impl Binding for PanicAt {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        self.objects.scan_object(obj, v)
    }
    fn slot_at(&self, addr: hotmem::Address) -> Option<SimpleSlot> {
        self.objects.slot_at(addr)
    }
    fn root_tables(&self, report: &mut dyn FnMut(&Arc<hotmem::RootTable>)) {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call == self.armed_at.load(Ordering::SeqCst) {
            panic!("root_tables panics on purpose (call {call})");
        }
        self.objects.root_tables(report)
    }
}

impl PanicAt {
    /// Over `objects`, not armed yet.
    fn unarmed(objects: &Arc<SimpleObjects>) -> Arc<PanicAt> {
        Arc::new(PanicAt {
            objects: objects.clone(),
            armed_at: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
        })
    }
}

fn a_panicking_root_update_poisons(mode: CollectorMode) {
    let objects = SimpleObjects::new();
    let binding = PanicAt::unarmed(&objects);
    // The tables in the pauses: the update of Pause Relocate Start visits
    // them, as the stop-the-world update does.
    let rt = runtime_visiting(mode, RootTableVisit::InPause, binding.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    // The objects kept are both in the root table (the binding's roots)
    // and in handles; their pages are mostly garbage, so they move.
    let mut handles = Vec::new();
    let kept = fragmented(&mut me, &roots, &mut ids, 4096, 16, |me, obj, id| {
        handles.push((me.handle(obj), id))
    });
    let before = binding.calls.load(Ordering::SeqCst);
    // The second root scan of the next collection: the update (stop the
    // world) or Pause Relocate Start (concurrent).
    binding.armed_at.store(before + 2, Ordering::SeqCst);
    let err = me.collect().expect_err("the binding panics");
    assert!(matches!(err, GcError::ObjectModelPanicked(_)), "{err}");
    // The handles were updated, the root table (whose scan panicked) was
    // not: two copies of each moved object are referred to.
    let torn = (handles.iter().zip(roots.roots()))
        .filter(|((h, _), r)| Some(h.get()) != *r)
        .count();
    assert!(torn > 0, "{mode:?}: nothing moved");
    drop(me);
    for _ in 0..2 {
        match rt.collect() {
            Err(GcError::Poisoned { cause }) => {
                assert!(matches!(*cause, GcError::ObjectModelPanicked(_)), "{cause}")
            }
            other => panic!("{mode:?}: expected Poisoned, got {other:?}"),
        }
    }
    // Nothing was freed: both copies of every kept object are intact.
    let bad: Vec<String> = rt
        .run_at_safepoint("check copies", || {
            let mut bad = Vec::new();
            for (h, id) in &handles {
                bad.extend(check_object(&rt, h.get(), *id).err());
            }
            for (r, id) in roots.roots().iter().zip(&kept) {
                bad.extend(check_object(&rt, r.expect("kept"), *id).err());
            }
            bad
        })
        .unwrap();
    assert!(bad.is_empty(), "{mode:?}: {bad:?}");
    let mut me = rt.attach_mutator().unwrap();
    // An allocation that would need a collection says why it cannot have
    // one.
    let full = (0..100_000).find_map(|_| me.alloc(1 << 20).err());
    assert!(
        matches!(full, Some(AllocError::Collection(GcError::Poisoned { .. }))),
        "{full:?}"
    );
}

#[test]
fn a_binding_panic_in_the_root_update_poisons_the_runtime_stop_the_world() {
    common::with_deadline("panicking update (stop-the-world)", DEADLINE, || {
        a_panicking_root_update_poisons(CollectorMode::StopTheWorld)
    });
}

#[test]
fn a_binding_panic_in_pause_relocate_start_poisons_the_runtime() {
    common::with_deadline("panicking relocate start", DEADLINE, || {
        a_panicking_root_update_poisons(CollectorMode::Concurrent)
    });
}

/// With the root tables visited after the pauses, `root_tables` is asked
/// once per cycle, in Pause Mark Start, before anything is marked: its
/// panic fails that cycle only, the handle tables it had begun to mark
/// are left as they were, and the next cycles (with the tables marked and
/// forwarded while the mutator reads them) keep every object.
#[test]
fn a_binding_panic_in_root_tables_fails_one_concurrent_cycle_only() {
    common::with_deadline("panicking root_tables", DEADLINE, || {
        let objects = SimpleObjects::new();
        let binding = PanicAt::unarmed(&objects);
        let rt = runtime(CollectorMode::Concurrent, binding.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        let mut handles = Vec::new();
        let kept = fragmented(&mut me, &roots, &mut ids, 4096, 16, |me, obj, id| {
            handles.push((me.handle(obj), id))
        });
        binding
            .armed_at
            .store(binding.calls.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
        let err = me.collect().expect_err("the binding panics");
        assert!(matches!(err, GcError::ObjectModelPanicked(_)), "{err}");
        let mut moved = 0;
        for _ in 0..3 {
            moved += me
                .collect()
                .expect("later cycles succeed")
                .objects_relocated;
        }
        assert!(moved > 0, "the kept objects' pages were evacuated");
        for ((h, id), (r, rid)) in handles.iter().zip(roots.roots().iter().zip(&kept)) {
            assert_eq!(Some(h.get()), *r, "a handle and its table entry agree");
            check_in_place(h.get(), *id).unwrap();
            assert_eq!(id, rid);
        }
    });
}

// ---- 5. Waiting for another runtime's GC thread while in managed code
// on this one: a typed error, never a hang.

#[test]
fn waits_for_a_concurrent_cycle_across_two_runtimes_are_errors_not_deadlocks() {
    common::with_deadline("two runtimes", DEADLINE, || {
        let (oa, ob) = (SimpleObjects::new(), SimpleObjects::new());
        let a = runtime(CollectorMode::Concurrent, oa);
        let b = runtime(CollectorMode::Concurrent, ob);
        let refused = Arc::new(AtomicUsize::new(0));
        // Each thread runs managed code on one runtime and asks the other
        // for collections; the third is a mutator of both.
        let cross = |mine: Runtime, other: Runtime, refused: Arc<AtomicUsize>| {
            std::thread::spawn(move || {
                let me = mine.attach_mutator().unwrap();
                for _ in 0..200 {
                    match other.collect() {
                        Ok(_) => {}
                        Err(GcError::Safepoint(e)) => {
                            assert!(e.to_string().contains("managed code"), "{e}");
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                    me.poll();
                }
            })
        };
        let t1 = cross(b.clone(), a.clone(), refused.clone());
        let t2 = cross(a.clone(), b.clone(), refused.clone());
        let t3 = {
            let (a, b, refused) = (a.clone(), b.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut on_a = a.attach_mutator().unwrap();
                let on_b = b.attach_mutator().unwrap();
                for _ in 0..200 {
                    match on_a.collect() {
                        Err(GcError::Safepoint(_)) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        other => panic!("managed on b, waiting on a: {other:?}"),
                    }
                    on_b.poll();
                }
            })
        };
        for t in [t1, t2, t3] {
            t.join().unwrap();
        }
        assert_eq!(refused.load(Ordering::Relaxed), 600);
        // From a thread managed nowhere, both collect.
        a.collect().unwrap();
        b.collect().unwrap();
    });
}

// ---- 6. Concurrent marking ends in bounded rounds whatever the mutators
// do.

#[test]
fn concurrent_marking_ends_while_threads_read_weak_handles_and_store_in_a_loop() {
    common::with_deadline("bounded marking", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = runtime(CollectorMode::Concurrent, objects.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        build::tree(&mut me, &roots, 14, 2, &mut ids).unwrap();
        let weak: Vec<WeakHandle> = (0..64)
            .map(|_| {
                let obj = build::object(&mut me, &roots, 0, 2, ids.next()).unwrap();
                rt.weak_handle(obj)
            })
            .collect();
        let a = build::object(&mut me, &roots, 1, 0, ids.next()).unwrap();
        let b = build::object(&mut me, &roots, 1, 0, ids.next()).unwrap();
        let (ha, hb) = (me.handle(a), me.handle(b));
        drop(me);
        let done = Arc::new(AtomicBool::new(false));
        let weak = Arc::new(weak);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (weak, done) = (weak.clone(), done.clone());
                std::thread::spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        for w in weak.iter() {
                            let _ = w.get();
                        }
                    }
                })
            })
            .collect();
        let storer = {
            let (rt, done) = (rt.clone(), done.clone());
            std::thread::spawn(move || {
                let me = rt.attach_mutator().unwrap();
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let (x, y) = (ha.get(), hb.get());
                    let (from, to) = if n % 2 == 0 { (x, y) } else { (y, x) };
                    // SAFETY: both live (in handles), read since the last
                    // poll.
                    unsafe { SimpleObjects::set_slot(&me, from, 0, Some(to)) };
                    n += 1;
                    if n % 1000 == 0 {
                        me.poll();
                    }
                }
            })
        };
        for _ in 0..10 {
            let stats = rt.collect().expect("a cycle");
            let rounds = stats.concurrent.expect("concurrent").mark_rounds;
            assert!((1..=64).contains(&rounds), "{rounds} rounds");
        }
        done.store(true, Ordering::Relaxed);
        for t in readers {
            t.join().unwrap();
        }
        storer.join().unwrap();
    });
}

// ---- 7. ShadowStack::get while the collector rewrites the word (the
// owner is in a native region): an atomic load, no data race (the thread
// sanitizer checks it: `cargo xtask sanitize thread`).

#[test]
fn shadow_stack_reads_in_a_native_region_race_no_collection() {
    common::with_deadline("shadow stack reads", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = runtime(CollectorMode::StopTheWorld, objects.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        let stack = me.new_shadow_stack(16).unwrap();
        let mut kept = 0;
        fragmented(&mut me, &roots, &mut ids, 2048, 64, |_, obj, id| {
            if kept == 0 {
                // SAFETY: word 0, within the capacity; a live object.
                unsafe {
                    stack.as_ptr().write(obj.get() as u64);
                    stack.set_len(1);
                }
                kept = id;
            }
        });
        roots.clear();
        let done = Arc::new(AtomicBool::new(false));
        // Reads completed: each collection begins once this thread has
        // read since the last one ended, so every address the object has
        // between two collections is read, however the threads are
        // scheduled (the object, alone on its page, moves in each).
        let reads = Arc::new(AtomicUsize::new(0));
        let collector = {
            let (rt, done, reads) = (rt.clone(), done.clone(), reads.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    // A read counted twice later began after this load.
                    let before = reads.load(Ordering::Acquire);
                    while reads.load(Ordering::Acquire) < before + 2 {
                        std::thread::yield_now();
                    }
                    rt.collect().unwrap();
                }
                done.store(true, Ordering::Relaxed);
            })
        };
        let mut seen = std::collections::BTreeSet::new();
        {
            let _native = me.enter_native();
            while !done.load(Ordering::Relaxed) {
                seen.insert(stack.get(0).expect("in use"));
                reads.fetch_add(1, Ordering::Release);
            }
        }
        collector.join().unwrap();
        let now = stack.get_ref(0).expect("a reference");
        // The only mutator, in managed code, and nobody collects now.
        check_in_place(now, kept).unwrap();
        assert!(seen.len() >= 2, "the object moved while it was read");
    });
}

// ---- 8. The load barrier on any address: no panic inside the runtime.

#[test]
fn resolve_on_any_address_of_a_relocation_set_page_never_panics() {
    common::with_deadline("resolve anywhere", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = runtime(CollectorMode::Concurrent, objects.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        fragmented(&mut me, &roots, &mut ids, 8192, 16, |_, _, _| {});
        let stats = me.collect().unwrap();
        assert!(
            stats.concurrent.unwrap().relocation_set_pages > 0,
            "{stats:?}"
        );
        let mut probed = 0;
        for p in rt.heap().page_infos() {
            let at =
                |off: usize| ObjectReference::from_address(hotmem::Address::new(p.start + off));
            let offsets = [
                0,
                8,
                p.used.saturating_sub(8),
                p.used,
                p.used + 8,
                p.size - 8,
            ];
            for off in offsets.into_iter().chain((0..p.size).step_by(4096 + 8)) {
                if let Some(r) = at(off) {
                    let _ = me.resolve(r);
                    let _ = rt.forwarded(r);
                    probed += 1;
                }
            }
        }
        assert!(probed > 0);
        me.collect().unwrap();
    });
}

// ---- 9. The sample binding's builders: checked sizes, scanned tables.

#[test]
fn builders_refuse_sizes_that_overflow_and_tables_the_runtime_does_not_scan() {
    let objects = SimpleObjects::new();
    let rt = runtime(CollectorMode::StopTheWorld, objects.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    for slots in [1usize << 61, usize::MAX / 8, usize::MAX] {
        let e = build::object(&mut me, &roots, slots, 0, 1).unwrap_err();
        assert!(matches!(e, GraphError::Alloc(AllocError::Layout(_))), "{e}");
        let e = build::array(&mut me, &roots, slots, 1, 0, &mut ids).unwrap_err();
        assert!(matches!(e, GraphError::Alloc(AllocError::Layout(_))), "{e}");
    }
    assert_eq!(SimpleObjects::size_for(1 << 61, 0), usize::MAX);
    let other = SimpleObjects::new().root_table();
    let e = build::array(&mut me, &other, 10, 3, 1, &mut ids).unwrap_err();
    assert_eq!(e, GraphError::RootsNotScanned);
    assert!(other.is_empty() && roots.is_empty());
    me.collect().unwrap();
}

// ---- 2 and 3 under the generational collector too: a young collection
// moves what the cloners and upgraders race for.

#[test]
fn handle_clones_and_weak_upgrades_survive_young_collections() {
    common::with_deadline("young collections", DEADLINE, || {
        let objects = SimpleObjects::new();
        let rt = common::builder(64 << 20, Some(2))
            .generations(Generations::YoungAndOld)
            .heap_sizing(HeapSizing::Maximum)
            .binding(objects.clone())
            .build()
            .unwrap();
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        let mut made = Vec::new();
        for _ in 0..20 {
            fragmented(&mut me, &roots, &mut ids, 512, 8, |me, obj, id| {
                made.push((me.handle(obj), rt.weak_handle(obj), id))
            });
            let stop = AtomicBool::new(false);
            let copies = std::thread::scope(|s| {
                let t = s.spawn(|| {
                    let mut copies = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        for (h, w, id) in made.iter().rev().take(16) {
                            copies.push((h.clone(), *id));
                            if let Some(u) = w.upgrade().unwrap() {
                                copies.push((u, *id));
                            }
                        }
                    }
                    copies
                });
                me.collect_young().unwrap();
                stop.store(true, Ordering::Relaxed);
                t.join().unwrap()
            });
            // The only mutator, in managed code; the copier has stopped.
            let bad: Vec<String> = (copies.iter())
                .filter_map(|(h, id)| check_in_place(h.get(), *id).err())
                .collect();
            assert!(bad.is_empty(), "{bad:?}");
            roots.clear();
        }
    });
}
