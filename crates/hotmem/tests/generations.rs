//! Young collections (`Generations::YoungAndOld`): they mark only young
//! objects, from the roots and from the slots the store barrier
//! remembered, and free or move only young pages. What must hold: a young
//! object that only an old one refers to survives and the old slot is
//! updated when it moves; young garbage is reclaimed at once, old garbage
//! by the next full collection; a pinned young object stays where it is;
//! a binding that cannot rebuild slots gets full collections; the heap
//! filling with old objects brings a full collection; the survivors of
//! successive young collections share the old pages they are copied to; a
//! young page kept where it is reports the old age.

use hotmem::objects::{GraphSummary, Ids, RootTable, SimpleObjects, build};
use hotmem::page::PageInfo;
use hotmem::{
    Age, BarrierKind, BarrierSet, Binding, CollectionKind, Generations, Mutator, ObjectReference,
    Runtime, SimpleSlot, SlotVisitor, WithBarriers,
};
use std::sync::Arc;

mod common;
use common::{HOLDER_SLOTS, garbage, holder_and_young, moved, young_into_holder};

fn runtime(objects: &Arc<SimpleObjects>, generations: Generations) -> Runtime {
    // Collections run when the tests ask for them (or the heap is full):
    // the tests count what each one found.
    common::builder(64 << 20, Some(2))
        .heap_sizing(hotmem::HeapSizing::Maximum)
        .generations(generations)
        .binding(objects.clone())
        .build()
        .unwrap()
}

/// A runtime with young collections over [`SimpleObjects`], its root
/// table, an attached mutator and fresh object ids.
fn young_runtime() -> (Arc<SimpleObjects>, Runtime, Arc<RootTable>, Mutator, Ids) {
    let objects = SimpleObjects::new();
    let rt = runtime(&objects, Generations::YoungAndOld);
    let roots = objects.root_table();
    let me = rt.attach_mutator().unwrap();
    (objects, rt, roots, me, Ids::from(1))
}

#[test]
fn young_objects_only_an_old_one_refers_to_survive_and_move() {
    let (objects, rt, roots, mut me, mut ids) = young_runtime();

    // The holder becomes old in the first collection.
    let holder_id = ids.next();
    build::object(&mut me, &roots, HOLDER_SLOTS, 0, holder_id).unwrap();
    assert_eq!(me.collect().unwrap().kind, CollectionKind::Full);

    // Young objects referred to only by the old holder, each between 64 KiB
    // of garbage: their pages are mostly garbage and get evacuated.
    let young = young_into_holder(&mut me, &roots, &mut ids);
    let used_before = rt.heap().usage().used;
    let stats = me.collect_young().unwrap();
    assert_eq!(stats.kind, CollectionKind::Young);
    assert_eq!(
        stats.objects_marked, HOLDER_SLOTS as u64,
        "a young collection marks the young objects the remembered slots reach, not the old holder: {stats:?}"
    );
    assert!(stats.pages_evacuated > 0, "{stats:?}");
    assert!(stats.used_after < used_before, "{stats:?}");
    let holder = roots.get(0).unwrap();
    // SAFETY: the holder is live; nothing collects meanwhile.
    let moved = unsafe { moved(holder, &young) };
    assert!(moved > HOLDER_SLOTS / 2, "{moved} young objects moved");
    let young_ids: Vec<u64> = young.iter().map(|&(id, _)| id).collect();
    // SAFETY: the only mutator; not collecting.
    let found = unsafe { objects.verify() }.unwrap();
    assert_eq!(found, holder_and_young(holder_id, &young_ids));

    // Everything that survived is old now: the next young collection has
    // nothing to mark, and the graph is unchanged.
    let again = me.collect_young().unwrap();
    assert_eq!(again.objects_marked, 0, "{again:?}");
    // SAFETY: as above.
    let found = unsafe { objects.verify() }.unwrap();
    assert_eq!(found, holder_and_young(holder_id, &young_ids));
}

#[test]
fn young_garbage_goes_at_once_old_garbage_at_the_next_full_collection() {
    let (_objects, rt, roots, mut me, mut ids) = young_runtime();

    // An old list, then dropped: old garbage.
    let list = build::list(&mut me, &roots, 20_000, 4, true, &mut ids).unwrap();
    me.collect().unwrap();
    let with_list = rt.heap().usage().used;
    assert!(with_list >= list.bytes, "{with_list} {}", list.bytes);
    roots.pop();

    // Young garbage, collected young: only the young pages go.
    garbage(&mut me, &roots, &mut ids, 8 << 10);
    let young = me.collect_young().unwrap();
    assert_eq!(young.kind, CollectionKind::Young);
    assert_eq!(young.objects_marked, 0, "{young:?}");
    assert_eq!(
        young.used_after, with_list,
        "the young garbage went, the old list stayed: {young:?}"
    );

    let full = me.collect().unwrap();
    assert_eq!(full.kind, CollectionKind::Full);
    assert_eq!(full.used_after, 0, "{full:?}");
}

