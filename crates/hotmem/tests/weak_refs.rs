//! Weak handles, ephemerons, finalization and the binding's own weak
//! references, each through real collections on the real heap: cleared
//! exactly when their objects die, updated when they move, in young and
//! full collections, with pinned and moving objects.

use hotmem::objects::{Ids, RootTable, SimpleObjects, build};
use hotmem::{
    Binding, CollectionKind, CollectorMode, FinalizerError, GcError, Generations, Mutator,
    ObjectReference, RootTableVisit, Runtime, SimpleSlot, SlotVisitor, WeakForwarding, WeakPass,
    WeakRefs,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

mod common;

fn runtime(generations: Generations, binding: Arc<impl Binding>) -> Runtime {
    runtime_of(CollectorMode::StopTheWorld, generations, binding)
}

fn runtime_of(
    mode: CollectorMode,
    generations: Generations,
    binding: Arc<impl Binding>,
) -> Runtime {
    common::builder(64 << 20, Some(2))
        .collector(mode)
        .generations(generations)
        .binding(binding)
        .build()
        .expect("a runtime")
}

/// The id in an object's header.
fn id_of(obj: ObjectReference) -> u64 {
    // SAFETY: the tests call this only on live objects, with no collection
    // since the reference was read.
    unsafe { SimpleObjects::header(obj)[1] }
}

/// A fresh object with `slots` slots, unrooted (the table it went through
/// is popped).
fn unrooted(me: &mut Mutator, roots: &RootTable, slots: usize, id: u64) -> ObjectReference {
    let obj = build::object(me, roots, slots, 2, id).expect("an object");
    roots.pop();
    obj
}

#[test]
fn a_weak_handle_is_cleared_when_its_object_dies_and_follows_it_when_it_moves() {
    // The concurrent cycles clear the weak handles after Pause Mark End
    // (no finalizer here): the same handles, the same counts.
    for (mode, generations, kind) in common::EVERY_COLLECTION {
        let objects = SimpleObjects::new();
        let rt = runtime_of(mode, generations, objects.clone());
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        let mut moved = 0;
        for round in 0..8u64 {
            // A: strongly reachable; B: only weakly; C: only pinned.
            let ia = roots.len();
            let a = build::object(&mut me, &roots, 0, 2, 1000 + round).unwrap();
            let wa = rt.weak_handle(a);
            let b = unrooted(&mut me, &roots, 0, 2000 + round);
            let wb = rt.weak_handle(b);
            // Sparse pages (a few live objects among garbage pack into one
            // page, so theirs are evacuated), and another page for C: a
            // pinned page is never evacuated.
            for filler in 0..4 {
                build::garbage(&mut me, &roots, 1 << 10, &mut ids).unwrap();
                build::object(&mut me, &roots, 0, 2, 4000 + filler).unwrap();
            }
            build::garbage(&mut me, &roots, 3 << 10, &mut ids).unwrap();
            let c = unrooted(&mut me, &roots, 0, 3000 + round);
            let pin = me.pin(c);
            let wc = me.runtime().weak_handle(c);
            build::garbage(&mut me, &roots, 256, &mut ids).unwrap();
            let stats = common::collect(&mut me, kind);
            assert_eq!(
                stats.refs.weak.found, 3,
                "{mode:?} {generations:?} {kind:?}"
            );
            let after_the_pause = stats
                .concurrent
                .is_some_and(|c| c.process_non_strong_ns > 0);
            assert_eq!(after_the_pause, mode == CollectorMode::Concurrent);
            assert_eq!(wb.get(), None, "B died: cleared ({kind:?})");
            assert!(wb.is_cleared());
            let a_now = roots.get(ia).unwrap();
            assert_eq!(wa.get(), Some(a_now), "A's handle follows A ({kind:?})");
            assert_eq!(id_of(a_now), 1000 + round);
            moved += usize::from(a_now != a);
            assert_eq!(wc.get(), Some(c), "C is pinned: alive and in place");
            assert_eq!(stats.refs.weak.cleared, 1);
            // A dies with its root, C with its pin.
            roots.truncate(ia);
            drop(pin);
            common::collect(&mut me, CollectionKind::Full);
            assert_eq!((wa.get(), wc.get()), (None, None), "{kind:?}");
        }
        assert!(moved > 0, "A moved at least once ({kind:?})");
        // SAFETY: no collection runs during the verification.
        unsafe { objects.verify() }.expect("the heap is intact");
    }
}

/// Objects `k1 v1 k2 v2 k3 v3` where `v1 -> k2` and `v2 -> k3` by a slot,
/// and ephemerons `(k1, v1) (k2, v2) (k3, v3)` registered in `order`;
/// only `rooted` (0 for k1, 1 for k2, ...) is strongly reachable. Returns
/// which of the six objects survive a full collection by `mode` (a
/// concurrent cycle's marking retains the values pass by pass while the
/// mutators run, one link of the chain per pass, and its pause finishes
/// the pairs still waiting).
fn ephemeron_chain(mode: CollectorMode, order: [usize; 3], rooted: Option<usize>) -> [bool; 6] {
    let objects = SimpleObjects::new();
    let rt = runtime_of(mode, Generations::Single, objects.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    // All six rooted while the chain is built, then unrooted.
    let made: Vec<ObjectReference> = (0..6)
        .map(|i| build::object(&mut me, &roots, 1, 2, 100 + i as u64).unwrap())
        .collect();
    let at = |i: usize| roots.get(i).unwrap();
    // SAFETY: every object is rooted and live; nothing collects here.
    unsafe {
        SimpleObjects::set_slot(&me, at(1), 0, Some(at(2)));
        SimpleObjects::set_slot(&me, at(3), 0, Some(at(4)));
    }
    assert_eq!(made.len(), 6);
    let pairs: Vec<_> = order
        .iter()
        .map(|&e| (e, rt.ephemeron(at(2 * e), at(2 * e + 1))))
        .collect();
    let weak: Vec<_> = (0..6).map(|i| rt.weak_handle(at(i))).collect();
    let keep = rooted.map(|k| at(2 * k));
    roots.clear();
    roots.push(keep);
    let stats = me.collect().unwrap();
    let alive: Vec<bool> = weak.iter().map(|w| w.get().is_some()).collect();
    // Each ephemeron holds exactly its surviving pair, at the new places.
    for (e, eph) in &pairs {
        match eph.get() {
            Some((k, v)) => {
                assert!(alive[2 * e] && alive[2 * e + 1]);
                assert_eq!(Some(k), weak[2 * e].get());
                assert_eq!(Some(v), weak[2 * e + 1].get());
                assert_eq!(
                    (id_of(k), id_of(v)),
                    (100 + 2 * *e as u64, 101 + 2 * *e as u64)
                );
            }
            None => assert!(!alive[2 * e] && !alive[2 * e + 1], "pair {e} cleared"),
        }
    }
    let cleared = pairs.iter().filter(|(_, p)| p.get().is_none()).count() as u64;
    assert_eq!(stats.refs.ephemeron.cleared, cleared);
    // SAFETY: no collection runs during the verification.
    unsafe { objects.verify() }.expect("the heap is intact");
    alive.try_into().unwrap()
}

#[test]
fn a_three_level_ephemeron_chain_survives_exactly_as_far_as_it_is_reachable() {
    for mode in [CollectorMode::StopTheWorld, CollectorMode::Concurrent] {
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let chain = |rooted| ephemeron_chain(mode, order, rooted);
            assert_eq!(chain(Some(0)), [true; 6], "{mode:?} {order:?}");
            assert_eq!(
                chain(Some(1)),
                [false, false, true, true, true, true],
                "{mode:?} {order:?}: from k2"
            );
            assert_eq!(
                chain(Some(2)),
                [false, false, false, false, true, true],
                "{mode:?} {order:?}: from k3"
            );
            assert_eq!(chain(None), [false; 6], "{mode:?} {order:?}");
        }
    }
}

#[test]
fn a_finalizer_resurrects_its_object_intact_and_runs_once() {
    // The concurrent collector clears weak handles in Pause Mark End, before
    // finalization, when finalization keeps objects alive.
    for mode in [CollectorMode::StopTheWorld, CollectorMode::Concurrent] {
        finalizer_resurrects(mode);
    }
}

fn finalizer_resurrects(mode: CollectorMode) {
    let objects = SimpleObjects::new();
    let rt = runtime_of(mode, Generations::YoungAndOld, objects.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    // F -> G, both unreachable once built; F registered.
    let f = build::object(&mut me, &roots, 1, 8, 7).unwrap();
    let g = build::object(&mut me, &roots, 0, 8, 8).unwrap();
    // SAFETY: both rooted and live; nothing collects here.
    unsafe { SimpleObjects::set_slot(&me, f, 0, Some(g)) };
    rt.register_finalizer(f).unwrap();
    assert_eq!(rt.finalizers_registered(), 1);
    let weak_f = rt.weak_handle(f);
    roots.clear();
    build::garbage(&mut me, &roots, 256, &mut ids).unwrap();
    let stats = me.collect().unwrap();
    assert_eq!(stats.refs.finalizable.found, 1);
    assert_eq!(stats.refs.finalizable.enqueued, 1);
    assert_eq!(stats.refs.finalizable.retained, 2, "F and what it reaches");
    assert_eq!(
        weak_f.get(),
        None,
        "weak handles are cleared before finalization"
    );
    assert_eq!(rt.finalizers_registered(), 0);
    // A second collection before the mutator looks keeps the queue alive.
    me.collect().unwrap();
    let queued = me.take_finalizable();
    assert_eq!(queued.len(), 1);
    let f = queued[0].get();
    // SAFETY: F is held by a handle; nothing collects during the checks.
    unsafe {
        SimpleObjects::check(f).expect("F intact");
        let g = SimpleObjects::slot(f, 0).expect("F still refers to G");
        SimpleObjects::check(g).expect("G intact");
        assert_eq!((id_of(f), id_of(g)), (7, 8));
    }
    assert!(me.take_finalizable().is_empty(), "queued once");
    // Resurrected: a root holds it now; it stays, and is not queued again.
    roots.push(Some(f));
    drop(queued);
    let weak_f = rt.weak_handle(f);
    me.collect().unwrap();
    assert!(
        me.take_finalizable().is_empty(),
        "each registration runs once"
    );
    let f = roots.get(0).unwrap();
    assert_eq!(weak_f.get(), Some(f));
    // SAFETY: rooted; nothing collects during the check.
    unsafe { SimpleObjects::check(f) }.expect("F intact after resurrection");
    // Dies again without a registration: collected, not queued.
    roots.clear();
    let stats = me.collect().unwrap();
    assert_eq!(stats.refs.finalizable.found, 0);
    assert!(me.take_finalizable().is_empty());
    assert_eq!(weak_f.get(), None);
}

#[test]
fn misuse_of_the_registry_is_a_typed_error_and_garbage_is_cleared() {
    let objects = SimpleObjects::new();
    let rt = runtime(Generations::Single, objects.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let outside = ObjectReference::from_address(hotmem::Address::new(0x1000)).unwrap();
    assert_eq!(
        rt.register_finalizer(outside),
        Err(FinalizerError::NotInHeap(outside))
    );
    let obj = build::object(&mut me, &roots, 0, 2, 1).unwrap();
    rt.register_finalizer(obj).unwrap();
    assert_eq!(
        rt.register_finalizer(obj),
        Err(FinalizerError::AlreadyRegistered(obj))
    );
    assert_eq!(rt.finalizers_registered(), 1);
    // Weak handles to garbage values: cleared by the next collection.
    let w_outside = rt.weak_handle(outside);
    let past_top = ObjectReference::from_address(obj.to_address() + (1 << 20)).unwrap();
    let w_free = rt.weak_handle(past_top);
    me.collect().unwrap();
    assert_eq!((w_outside.get(), w_free.get()), (None, None));
    assert_eq!(
        rt.finalizers_registered(),
        1,
        "the rooted object stays registered"
    );
    // SAFETY: no collection runs during the verification.
    unsafe { objects.verify() }.expect("the heap is intact");
}

/// A weak intern table by content (here: an object's id) on top of
/// [`SimpleObjects`]: the shape of a VM's string table.
#[derive(Default)]
struct Interned {
    objects: Arc<SimpleObjects>,
    table: Mutex<HashMap<u64, ObjectReference>>,
    /// What the hook should do wrong, for the misuse tests.
    misbehave: Mutex<Misbehave>,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Misbehave {
    #[default]
    No,
    RetainGarbage,
    AgainForever,
    Panic,
}

impl Binding for Interned {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        self.objects.scan_object(obj, v)
    }
    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, v: &mut V) {
        self.objects.scan_global_roots(v)
    }

    fn root_tables(&self, report: &mut dyn FnMut(&Arc<hotmem::RootTable>)) {
        self.objects.root_tables(report)
    }
    fn slot_at(&self, addr: hotmem::Address) -> Option<SimpleSlot> {
        self.objects.slot_at(addr)
    }
    fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
        let how = *self.misbehave.lock().unwrap();
        match how {
            Misbehave::No => {}
            Misbehave::RetainGarbage => {
                let garbage = ObjectReference::from_address(hotmem::Address::new(8)).unwrap();
                refs.retain(garbage);
            }
            Misbehave::AgainForever => return WeakPass::Again,
            Misbehave::Panic => panic!("the weak hook failed"),
        }
        self.table
            .lock()
            .unwrap()
            .retain(|_, obj| refs.is_live(*obj));
        WeakPass::Done
    }
    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        for obj in self.table.lock().unwrap().values_mut() {
            *obj = refs.forwarded(*obj);
        }
    }
}

