//! The concurrent collector: marking runs while a mutator allocates, links
//! and unlinks objects, and every cycle keeps exactly what is reachable
//! (a model of the graph says what that is), frees what is not, counts
//! its pauses and stalls, and processes weak references at mark end.

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{
    CollectionKind, CollectorMode, Generations, Mutator, ObjectReference, Runtime, WeakHandle,
    YoungInFull,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod common;

fn concurrent_runtime(heap: usize, objects: &Arc<SimpleObjects>) -> Runtime {
    generational_runtime(heap, objects, Generations::Single)
}

fn generational_runtime(
    heap: usize,
    objects: &Arc<SimpleObjects>,
    generations: Generations,
) -> Runtime {
    runtime_of(heap, objects, CollectorMode::Concurrent, generations)
}

fn runtime_of(
    heap: usize,
    objects: &Arc<SimpleObjects>,
    mode: CollectorMode,
    generations: Generations,
) -> Runtime {
    common::builder(heap, Some(2))
        .collector(mode)
        .generations(generations)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime")
}

/// With generations, a young concurrent cycle marks only what was
/// allocated since the last cycle began: the old objects are kept without
/// being visited, a young object that only an old one refers to is kept
/// through the slot the store barrier remembered (and evacuated from its
/// page of garbage, the old object's slot healed), young garbage is freed,
/// and what survives is old for the next young cycle.
#[test]
fn a_young_cycle_marks_from_the_remembered_slots_and_frees_young_garbage() {
    let objects = SimpleObjects::new();
    let rt = generational_runtime(64 << 20, &objects, Generations::YoungAndOld);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let tree = build::tree(&mut me, &roots, 8, 2, &mut ids).unwrap();
    build::object(&mut me, &roots, 2, 0, ids.next()).unwrap();
    let full = me.collect().unwrap();
    assert_eq!(full.kind, CollectionKind::Full);
    assert_eq!(full.objects_marked as usize, tree.objects + 1);
    // The holder is old now. A young object that only it refers to:
    let young = build::object(&mut me, &roots, 0, 4, ids.next()).unwrap();
    let holder = roots
        .get(roots.len() - 2)
        .expect("the holder, moved or not");
    // SAFETY: both are reachable, and this thread does not poll between
    // reading their addresses and the store.
    unsafe { SimpleObjects::set_slot(&me, holder, 0, Some(young)) };
    roots.pop();
    build::garbage(&mut me, &roots, 4 << 10, &mut ids).unwrap();
    // SAFETY: the only mutator, which does not poll during the walk.
    let want = unsafe { objects.verify_with(&me) }.unwrap();
    assert_eq!(want.objects, tree.objects + 2);
    let used = rt.heap().usage().used;
    let stats = me.collect_young().unwrap();
    assert_eq!(stats.kind, CollectionKind::Young);
    assert_eq!(stats.objects_marked, 1, "only the young object: {stats:?}");
    assert!(stats.pages_freed_empty > 0, "{stats:?}");
    // Its page was mostly garbage: evacuated, the copy old.
    assert_eq!(stats.objects_relocated, 1, "{stats:?}");
    assert!(rt.heap().usage().used < used);
    // SAFETY: as above.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
    // It survived: old for the next young cycle, which finds nothing.
    assert_eq!(me.collect_young().unwrap().objects_marked, 0);
    assert_eq!(me.collect().unwrap().objects_marked as usize, want.objects);
    // SAFETY: as above.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
}

/// A slot written while a full cycle marks, in an object that cycle then
/// moves, is remembered at the object's old address. The young object it
/// refers to must still be found, and when a young cycle moves that object
/// the copy's slot must be healed: the full cycle remembers its copies'
/// slots instead, and the old addresses are dropped.
#[test]
fn a_slot_written_during_a_full_cycle_into_an_object_it_moves_is_healed_by_young_cycles() {
    let objects = SimpleObjects::new();
    let rt = generational_runtime(64 << 20, &objects, Generations::YoungAndOld);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    // The holder among garbage (its page is evacuated by the full cycle),
    // and a tree that keeps the full cycle marking for a while.
    build::object(&mut me, &roots, 1, 0, ids.next()).unwrap();
    build::garbage(&mut me, &roots, 2 << 10, &mut ids).unwrap();
    build::tree(&mut me, &roots, 16, 2, &mut ids).unwrap();
    let full = common::BackgroundCycle::start(&rt);
    let marking = full.wait_for_marking(&rt, &mut me);
    // A young object among young garbage, known only to the holder.
    let young = build::object(&mut me, &roots, 0, 2, ids.next()).unwrap();
    let holder = roots.get(0).unwrap();
    // SAFETY: both reachable; no poll between reading them and the store.
    unsafe { SimpleObjects::set_slot(&me, holder, 0, Some(young)) };
    roots.pop();
    build::garbage(&mut me, &roots, 2 << 10, &mut ids).unwrap();
    let full = full.finish(&mut me).unwrap();
    // SAFETY: the only mutator, which does not poll during the walk.
    let want = unsafe { objects.verify_with(&me) }.unwrap();
    // The young object moves, then its old page is freed.
    let first = me.collect_young().unwrap();
    me.collect_young().unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
    let last = me.collect().unwrap();
    assert_eq!(last.objects_marked as usize, want.objects);
    // What this test exercised (the scheduler decides whether the store
    // fell in the marking; it did on every run seen).
    eprintln!(
        "store during marking: {marking}; full cycle relocated {}, young cycle {}",
        full.objects_relocated, first.objects_relocated
    );
}

#[test]
fn a_cycle_keeps_the_reachable_graph_frees_the_rest_and_logs_its_phases() {
    let objects = SimpleObjects::new();
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = records.clone();
    let output = hotmem::log::LogOutput::callback(move |r| sink.lock().unwrap().push(r.clone()));
    // The whole heap as the budget: no cycle starts on its own, so the
    // garbage is still there for the explicit one.
    let rt = common::builder(64 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .heap_sizing(hotmem::HeapSizing::Maximum)
        .log(hotmem::log::LogConfig::new().output("gc*=info".parse().unwrap(), output))
        .binding(objects.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let kept = build::tree(&mut me, &roots, 10, 2, &mut ids).unwrap();
    build::garbage(&mut me, &roots, 8 << 10, &mut ids).unwrap();
    let used = rt.heap().usage().used;
    let stats = me.collect().unwrap();
    let c = stats.concurrent.expect("a concurrent cycle");
    assert_eq!(stats.objects_marked as usize, kept.objects);
    assert!(stats.pages_freed_empty > 0, "{stats:?}");
    assert!(rt.heap().usage().used < used);
    assert!(c.cycle_ns >= c.mark_start_ns + c.concurrent_mark_ns + c.mark_end_ns);
    assert_eq!(
        stats.pause_ns,
        c.mark_start_ns + c.mark_end_ns + c.relocate_start_ns
    );
    // SAFETY: the only mutator; nothing collects during the check (the
    // walk reads through the load barrier: the tree's page may have moved).
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), kept);
    let totals = rt.gc_totals();
    assert_eq!(totals.concurrent_cycles, totals.cycles);
    rt.flush_log();
    let lines: Vec<String> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.to_string())
        .collect();
    for phase in ["Pause Mark Start ", "Concurrent Mark ", "Pause Mark End "] {
        assert!(
            lines.iter().any(|l| l.contains(phase)),
            "no {phase}line: {lines:#?}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Garbage Collection (Explicit)")),
        "{lines:#?}"
    );
}

