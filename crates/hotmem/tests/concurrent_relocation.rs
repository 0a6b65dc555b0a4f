//! Concurrent relocation: a concurrent cycle evacuates sparse pages while
//! the mutators run, the load barrier hands out the new copies and heals
//! the slots, the next cycle's marking heals the rest and frees the
//! evacuated pages, pinned objects stay, and a binding whose slots cannot
//! be healed atomically is refused at build time.

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::{
    BarrierSet, BuildError, CollectorMode, HeapSizing, Mutator, ObjectReference, Runtime,
    WithBarriers,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod common;
use common::PlainBinding;

fn concurrent_runtime(heap: usize, objects: &Arc<SimpleObjects>) -> Runtime {
    common::builder(heap, Some(2))
        .collector(CollectorMode::Concurrent)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime")
}

/// A concurrent runtime whose cycles run only when asked for (the whole
/// heap is the budget, so that no cycle starts on its own): each test
/// knows which cycle moved what.
fn on_demand_runtime(heap: usize, objects: &Arc<SimpleObjects>) -> Runtime {
    common::builder(heap, Some(2))
        .collector(CollectorMode::Concurrent)
        .heap_sizing(HeapSizing::Maximum)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime")
}

/// An array object (root 0) of `n` slots, each referring to an object of
/// its own with one slot and `payload` words; then every slot but one in
/// `keep_every` is cleared: the elements' pages are mostly garbage. The
/// summary of what stays reachable.
fn sparse_array(
    me: &mut Mutator,
    objects: &SimpleObjects,
    roots: &RootTable,
    n: usize,
    keep_every: usize,
    payload: usize,
) -> GraphSummary {
    let mut ids = Ids::from(1);
    build::object(me, roots, n, 0, ids.next()).unwrap();
    for i in 0..n {
        let e = build::object(me, roots, 1, payload, ids.next()).unwrap();
        roots.pop();
        let array = roots.get(0).unwrap();
        // SAFETY: both live (rooted or just allocated); no poll since.
        unsafe { SimpleObjects::set_slot(me, array, i, Some(e)) };
    }
    let array = roots.get(0).unwrap();
    for i in (0..n).filter(|i| i % keep_every != 0) {
        // SAFETY: the array is live; nothing collects here.
        unsafe { SimpleObjects::set_slot(me, array, i, None) };
    }
    // SAFETY: the only mutator; it does not poll during the walk.
    unsafe { objects.verify_with(me) }.unwrap()
}

/// The elements' addresses now, read through the barrier.
fn elements(me: &Mutator, roots: &RootTable, n: usize) -> Vec<Option<ObjectReference>> {
    let array = roots.get(0).unwrap();
    // SAFETY: the array is live; `me` does not poll meanwhile.
    (0..n)
        .map(|i| unsafe { SimpleObjects::load_slot(me, array, i) })
        .collect()
}

#[test]
fn a_cycle_evacuates_sparse_pages_and_the_next_frees_them() {
    const N: usize = 40_000;
    let objects = SimpleObjects::new();
    let (log, lines) = log_lines();
    let rt = common::builder(128 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .heap_sizing(HeapSizing::Maximum)
        .log(log)
        .binding(objects.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let kept = sparse_array(&mut me, &objects, &roots, N, 8, 30);
    let before = elements(&me, &roots, N);
    let first = me.collect().unwrap();
    let c = first.concurrent.expect("a concurrent cycle");
    assert!(c.relocation_set_pages > 0, "{first:?}");
    assert!(first.objects_relocated > 0, "{first:?}");
    assert_eq!(first.pages_evacuation_incomplete, 0);
    assert!(c.relocate_start_ns > 0 && c.concurrent_relocate_ns > 0);
    assert_eq!(
        first.pause_ns,
        c.mark_start_ns + c.mark_end_ns + c.relocate_start_ns
    );
    // Every kept element is intact, and the moved ones have new addresses.
    // SAFETY: the only mutator; no poll during the walk.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), kept);
    let after = elements(&me, &roots, N);
    let moved = (before.iter().zip(&after))
        .filter(|(b, a)| b.is_some() && b != a)
        .count();
    assert!(moved > 0, "no element has a new address");
    // The next cycle heals what is left and frees the evacuated pages.
    let used = rt.heap().usage().used;
    let second = me.collect().unwrap();
    assert!(
        second.pages_freed_empty >= c.relocation_set_pages,
        "the first cycle's {} pages, freed: {second:?}",
        c.relocation_set_pages
    );
    assert!(rt.heap().usage().used < used);
    assert_eq!(second.objects_marked, first.objects_marked);
    // SAFETY: as above.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), kept);
    rt.flush_log();
    let lines = lines.lock().unwrap();
    for phase in [
        "Pause Mark Start ",
        "Concurrent Mark ",
        "Pause Mark End ",
        "Concurrent Process Non-Strong References ",
        "Concurrent Select Relocation Set ",
        "Pause Relocate Start ",
        "Concurrent Relocate ",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(phase)),
            "no {phase}line: {lines:#?}"
        );
    }
}

/// The load barrier's test on a raw address (`Mutator::may_be_stale`,
/// `BarrierSet::may_be_stale`, what a binding of tagged words calls on the
/// address it decoded): true exactly for the addresses the relocation set
/// moved, which `after_load` then forwards; false for everything else, and
/// always with the stop-the-world collector.
#[test]
fn the_raw_address_test_flags_exactly_the_moved_objects() {
    const N: usize = 20_000;
    let objects = SimpleObjects::new();
    let rt = on_demand_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    sparse_array(&mut me, &objects, &roots, N, 8, 30);
    let c = me
        .collect()
        .unwrap()
        .concurrent
        .expect("a concurrent cycle");
    assert!(c.relocation_set_pages > 0);
    let array = roots.get(0).unwrap();
    // Each slot read directly, as a binding reads its word: what it holds
    // may be an old copy's address until the barrier heals it.
    // SAFETY: the array is live; `me` does not poll from here on.
    let raw: Vec<(usize, ObjectReference)> = (0..N)
        .filter_map(|i| unsafe { SimpleObjects::slot(array, i) }.map(|r| (i, r)))
        .collect();
    let addrs: Vec<usize> = raw.iter().map(|(_, r)| r.get()).collect();
    let by_mutator: Vec<bool> = addrs.iter().map(|&a| me.may_be_stale(a)).collect();
    let by_set = rt.with_barriers(SetTests {
        me: &me,
        addrs: &addrs,
    });
    assert_eq!(by_mutator, by_set);
    let mut stale = 0;
    for (&(i, was), flagged) in raw.iter().zip(by_mutator) {
        // SAFETY: as above.
        let now = unsafe { SimpleObjects::load_slot(&me, array, i) }.unwrap();
        assert_eq!(flagged, now != was, "slot {i}: {was:?} -> {now:?}");
        stale += usize::from(flagged);
        // Healed: the slot holds the new copy, which is not stale.
        // SAFETY: as above.
        let healed = unsafe { SimpleObjects::slot(array, i) }.unwrap();
        assert_eq!(healed, now);
        assert!(!me.may_be_stale(healed.get()));
    }
    assert!(stale > 0, "no element moved");
    // The array (read through its root, so current) and an object
    // allocated since are not stale; nor is anything that is no object.
    let fresh = build::object(&mut me, &roots, 0, 0, 0).unwrap();
    let array = roots.get(0).unwrap();
    for addr in [
        array.get(),
        fresh.get(),
        0,
        1,
        8,
        usize::MAX,
        usize::MAX - 7,
    ] {
        assert!(!me.may_be_stale(addr), "{addr:#x}");
    }
    // The stop-the-world collector moves nothing while the mutators run.
    let objects = SimpleObjects::new();
    let stw = common::builder(64 << 20, Some(2))
        .binding(objects.clone())
        .build()
        .unwrap();
    let me = stw.attach_mutator().unwrap();
    let every = stw.with_barriers(SetTests {
        me: &me,
        addrs: &addrs,
    });
    assert!(every.iter().all(|&s| !s));
    assert!(addrs.iter().all(|&a| !me.may_be_stale(a)));
}

/// `BarrierSet::may_be_stale` of each address, in code compiled for the
/// runtime's set.
struct SetTests<'a> {
    me: &'a Mutator,
    addrs: &'a [usize],
}