impl Interned {
    /// The object with content `id`: the interned one, or a new one.
    fn intern(&self, me: &mut Mutator, roots: &RootTable, id: u64) -> ObjectReference {
        if let Some(&obj) = self.table.lock().unwrap().get(&id) {
            return obj;
        }
        let obj = unrooted(me, roots, 0, id);
        self.table.lock().unwrap().insert(id, obj);
        obj
    }
}

#[test]
fn a_weak_intern_table_keeps_exactly_the_live_strings() {
    const STRINGS: u64 = 1_000_000;
    for generations in [Generations::Single, Generations::YoungAndOld] {
        let vm = Arc::new(Interned::default());
        let rt = runtime(generations, vm.clone());
        let mut me = rt.attach_mutator().unwrap();
        let scratch = vm.objects.root_table();
        let kept = vm.objects.root_table();
        for id in 1..=STRINGS {
            let obj = vm.intern(&mut me, &scratch, id);
            if id % 10 == 0 {
                kept.push(Some(obj));
            }
        }
        // Interning again finds the same object.
        let again = vm.intern(&mut me, &scratch, 10);
        assert_eq!(Some(again), kept.get(0));
        let stats = me.collect().unwrap();
        assert!(stats.refs.binding_passes >= 1);
        let table = vm.table.lock().unwrap();
        assert_eq!(table.len() as u64, STRINGS / 10, "{generations:?}");
        for (i, root) in kept.roots().into_iter().enumerate() {
            let id = 10 * (i as u64 + 1);
            let obj = root.unwrap();
            assert_eq!(table.get(&id), Some(&obj), "found by content, where it is");
            assert_eq!(id_of(obj), id);
        }
        drop(table);
        // SAFETY: no collection runs during the verification.
        unsafe { vm.objects.verify() }.expect("the heap is intact");
    }
}