#[test]
fn weak_handles_and_ephemerons_are_processed_at_mark_end() {
    let objects = SimpleObjects::new();
    let rt = concurrent_runtime(64 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let live = build::object(&mut me, &roots, 1, 2, 1).unwrap();
    let dead = build::object(&mut me, &roots, 0, 2, 2).unwrap();
    let value = build::object(&mut me, &roots, 0, 2, 3).unwrap();
    let (w_live, w_dead) = (rt.weak_handle(live), rt.weak_handle(dead));
    let eph = rt.ephemeron(live, value);
    roots.truncate(1);
    me.collect().unwrap();
    let live = roots.get(0).unwrap();
    assert_eq!(w_live.get(), Some(live), "it follows its object");
    assert_eq!(w_dead.get(), None);
    let (key, value) = eph.get().expect("the value lives while its key does");
    assert_eq!(key, live);
    // SAFETY: the only mutator; it does not poll during the check.
    assert_eq!(unsafe { SimpleObjects::header(value) }[1], 3);
}

/// A mutator that keeps allocating garbage with a small heap: cycles start
/// from the allocation rate on their own, and when the mutator outruns
/// them its allocations stall instead of failing.
#[test]
fn cycles_start_on_their_own_and_stalls_are_counted() {
    let objects = SimpleObjects::new();
    let rt = concurrent_runtime(32 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let kept = build::list(&mut me, &roots, 1000, 4, false, &mut ids).unwrap();
    for _ in 0..40 {
        build::garbage(&mut me, &roots, 4 << 10, &mut ids).unwrap();
    }
    let t = rt.gc_totals();
    assert!(t.concurrent_cycles >= 3, "{t:?}");
    assert_eq!(t.cycles, t.concurrent_cycles);
    drop(me);
    // Let a cycle that runs still finish, then check the graph.
    rt.collect().unwrap();
    let me = rt.attach_mutator().unwrap();
    // SAFETY: the only mutator; it does not poll during the check.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), kept);
}

/// A young cycle that makes no room for a stalled allocation is followed
/// by a full one: old garbage (below half the heap, so the old
/// generation's growth alone would not ask for a full cycle) leaves too
/// little room for a large object until a full cycle frees it.
#[test]
fn a_stalled_allocation_that_a_young_cycle_makes_no_room_for_gets_a_full_cycle() {
    const KIB: usize = 1 << 10;
    let objects = SimpleObjects::new();
    let rt = generational_runtime(32 << 20, &objects, Generations::YoungAndOld);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    // 10 MiB in objects of 256 KiB, made old by a full cycle, then dropped.
    for _ in 0..40 {
        build::object(&mut me, &roots, 0, 256 * KIB / 8, ids.next()).unwrap();
    }
    assert_eq!(me.collect().unwrap().kind, CollectionKind::Full);
    for _ in 0..40 {
        roots.pop();
    }
    let before = rt.gc_totals();
    // 24 MiB: more than the heap has left beside the old garbage.
    let big = build::object(&mut me, &roots, 0, 24 << 17, ids.next());
    let after = rt.gc_totals();
    assert!(big.is_ok(), "{big:?} after {after:?}");
    assert!(
        after.young_collections > before.young_collections,
        "{after:?}"
    );
    assert!(after.cycles - after.young_collections > before.cycles - before.young_collections);
    // The allocation stalled, and every stall is counted under the kind of
    // cycle that ran when it began (which kind depends on timing).
    assert!(after.stalls > before.stalls, "{after:?}");
    let by = after.stalls_by_cycle;
    assert_eq!(
        by.young.stalls + by.full.stalls + by.between.stalls,
        after.stalls
    );
    assert_eq!(by.young.ns + by.full.ns + by.between.ns, after.stall_ns);
    // SAFETY: the only mutator; it does not poll during the check.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap().objects, 1);
}

/// One object of the model.
#[derive(Clone, Debug)]
struct MObj {
    size: usize,
    slots: Vec<Option<u64>>,
    /// Where it is: a weak handle follows it when it moves.
    at: WeakHandle,
    /// Where it was allocated, if in the non-moving space: where it stays.
    fixed: Option<ObjectReference>,
}

#[derive(Clone, Debug)]
enum Op {
    Alloc { slots: usize, payload: usize },
    AllocNonMoving { slots: usize, payload: usize },
    Link { from: usize, slot: usize, to: usize },
    Unlink { from: usize, slot: usize },
    DropRoot { root: usize },
    Garbage { kib: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..5, 0usize..16).prop_map(|(slots, payload)| Op::Alloc { slots, payload }),
        1 => (0usize..5, 0usize..16)
            .prop_map(|(slots, payload)| Op::AllocNonMoving { slots, payload }),
        6 => (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(from, slot, to)| Op::Link { from, slot, to }),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(from, slot)| Op::Unlink { from, slot }),
        2 => any::<usize>().prop_map(|root| Op::DropRoot { root }),
        1 => (8usize..512).prop_map(|kib| Op::Garbage { kib }),
    ]
}