#[test]
fn a_pinned_young_object_stays_where_it_is_and_becomes_old() {
    let (objects, _rt, roots, mut me, mut ids) = young_runtime();

    let id = ids.next();
    let obj = build::object(&mut me, &roots, 1, 5, id).unwrap();
    // A cycle through itself, and garbage around it: its page is sparse.
    // SAFETY: `obj` is fresh and rooted.
    unsafe { SimpleObjects::set_slot(&me, obj, 0, Some(obj)) };
    garbage(&mut me, &roots, &mut ids, 1 << 10);
    let pin = me.pin(obj);
    let stats = me.collect_young().unwrap();
    assert_eq!(stats.kind, CollectionKind::Young);
    assert_eq!(roots.get(0), Some(obj), "pinned: not moved");
    assert_eq!(pin.object(), obj);
    drop(pin);
    // Old now: a young collection neither marks nor moves it.
    let stats = me.collect_young().unwrap();
    assert_eq!(stats.objects_marked, 0, "{stats:?}");
    assert_eq!(roots.get(0), Some(obj));
    let mut want = GraphSummary::default();
    want.add(id, SimpleObjects::size_for(1, 5), &[id]);
    // SAFETY: the only mutator; not collecting.
    assert_eq!(unsafe { objects.verify() }.unwrap(), want);
}

/// [`SimpleObjects`] without [`Binding::slot_at`].
struct NoSlotAt(Arc<SimpleObjects>);

impl Binding for NoSlotAt {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.0.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        self.0.scan_object(obj, visitor)
    }
    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, visitor: &mut V) {
        self.0.scan_global_roots(visitor)
    }

    fn root_tables(&self, report: &mut dyn FnMut(&Arc<hotmem::RootTable>)) {
        self.0.root_tables(report)
    }
}

#[test]
fn a_binding_that_cannot_rebuild_slots_gets_full_collections() {
    let objects = SimpleObjects::new();
    let rt = common::builder(64 << 20, Some(1))
        .generations(Generations::YoungAndOld)
        .binding(Arc::new(NoSlotAt(objects.clone())))
        .build()
        .unwrap();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let mut ids = Ids::from(1);
    let holder_id = ids.next();
    let holder = build::object(&mut me, &roots, 1, 0, holder_id).unwrap();
    me.collect().unwrap();
    let holder_now = roots.get(0).unwrap();
    let _ = holder;
    let young_id = ids.next();
    let young = build::object(&mut me, &roots, 0, 3, young_id).unwrap();
    roots.pop();
    // SAFETY: the holder is rooted, `young` fresh.
    unsafe { SimpleObjects::set_slot(&me, holder_now, 0, Some(young)) };
    let stats = me.collect_young().unwrap();
    assert_eq!(
        stats.kind,
        CollectionKind::Full,
        "a remembered slot the binding cannot rebuild makes it full"
    );
    let mut want = GraphSummary::default();
    want.add(holder_id, SimpleObjects::size_for(1, 0), &[young_id]);
    want.add(young_id, SimpleObjects::size_for(0, 3), &[]);
    // SAFETY: the only mutator; not collecting.
    assert_eq!(unsafe { objects.verify() }.unwrap(), want);
}

#[test]
fn allocation_failures_collect_young_until_old_objects_fill_half_the_heap() {
    let (objects, rt, roots, mut me, mut ids) = young_runtime();
    // Lists that live a while: each survives a few collections (so it
    // becomes old) and is then dropped (old garbage that only a full
    // collection reclaims). Short-lived garbage in between.
    const KEPT: usize = 20;
    for _ in 0..KEPT {
        roots.push(None);
    }
    let mut kept: Vec<Option<GraphSummary>> = vec![None; KEPT];
    for round in 0..200 {
        let list = build::list(&mut me, &roots, 4_000, 30, false, &mut ids).unwrap();
        let head = roots.pop();
        // Replaces the list built KEPT rounds ago.
        roots.set(round % KEPT, head);
        kept[round % KEPT] = Some(list);
        garbage(&mut me, &roots, &mut ids, 256);
        if round % 20 == 19 {
            let mut want = GraphSummary::default();
            for l in kept.iter().flatten() {
                want.merge(l);
            }
            // SAFETY: the only mutator; not collecting.
            assert_eq!(unsafe { objects.verify() }.unwrap(), want);
        }
    }
    let t = rt.gc_totals();
    assert!(t.allocation_failures > 0, "{t:?}");
    assert!(t.young_collections > 0, "{t:?}");
    assert!(
        t.cycles > t.young_collections,
        "old garbage filled half the heap: a full collection ran: {t:?}"
    );
}