impl WithBarriers for SetTests<'_> {
    type Output = Vec<bool>;
    fn run<B: BarrierSet>(self, b: B) -> Vec<bool> {
        self.addrs
            .iter()
            .map(|&a| b.may_be_stale(self.me, a))
            .collect()
    }
}

/// A log of `gc*=info` into a list of text lines.
fn log_lines() -> (hotmem::log::LogConfig, Arc<std::sync::Mutex<Vec<String>>>) {
    let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    let output =
        hotmem::log::LogOutput::callback(move |r| sink.lock().unwrap().push(r.to_string()));
    let config = hotmem::log::LogConfig::new().output("gc*=info".parse().unwrap(), output);
    (config, lines)
}

#[test]
fn weak_references_follow_their_moved_objects() {
    const N: usize = 20_000;
    let objects = SimpleObjects::new();
    let rt = on_demand_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    sparse_array(&mut me, &objects, &roots, N, 16, 30);
    let live: Vec<ObjectReference> = elements(&me, &roots, N).into_iter().flatten().collect();
    let weak: Vec<_> = live.iter().map(|&o| rt.weak_handle(o)).collect();
    let stats = me.collect().unwrap();
    assert!(stats.objects_relocated > 0, "{stats:?}");
    let now: Vec<ObjectReference> = elements(&me, &roots, N).into_iter().flatten().collect();
    let followed: Vec<_> = weak.iter().map(|w| w.get().expect("live")).collect();
    assert_eq!(
        followed, now,
        "each weak handle holds its object's new address"
    );
    me.collect().unwrap();
    let followed: Vec<_> = weak.iter().map(|w| w.get().expect("live")).collect();
    assert_eq!(
        followed,
        elements(&me, &roots, N)
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_pinned_object_stays_where_it_is() {
    const N: usize = 20_000;
    let objects = SimpleObjects::new();
    let rt = on_demand_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    sparse_array(&mut me, &objects, &roots, N, 16, 30);
    let before = elements(&me, &roots, N);
    let pinned: Vec<ObjectReference> = before.iter().flatten().take(1).copied().collect();
    let guards: Vec<_> = pinned.iter().map(|&o| me.pin(o)).collect();
    let stats = me.collect().unwrap();
    assert!(
        stats.objects_relocated > 0,
        "the other pages move: {stats:?}"
    );
    let after = elements(&me, &roots, N);
    for p in &pinned {
        assert!(after.contains(&Some(*p)), "pinned {p} moved");
    }
    drop(guards);
}

/// A pin taken while marking runs (after mark start saw the pins) keeps
/// its object's page out of the relocation set at Pause Relocate Start.
#[test]
fn an_object_pinned_during_marking_stays_where_it_is() {
    const N: usize = 20_000;
    let objects = SimpleObjects::new();
    let rt = on_demand_runtime(128 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    sparse_array(&mut me, &objects, &roots, N, 16, 30);
    // A long list, so that marking takes a while.
    build::list(&mut me, &roots, 100_000, 0, false, &mut Ids::from(1 << 40)).unwrap();
    let before = elements(&me, &roots, N);
    let cycle = common::cycle_in_marking(&rt, &mut me);
    // Pinned during marking (or after the cycle, if this thread never saw
    // it mark: the scheduler decides; the object must not move either way).
    let obj = me.resolve(before[0].unwrap());
    let guard = me.pin(obj);
    while !cycle.is_finished() {
        me.poll();
        std::thread::yield_now();
    }
    cycle.join().unwrap();
    assert_eq!(
        elements(&me, &roots, N)[0],
        Some(obj),
        "the pinned object moved"
    );
    drop(guard);
}

/// A mutator reads, checks and rewires the graph through the barriers
/// while cycles run back to back on another thread: every object it
/// reaches is intact, and the graph at the end is what it built. The
/// heap starts fragmented, so that the first cycle has pages to evacuate
/// whatever the scheduler does.
#[test]
fn a_mutator_works_through_the_barriers_while_objects_move() {
    const N: usize = 30_000;
    let objects = SimpleObjects::new();
    let rt = concurrent_runtime(96 << 20, &objects);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    sparse_array(&mut me, &objects, &roots, N, 4, 30);
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = {
        let (rt, stop) = (rt.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            while n < 3 || !stop.load(Ordering::Relaxed) {
                rt.collect().expect("a concurrent cycle");
                n += 1;
            }
            n
        })
    };
    let mut ids = Ids::from(1_000_000);
    // The model: element ids by index (0: null), as `sparse_array` left them.
    let mut model: Vec<u64> = (0..N)
        .map(|i| if i % 4 == 0 { i as u64 + 2 } else { 0 })
        .collect();
    let mut rng = 0x9e37_79b9u64;
    for round in 0..40 {
        // Swap pairs of elements, check everything reached, replace an
        // element with a fresh object now and then; poll between rounds.
        for _ in 0..500 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let (i, j) = ((rng % N as u64) as usize, ((rng >> 20) % N as u64) as usize);
            let array = roots.get(0).unwrap();
            // SAFETY: the array is live and rooted; no poll until the
            // round ends.
            unsafe {
                let a = SimpleObjects::load_slot(&me, array, i);
                let b = SimpleObjects::load_slot(&me, array, j);
                for (x, want) in [(a, model[i]), (b, model[j])] {
                    let got = x.map_or(0, |x| {
                        SimpleObjects::check(x).expect("an element is intact");
                        SimpleObjects::header(x)[1]
                    });
                    assert_eq!(got, want, "the element the model holds");
                }
                SimpleObjects::set_slot(&me, array, i, b);
                SimpleObjects::set_slot(&me, array, j, a);
            }
            model.swap(i, j);
        }
        if round % 4 == 0 {
            let id = ids.next();
            let e = build::object(&mut me, &roots, 1, 30, id).unwrap();
            roots.pop();
            let array = roots.get(0).unwrap();
            // SAFETY: both live; no poll since the allocation.
            unsafe { SimpleObjects::set_slot(&me, array, round, Some(e)) };
            model[round] = id;
        }
        me.poll();
    }
    stop.store(true, Ordering::Relaxed);
    // The cycles' pauses wait for this mutator: it polls until they end.
    while !cycles.is_finished() {
        me.poll();
        std::thread::yield_now();
    }
    assert!(cycles.join().unwrap() >= 3);
    let totals = rt.gc_totals();
    assert!(totals.objects_relocated > 0, "{totals:?}");
    let mut want = GraphSummary::default();
    want.add(1, SimpleObjects::size_for(N, 0), &model);
    for &id in model.iter().filter(|&&id| id != 0) {
        want.add(id, SimpleObjects::size_for(1, 30), &[0]);
    }
    // SAFETY: the only mutator; no poll during the walk.
    assert_eq!(unsafe { objects.verify_with(&me) }.unwrap(), want);
    drop(me);
    let last = rt.collect().unwrap();
    assert_eq!(last.objects_marked as usize, want.objects);
}

#[test]
fn a_binding_whose_slots_cannot_heal_is_refused_or_runs_without_moving() {
    let err = common::builder(16 << 20, Some(1))
        .collector(CollectorMode::Concurrent)
        .binding(Arc::new(PlainBinding))
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::Config(_)), "{err}");
    let rt = common::builder(16 << 20, Some(1))
        .collector(CollectorMode::ConcurrentNonMoving)
        .binding(Arc::new(PlainBinding))
        .build()
        .unwrap();
    let stats = rt.collect().unwrap();
    assert_eq!(stats.objects_relocated, 0);
}