/// The mutator's side: the real graph and its model. Every object the
/// model holds is reachable (the unreachable ones are forgotten at once),
/// so an object the mutator links is never one a cycle may have freed.
struct World {
    me: Mutator,
    roots: Arc<RootTable>,
    objs: BTreeMap<u64, MObj>,
    /// Root table index -> object id.
    root_ids: HashMap<usize, u64>,
    ids: Ids,
}

impl World {
    /// Object `id`'s address now.
    fn at(&self, id: u64) -> ObjectReference {
        self.objs[&id].at.get().expect("a reachable object")
    }

    fn pick(&self, i: usize) -> Option<u64> {
        (!self.objs.is_empty()).then(|| *self.objs.keys().nth(i % self.objs.len()).unwrap())
    }

    fn reachable(&self) -> BTreeSet<u64> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<u64> = self.root_ids.values().copied().collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(self.objs[&id].slots.iter().flatten());
            }
        }
        seen
    }

    fn forget_unreachable(&mut self) {
        let live = self.reachable();
        self.objs.retain(|id, _| live.contains(id));
    }

    fn check(&self) {
        let mut want = GraphSummary::default();
        for (id, o) in &self.objs {
            let targets: Vec<u64> = o.slots.iter().map(|t| t.unwrap_or(0)).collect();
            want.add(*id, o.size, &targets);
        }
        let starts: Vec<ObjectReference> = self
            .root_ids
            .keys()
            .map(|&i| self.roots.get(i).unwrap())
            .collect();
        // SAFETY: this thread is the only mutator and does not poll or
        // allocate during the check: no pause can run meanwhile. Each slot
        // is read through the load barrier (objects move concurrently).
        let found = unsafe { SimpleObjects::verify_from_with(&self.me, starts) }.unwrap();
        assert_eq!(found, want, "the reachable graph differs from the model");
        for (id, o) in &self.objs {
            // SAFETY: as above.
            assert_eq!(unsafe { SimpleObjects::header(self.at(*id)) }[1], *id);
            if let Some(fixed) = o.fixed {
                assert_eq!(self.at(*id), fixed, "a non-moving object moved");
            }
        }
    }

    fn run(&mut self, op: &Op) {
        match *op {
            Op::Alloc { slots, payload } | Op::AllocNonMoving { slots, payload } => {
                let id = self.ids.next();
                let non_moving = matches!(op, Op::AllocNonMoving { .. });
                let (me, roots) = (&mut self.me, &self.roots);
                let at = match non_moving {
                    true => build::non_moving_object(me, roots, slots, payload, id),
                    false => build::object(me, roots, slots, payload, id),
                }
                .unwrap();
                let size = SimpleObjects::size_for(slots, payload);
                self.root_ids.insert(self.roots.len() - 1, id);
                let fixed = non_moving.then_some(at);
                let at = self.me.runtime().weak_handle(at);
                self.objs.insert(
                    id,
                    MObj {
                        size,
                        slots: vec![None; slots],
                        at,
                        fixed,
                    },
                );
            }
            Op::Link { from, slot, to } => {
                let (Some(f), Some(t)) = (self.pick(from), self.pick(to)) else {
                    return;
                };
                let n = self.objs[&f].slots.len();
                if n == 0 {
                    return;
                }
                let (fa, ta) = (self.at(f), self.at(t));
                // SAFETY: both are reachable (the model holds only those):
                // no cycle frees them, and this thread does not poll
                // between reading their addresses and the store.
                unsafe { SimpleObjects::set_slot(&self.me, fa, slot % n, Some(ta)) };
                self.objs.get_mut(&f).unwrap().slots[slot % n] = Some(t);
            }
            Op::Unlink { from, slot } => {
                let Some(f) = self.pick(from) else { return };
                let n = self.objs[&f].slots.len();
                if n == 0 {
                    return;
                }
                // SAFETY: as for Link.
                unsafe { SimpleObjects::set_slot(&self.me, self.at(f), slot % n, None) };
                self.objs.get_mut(&f).unwrap().slots[slot % n] = None;
            }
            Op::DropRoot { root } => {
                if self.root_ids.is_empty() {
                    return;
                }
                let mut keys: Vec<usize> = self.root_ids.keys().copied().collect();
                keys.sort_unstable();
                let i = keys[root % keys.len()];
                self.root_ids.remove(&i);
                self.roots.set(i, None);
            }
            Op::Garbage { kib } => {
                build::garbage(&mut self.me, &self.roots, kib, &mut self.ids).unwrap();
            }
        }
        self.forget_unreachable();
        self.me.poll();
    }
}