#[test]
fn the_log_names_young_and_full_pauses() {
    let objects = SimpleObjects::new();
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let output = hotmem::log::LogOutput::callback(move |r| {
        sink.lock().unwrap().push(r.to_string());
    });
    let rt = common::builder(64 << 20, Some(1))
        .generations(Generations::YoungAndOld)
        .log(hotmem::log::LogConfig::new().output("gc=info".parse().unwrap(), output))
        .binding(objects.clone())
        .build()
        .unwrap();
    let mut me = rt.attach_mutator().unwrap();
    me.collect_young().unwrap();
    me.collect().unwrap();
    let lines = lines.lock().unwrap();
    assert!(
        lines[0].contains("GC(1) Pause Young (Explicit)"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("GC(2) Pause Full (Explicit)"),
        "{lines:?}"
    );
}

#[test]
fn after_a_failed_collection_young_ones_are_full_until_one_succeeds() {
    let (objects, _rt, roots, mut me, mut ids) = young_runtime();
    let holder_id = ids.next();
    build::object(&mut me, &roots, 1, 0, holder_id).unwrap();
    me.collect().unwrap();
    let young_id = ids.next();
    let young = build::object(&mut me, &roots, 0, 3, young_id).unwrap();
    roots.pop();
    let holder = roots.get(0).unwrap();
    // SAFETY: the holder is rooted, `young` fresh.
    unsafe { SimpleObjects::set_slot(&me, holder, 0, Some(young)) };

    // A root outside the heap: the young collection fails after it took
    // the remembered slot.
    let outside = ObjectReference::from_address(hotmem::Address::new(0x1000)).unwrap();
    roots.push(Some(outside));
    assert!(me.collect_young().is_err());
    roots.pop();
    garbage(&mut me, &roots, &mut ids, 1 << 10);
    // The slot is gone: asking for a young collection gets a full one.
    let stats = me.collect_young().unwrap();
    assert_eq!(stats.kind, CollectionKind::Full, "{stats:?}");
    let mut want = GraphSummary::default();
    want.add(holder_id, SimpleObjects::size_for(1, 0), &[young_id]);
    want.add(young_id, SimpleObjects::size_for(0, 3), &[]);
    // SAFETY: the only mutator; not collecting.
    let found = unsafe { objects.verify() }.unwrap();
    assert_eq!(found, want);
    // Once one succeeded, young collections are young again.
    assert_eq!(me.collect_young().unwrap().kind, CollectionKind::Young);
}

#[test]
fn survivors_of_successive_young_collections_fill_the_same_old_page() {
    let (objects, rt, roots, mut me, mut ids) = young_runtime();

    // Each round: small rooted objects among garbage, then a young
    // collection, which copies the survivors of the mostly-garbage pages
    // it evacuates into old pages. The next young collection goes on
    // filling those pages instead of starting new ones: over all rounds,
    // the copies land in at most one page per CPU (small target pages are
    // per CPU, and a GC worker may run on any of them). Before, every
    // collection started a page of its own and the heap grew by a page per
    // collection.
    //
    // Where the mutator's objects land depends on the CPUs its thread runs
    // on, so how many are copied in a round (rather than promoted in place
    // with their page) varies; the bound holds for whatever is copied.
    const ROUNDS: usize = 32;
    const PER_ROUND: usize = 2;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut kept = Vec::new();
    let mut target_pages = std::collections::BTreeSet::new();
    let mut copied = 0;
    for _ in 0..ROUNDS {
        for _ in 0..PER_ROUND {
            let id = ids.next();
            build::object(&mut me, &roots, 0, 3, id).unwrap();
            kept.push(id);
            // More than a small page: each survivor in a page of its own.
            garbage(&mut me, &roots, &mut ids, 2304);
        }
        let before = roots.roots();
        let stats = me.collect_young().unwrap();
        assert_eq!(stats.kind, CollectionKind::Young);
        assert_eq!(
            stats.objects_marked, PER_ROUND as u64,
            "only the new objects: {stats:?}"
        );
        let pages = rt.heap().page_infos();
        for (was, now) in before.iter().zip(roots.roots()) {
            let (was, now) = (was.unwrap().get(), now.unwrap().get());
            if was != now {
                let page = pages
                    .iter()
                    .find(|p| (p.start..p.start + p.size).contains(&now))
                    .expect("a moved object lies in a page");
                target_pages.insert(page.start);
                copied += 1;
            }
        }
    }
    assert!(copied > 0, "no young collection copied anything");
    assert!(
        target_pages.len() <= cpus,
        "{copied} copies in {} pages: {target_pages:x?}",
        target_pages.len()
    );
    let mut expected = GraphSummary::default();
    for &id in &kept {
        expected.add(id, SimpleObjects::size_for(0, 3), &[]);
    }
    // SAFETY: the only mutator; not collecting.
    assert_eq!(unsafe { objects.verify() }.unwrap(), expected);
}

/// The page of `runtime`'s heap that holds `obj`.
fn page_of(runtime: &Runtime, obj: ObjectReference) -> PageInfo {
    let addr = obj.to_address().get();
    runtime
        .heap()
        .page_infos()
        .into_iter()
        .find(|p| (p.start..p.start + p.size).contains(&addr))
        .expect("a live object lies in a page")
}

/// A young page whose objects all live is kept where it is by a young
/// collection ("promoted in place"), and the collector treats it as old
/// from then on. Before, `page_infos` still reported the age it was
/// allocated with, `Age::EDEN`.
#[test]
fn a_young_page_kept_where_it_is_reports_the_old_age() {
    let (_objects, rt, roots, mut me, mut ids) = young_runtime();
    // Small objects, every one rooted: their page is all live.
    for _ in 0..1000 {
        build::object(&mut me, &roots, 0, 3, ids.next()).unwrap();
    }
    let first = roots.get(0).unwrap();
    assert_eq!(page_of(&rt, first).age, Age::EDEN, "allocated young");

    let stats = me.collect_young().unwrap();
    assert_eq!(stats.kind, CollectionKind::Young);
    assert_eq!(stats.pages_evacuated, 0, "{stats:?}");
    assert_eq!(roots.get(0), Some(first), "kept where it was");
    assert_eq!(page_of(&rt, first).age, Age::OLD, "promoted in place");
    // The next young collection takes it as old: it marks nothing.
    assert_eq!(me.collect_young().unwrap().objects_marked, 0);

    // A page allocated since the last collection is young.
    let fresh = build::object(&mut me, &roots, 0, 3, ids.next()).unwrap();
    assert_ne!(page_of(&rt, fresh).start, page_of(&rt, first).start);
    assert_eq!(page_of(&rt, fresh).age, Age::EDEN);
}

/// Stores `target` into slot `i` of `holder` with the barrier set the
/// runtime hands out: code generic over the set, as an interpreter's.
struct StoreInto<'a> {
    me: &'a Mutator,
    holder: ObjectReference,
    i: usize,
    target: ObjectReference,
}