#[test]
fn a_misbehaving_weak_hook_fails_the_collection_and_leaves_the_heap_intact() {
    let vm = Arc::new(Interned::default());
    let rt = runtime(Generations::Single, vm.clone());
    let mut me = rt.attach_mutator().unwrap();
    let roots = vm.objects.root_table();
    let mut ids = Ids::from(1);
    let _ = build::list(&mut me, &roots, 100, 2, false, &mut ids).unwrap();
    for (how, check) in [
        (
            Misbehave::RetainGarbage,
            (|e: &GcError| matches!(e, GcError::InvalidReference { .. })) as fn(&GcError) -> bool,
        ),
        (Misbehave::AgainForever, |e| {
            matches!(e, GcError::WeakRefsDidNotConverge { .. })
        }),
        (
            Misbehave::Panic,
            |e| matches!(e, GcError::ObjectModelPanicked(m) if m.contains("weak hook")),
        ),
    ] {
        *vm.misbehave.lock().unwrap() = how;
        let e = me.collect().unwrap_err();
        assert!(check(&e), "{e}");
        *vm.misbehave.lock().unwrap() = Misbehave::No;
        me.collect().expect("the next collection works");
        // SAFETY: no collection runs during the verification.
        let sum = unsafe { vm.objects.verify() }.expect("the heap is intact");
        assert_eq!(sum.objects, 100);
    }
}