/// Random graph mutations while cycles run back to back on the GC thread
/// (a second thread asks for the next one as soon as one ends). With
/// generations, three young cycles for each full one.
fn mutate_during_cycles(ops: &[Op], mode: CollectorMode, generations: Generations) {
    mutate_during_cycles_with(ops, mode, generations, YoungInFull::default());
}

/// [`mutate_during_cycles`], with young cycles inside full ones as
/// `young_in_full` says.
fn mutate_during_cycles_with(
    ops: &[Op],
    mode: CollectorMode,
    generations: Generations,
    young_in_full: YoungInFull,
) {
    let objects = SimpleObjects::new();
    // The non-moving collector compacts nothing, and with two generations
    // each cycle retires the mutator's page at its start: with cycles back
    // to back, every object the case allocates may keep a 2 MiB page of
    // its own in use (a case's last full cycle found 58 objects in 10
    // pages). Its heap has room for that besides the others' 64 MiB; a
    // 64 MiB heap ran out in about half the runs of this case alone. With
    // one generation the mutator keeps its pages across cycles: 64 MiB.
    let heap = match (mode, generations) {
        (CollectorMode::ConcurrentNonMoving, Generations::YoungAndOld) => {
            let objects = ops
                .iter()
                .filter(|op| matches!(op, Op::Alloc { .. } | Op::AllocNonMoving { .. }));
            (64 << 20) + objects.count() * (2 << 20)
        }
        _ => 64 << 20,
    };
    let rt = common::builder(heap, Some(2))
        .collector(mode)
        .generations(generations)
        .young_in_full(young_in_full)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let collector = {
        let (rt, stop) = (rt.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut cycles = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let young = generations == Generations::YoungAndOld && cycles % 4 != 3;
                let stats = match young {
                    true => rt.collect_young(),
                    false => rt.collect(),
                };
                let stats = stats.expect("a concurrent cycle");
                // After each round of its marking (it has one at least),
                // once a young cycle ran.
                if young_in_full == YoungInFull::EachRound && !young {
                    let inside = stats.concurrent.unwrap().young_cycles_inside;
                    assert!(inside >= 1, "young cycles inside a full one: {inside}");
                }
                cycles += 1;
            }
            cycles
        })
    };
    let mut w = World {
        me: rt.attach_mutator().unwrap(),
        roots: objects.root_table(),
        objs: BTreeMap::new(),
        root_ids: HashMap::new(),
        ids: Ids::from(1),
    };
    for (i, op) in ops.iter().enumerate() {
        w.run(op);
        if i % 16 == 0 {
            w.check();
        }
    }
    w.check();
    drop(w.me);
    stop.store(true, Ordering::Relaxed);
    // How many cycles overlapped the mutations depends on the scheduler;
    // what each one did is what the checks above saw.
    let cycles = collector.join().unwrap();
    // A young cycle ran (the first is young), and one more takes the young
    // set that the last full cycle's young cycles installed out of the
    // barrier: young cycles run inside the next full one.
    let inside = young_in_full == YoungInFull::EachRound && cycles > 0;
    if inside {
        rt.collect_young().unwrap();
    }
    // With no mutator left, one more cycle: exactly the model's objects.
    let stats = rt.collect().unwrap();
    assert_eq!(stats.objects_marked as usize, w.objs.len());
    if inside {
        assert!(stats.concurrent.unwrap().young_cycles_inside >= 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 24 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_mutations_during_concurrent_cycles_keep_what_is_reachable(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        mutate_during_cycles(&ops, CollectorMode::Concurrent, Generations::Single);
    }

    #[test]
    fn random_mutations_during_young_and_full_concurrent_cycles_keep_what_is_reachable(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        mutate_during_cycles(&ops, CollectorMode::Concurrent, Generations::YoungAndOld);
    }

    /// With a young cycle after every round of each full cycle's marking,
    /// while the mutator runs: the young cycles free and promote what the
    /// mutator allocated since the full cycle began, and hand the full
    /// marking the logs they take.
    #[test]
    fn random_mutations_during_young_cycles_inside_full_ones_keep_what_is_reachable(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        mutate_during_cycles_with(
            &ops,
            CollectorMode::Concurrent,
            Generations::YoungAndOld,
            YoungInFull::EachRound,
        );
    }

    /// Cycles that move nothing, the mutator's pages kept across them.
    #[test]
    fn random_mutations_during_non_moving_cycles_keep_what_is_reachable(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        mutate_during_cycles(&ops, CollectorMode::ConcurrentNonMoving, Generations::Single);
    }

    /// Young cycles that move nothing (they promote every young page at
    /// Pause Mark Start instead).
    #[test]
    fn random_mutations_during_young_and_full_non_moving_cycles_keep_what_is_reachable(
        ops in prop::collection::vec(op(), 1..300)
    ) {
        mutate_during_cycles(&ops, CollectorMode::ConcurrentNonMoving, Generations::YoungAndOld);
    }
}

/// Without moving and with one generation, a cycle leaves the mutator the
/// pages it allocates in: one survivor allocated before each of 40 cycles
/// shares a page with the others (6 MiB in use at the end), where a page
/// retired at every mark start kept 40 pages (80 MiB) in use for them.
#[test]
fn non_moving_cycles_leave_the_mutator_its_pages_so_survivors_share_them() {
    let objects = SimpleObjects::new();
    let rt = runtime_of(
        128 << 20,
        &objects,
        CollectorMode::ConcurrentNonMoving,
        Generations::Single,
    );
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    for _ in 0..40 {
        build::object(&mut me, &roots, 0, 4, ids.next()).unwrap();
        build::garbage(&mut me, &roots, 64, &mut ids).unwrap();
        let stats = me.collect().unwrap();
        assert_eq!(stats.objects_relocated, 0);
    }
    let used = rt.heap().usage().used;
    assert!(used <= 8 << 20, "{} MiB in use", used >> 20);
    // SAFETY: the only mutator, which does not poll during the walk.
    let now = unsafe { objects.verify_with(&me) }.unwrap();
    assert_eq!(now.objects, 40);
}

/// The snapshot's case: while marking runs, every reference to a group of
/// objects moves from an object that marking reaches last (at the end of a
/// long list) to one it reached first (a root). Only the barrier's log of
/// the overwritten references keeps them marked; the cycle must mark every
/// object reachable at its start.
#[test]
fn references_moved_during_marking_are_not_lost() {
    move_references_during_marking(64, 1);
}

/// The same with more to trace from the log than Pause Mark End traces on
/// the GC thread alone (900 lists of 20 objects: 18 000 objects, where it
/// stops after about 1 000 and hands the rest to the workers), when the
/// moves come after the last concurrent round; the partial log buffer
/// (under 1024 entries) waits for the pause.
#[test]
fn long_lists_moved_during_marking_are_traced_past_the_pause_budget() {
    move_references_during_marking(900, 20);
}

/// Moves `MOVED` lists of `chain` objects as above; checks that the cycle
/// marks every object reachable at its start.
#[allow(non_snake_case)]
fn move_references_during_marking(MOVED: usize, chain: usize) {
    const LIST: usize = 50_000;
    let objects = SimpleObjects::new();
    let rt = concurrent_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    // Root 0: the safe object, empty. Root 1: a long list whose last node
    // refers to the holder, whose slots refer to the moved objects.
    build::object(&mut me, &roots, MOVED, 0, ids.next()).unwrap();
    build::list(&mut me, &roots, LIST, 0, false, &mut ids).unwrap();
    let holder = build::object(&mut me, &roots, MOVED, 0, ids.next()).unwrap();
    for i in 0..MOVED {
        let x = match chain {
            1 => build::object(&mut me, &roots, 0, 4, ids.next()).unwrap(),
            _ => {
                build::list(&mut me, &roots, chain, 4, false, &mut ids).unwrap();
                roots.last().unwrap()
            }
        };
        let holder = roots.get(2).unwrap();
        // SAFETY: both live and rooted; nothing collects here.
        unsafe { SimpleObjects::set_slot(&me, holder, i, Some(x)) };
        roots.pop();
    }
    let mut tail = roots.get(1).unwrap();
    // SAFETY: the list's nodes are live; nothing collects while walking it.
    while let Some(next) = unsafe { SimpleObjects::load_slot(&me, tail, 0) } {
        tail = next;
    }
    // The tail's slot 0 is null: give it the holder (the list was built
    // with one slot per node).
    // SAFETY: both live.
    unsafe { SimpleObjects::set_slot(&me, tail, 0, Some(holder)) };
    roots.pop();
    let expected = 1 + LIST + 1 + MOVED * chain;
    // Move as soon as marking runs (the move happens after the cycle,
    // harmlessly, if this thread saw no marking: the scheduler decides).
    let cycle = common::cycle_in_marking(&rt, &mut me);
    let (safe, holder) = (roots.get(0).unwrap(), me.resolve(holder));
    for i in 0..MOVED {
        // SAFETY: both live (the holder is reachable through the list).
        unsafe {
            let x = SimpleObjects::load_slot(&me, holder, i).unwrap();
            SimpleObjects::set_slot(&me, safe, i, Some(x));
            SimpleObjects::set_slot(&me, holder, i, None);
        }
    }
    drop(me);
    let stats = cycle.join().unwrap();
    assert_eq!(
        stats.objects_marked as usize, expected,
        "every object reachable at mark start"
    );
    let stats = rt.collect().unwrap();
    assert_eq!(
        stats.objects_marked as usize, expected,
        "and all of them after"
    );
    let me = rt.attach_mutator().unwrap();
    // SAFETY: the only mutator; it does not poll during the check.
    unsafe {
        for i in 0..MOVED {
            let x = SimpleObjects::load_slot(&me, roots.get(0).unwrap(), i).unwrap();
            SimpleObjects::check(x).expect("a moved object is intact");
        }
    }
}

/// An object only a weak handle refers to, read from the handle while
/// marking runs and made strongly reachable: the cycle must keep it (the
/// snapshot did not see it as strongly reachable).
#[test]
fn an_object_read_from_a_weak_handle_during_marking_is_kept() {
    const LIST: usize = 50_000;
    let objects = SimpleObjects::new();
    let rt = concurrent_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    build::list(&mut me, &roots, LIST, 0, false, &mut ids).unwrap();
    let weakly = build::object(&mut me, &roots, 0, 4, ids.next()).unwrap();
    roots.pop();
    let weak = rt.weak_handle(weakly);
    let cycle = common::cycle_in_marking(&rt, &mut me);
    // Read while marking runs (or after the cycle: then the handle was
    // cleared, and there is nothing to keep).
    let read = weak.get();
    roots.push(read);
    drop(me);
    cycle.join().unwrap();
    let stats = rt.collect().expect("no root refers to freed memory");
    match read {
        Some(_) => {
            // Where the object is now (the cycles may have moved it).
            let obj = roots.last().unwrap();
            assert_eq!(weak.get(), Some(obj), "kept: strongly reachable now");
            assert_eq!(stats.objects_marked as usize, LIST + 1);
            // SAFETY: rooted; no mutator attached.
            unsafe { SimpleObjects::check(obj) }.expect("intact");
        }
        None => assert_eq!(stats.objects_marked as usize, LIST),
    }
}