impl WithBarriers for StoreInto<'_> {
    type Output = BarrierKind;
    fn run<B: BarrierSet>(self, b: B) -> BarrierKind {
        let addr = self.holder.get() + hotmem::objects::HEADER + 8 * self.i;
        // SAFETY: slot `i` of the live holder; nothing collects while the
        // slot is used.
        let slot = unsafe { SimpleSlot::new(hotmem::Address::new(addr)) };
        b.store_ref(self.me, slot, self.target);
        B::KIND
    }
}

#[test]
fn the_stop_the_world_barrier_set_remembers_an_old_to_young_store() {
    let (objects, rt, roots, mut me, mut ids) = young_runtime();
    assert_eq!(rt.barrier_kind(), BarrierKind::StopTheWorld);
    assert!(rt.barrier_set::<hotmem::ConcurrentBarrierSet>().is_err());

    let holder_id = ids.next();
    build::object(&mut me, &roots, HOLDER_SLOTS, 0, holder_id).unwrap();
    assert_eq!(me.collect().unwrap().kind, CollectionKind::Full);
    // A young object only the old holder refers to, stored through the
    // set's store barrier.
    let young_id = ids.next();
    let young = build::object(&mut me, &roots, 0, 3, young_id).unwrap();
    roots.pop();
    let holder = roots.get(0).unwrap();
    let store = StoreInto {
        me: &me,
        holder,
        i: 0,
        target: young,
    };
    assert_eq!(rt.with_barriers(store), BarrierKind::StopTheWorld);
    let stats = me.collect_young().unwrap();
    assert_eq!(
        stats.objects_marked, 1,
        "the young collection found the young object through the remembered slot: {stats:?}"
    );
    // SAFETY: the only mutator; not collecting.
    let found = unsafe { objects.verify() }.unwrap();
    let mut targets = [0; HOLDER_SLOTS];
    targets[0] = young_id;
    let mut expected = GraphSummary::default();
    expected.add(
        holder_id,
        SimpleObjects::size_for(HOLDER_SLOTS, 0),
        &targets,
    );
    expected.add(young_id, SimpleObjects::size_for(0, 3), &[]);
    assert_eq!(found, expected);
}