#[test]
fn an_ephemeron_follows_its_key_and_value_when_a_concurrent_cycle_moves_them() {
    // Forwarded after Pause Relocate Start (a read heals first), as the
    // root tables are.
    let objects = SimpleObjects::new();
    let rt = runtime_of(
        CollectorMode::Concurrent,
        Generations::Single,
        objects.clone(),
    );
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let mut moved = 0;
    for round in 0..8u64 {
        let ik = roots.len();
        let k = build::object(&mut me, &roots, 0, 2, 1000 + round).unwrap();
        let v = unrooted(&mut me, &roots, 0, 2000 + round);
        let e = rt.ephemeron(k, v);
        for filler in 0..4 {
            build::garbage(&mut me, &roots, 1 << 10, &mut ids).unwrap();
            build::object(&mut me, &roots, 0, 2, 4000 + filler).unwrap();
        }
        let stats = me.collect().unwrap();
        assert!(stats.concurrent.is_some());
        let (k_now, v_now) = e.get().expect("the key is rooted");
        assert_eq!(k_now, roots.get(ik).unwrap(), "the key's new address");
        assert_eq!((id_of(k_now), id_of(v_now)), (1000 + round, 2000 + round));
        moved += usize::from(k_now != k) + usize::from(v_now != v);
        // SAFETY: no collection runs during the verification.
        unsafe { objects.verify() }.expect("the heap is intact");
    }
    assert!(moved > 0, "a key or value moved at least once");
}

#[test]
fn a_registered_object_moved_by_concurrent_cycles_is_registered_once_at_its_new_address() {
    // The registry is forwarded after Pause Relocate Start when the root
    // tables are (a registration meanwhile forwards it first), in the
    // pause when they are; Pause Mark End looks only at what marking did
    // not reach.
    for visit in [RootTableVisit::Concurrent, RootTableVisit::InPause] {
        registered_objects_follow_their_moves(visit);
    }
}

fn registered_objects_follow_their_moves(visit: RootTableVisit) {
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .generations(Generations::Single)
        .root_table_visit(visit)
        .binding(objects.clone())
        .build()
        .expect("a runtime");
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let mut kept = Vec::new();
    let mut moved = 0;
    for round in 0..6u64 {
        // A registered object among garbage, so that its page is worth
        // evacuating.
        build::garbage(&mut me, &roots, 1 << 10, &mut ids).unwrap();
        kept.push((roots.len(), 5000 + round));
        let obj = build::object(&mut me, &roots, 0, 2, 5000 + round).unwrap();
        rt.register_finalizer(obj).unwrap();
        build::garbage(&mut me, &roots, 1 << 10, &mut ids).unwrap();
        let before: Vec<ObjectReference> =
            kept.iter().map(|&(i, _)| roots.get(i).unwrap()).collect();
        let stats = me.collect().unwrap();
        assert!(stats.concurrent.is_some());
        assert_eq!(stats.refs.finalizable.enqueued, 0, "all reachable");
        for (&(i, id), was) in kept.iter().zip(before) {
            let now = roots.get(i).unwrap();
            assert_eq!(id_of(now), id);
            moved += usize::from(now != was);
            assert_eq!(
                rt.register_finalizer(now),
                Err(FinalizerError::AlreadyRegistered(now)),
                "registered at its new address ({visit:?})"
            );
        }
        assert_eq!(rt.finalizers_registered(), kept.len());
    }
    assert!(
        moved > 0,
        "a registered object moved at least once ({visit:?})"
    );
    // Unreachable: each queued once, intact.
    for &(i, _) in &kept {
        roots.set(i, None);
    }
    me.collect().unwrap();
    let queued = me.take_finalizable();
    let mut got: Vec<u64> = queued.iter().map(|h| id_of(h.get())).collect();
    got.sort_unstable();
    let want: Vec<u64> = kept.iter().map(|&(_, id)| id).collect();
    assert_eq!(got, want, "{visit:?}");
    assert_eq!(rt.finalizers_registered(), 0);
    drop(queued);
    // SAFETY: no collection runs during the verification.
    unsafe { objects.verify() }.expect("the heap is intact");
}
