//! Model-based test of the collector on random object graphs.
//!
//! Random allocations (varied sizes and slot counts, arrays of references,
//! now and then a medium object), links (cycles, self-loops, shared
//! substructure), unlinks, root changes (handles and root-table entries),
//! pins, weak handles, ephemerons and collections run against the real
//! runtime and a plain model. The model's reachability is the reference:
//! the strong closure of the roots, then every ephemeron whose key is
//! reachable adds its value's closure, to a fixpoint. After every
//! collection: the graph reachable that way equals the model's (every
//! object's id, size, payload checksum and the id behind every slot), the
//! collector marked exactly those objects and their bytes, heap use covers
//! them, pinned objects did not move, a weak handle or ephemeron of a
//! reachable object holds its new address, and after a full collection
//! those of unreachable objects are cleared; once every root is dropped, a
//! collection reclaims every page. The same with the concurrent collector's
//! young and full cycles (the test reads the heap through the load barrier,
//! as a mutator must: objects move).

use hotmem::objects::{GraphSummary, RootTable, SimpleObjects};
use hotmem::{
    CollectionKind, CollectorMode, Ephemeron, Generations, Handle, Mutator, ObjectReference,
    PinGuard, Runtime, WeakHandle, YoungInFull,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

mod common;

#[derive(Clone, Debug)]
enum Op {
    /// A new object, rooted at once (through a handle or the root table).
    Alloc {
        slots: usize,
        payload: usize,
        medium: bool,
        handle: bool,
    },
    /// `from.slots[slot] = to` (picks among the known objects by index).
    Link { from: usize, slot: usize, to: usize },
    /// `from.slots[slot] = null`.
    Unlink { from: usize, slot: usize },
    /// Drops a root (handle or table entry).
    DropRoot { root: usize },
    /// Roots a known object again.
    AddRoot { obj: usize, handle: bool },
    /// Pins a known object.
    Pin { obj: usize },
    /// Drops a pin.
    Unpin { pin: usize },
    /// A weak handle to a known object.
    Weak { obj: usize },
    /// Drops a weak handle.
    DropWeak { weak: usize },
    /// An ephemeron between two known objects.
    Ephemeron { key: usize, value: usize },
    /// Drops an ephemeron.
    DropEphemeron { eph: usize },
    /// A full collection, or a young one (full when the runtime has no
    /// generations).
    Collect { young: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..6, 0usize..24, prop::bool::weighted(0.03), any::<bool>()).prop_map(
            |(slots, payload, medium, handle)| Op::Alloc { slots, payload, medium, handle }
        ),
        1 => (0usize..3, 0usize..24, any::<bool>())
            .prop_map(|(k, payload, handle)| Op::Alloc { slots: 16 + k * 24, payload, medium: false, handle }),
        8 => (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(from, slot, to)| Op::Link { from, slot, to }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(from, slot)| Op::Unlink { from, slot }),
        3 => any::<usize>().prop_map(|root| Op::DropRoot { root }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(obj, handle)| Op::AddRoot { obj, handle }),
        1 => any::<usize>().prop_map(|obj| Op::Pin { obj }),
        1 => any::<usize>().prop_map(|pin| Op::Unpin { pin }),
        2 => any::<usize>().prop_map(|obj| Op::Weak { obj }),
        1 => any::<usize>().prop_map(|weak| Op::DropWeak { weak }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(key, value)| Op::Ephemeron { key, value }),
        1 => any::<usize>().prop_map(|eph| Op::DropEphemeron { eph }),
        2 => any::<bool>().prop_map(|young| Op::Collect { young }),
    ]
}

/// One object of the model.
#[derive(Clone, Debug)]
struct MObj {
    size: usize,
    slots: Vec<Option<u64>>,
}

enum Root {
    Handle(u64, Handle),
    /// An index into the root table.
    Table(u64, usize),
}

struct World {
    rt: Runtime,
    me: Mutator,
    table: Arc<RootTable>,
    /// Model: every object not yet known to be unreachable.
    objs: BTreeMap<u64, MObj>,
    /// Where each object is now (refreshed after every collection).
    addr: HashMap<u64, ObjectReference>,
    roots: Vec<Root>,
    pins: Vec<(u64, ObjectReference, PinGuard)>,
    weak: Vec<(u64, WeakHandle)>,
    /// Key id, value id, the ephemeron.
    ephemerons: Vec<(u64, u64, Ephemeron)>,
    next_id: u64,
    medium: usize,
    cycles: u64,
}

impl World {
    fn new(generations: Generations, collector: CollectorMode) -> World {
        World::with(generations, collector, YoungInFull::default())
    }

    fn with(
        generations: Generations,
        collector: CollectorMode,
        young_in_full: YoungInFull,
    ) -> World {
        let objects = SimpleObjects::new();
        let rt = common::builder(64 << 20, Some(2))
            .generations(generations)
            .collector(collector)
            .young_in_full(young_in_full)
            .binding(objects.clone())
            .build()
            .unwrap();
        let table = objects.root_table();
        let me = rt.attach_mutator().unwrap();
        let medium = rt.heap().page_sizes().small_object_max() + 64;
        World {
            rt,
            me,
            table,
            objs: BTreeMap::new(),
            addr: HashMap::new(),
            roots: Vec::new(),
            pins: Vec::new(),
            weak: Vec::new(),
            ephemerons: Vec::new(),
            next_id: 1,
            medium,
            cycles: 0,
        }
    }

    fn pick(&self, i: usize) -> Option<u64> {
        (!self.objs.is_empty()).then(|| *self.objs.keys().nth(i % self.objs.len()).unwrap())
    }

    fn root_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .roots
            .iter()
            .map(|r| match r {
                Root::Handle(id, _) | Root::Table(id, _) => *id,
            })
            .collect();
        ids.extend(self.pins.iter().map(|p| p.0));
        ids
    }

    fn real_roots(&self) -> Vec<ObjectReference> {
        let mut out: Vec<ObjectReference> = self
            .roots
            .iter()
            .map(|r| match r {
                Root::Handle(_, h) => h.get(),
                Root::Table(_, i) => self.table.get(*i).expect("a live table root"),
            })
            .collect();
        out.extend(self.pins.iter().map(|p| p.2.object()));
        out
    }

    /// The model's reachable set: the strong closure of the roots, then
    /// the closure of every ephemeron value whose key is reachable, to a
    /// fixpoint.
    fn reachable(&self) -> BTreeSet<u64> {
        let mut seen = BTreeSet::new();
        let mut stack = self.root_ids();
        loop {
            while let Some(id) = stack.pop() {
                if seen.insert(id) {
                    stack.extend(self.objs[&id].slots.iter().flatten());
                }
            }
            stack.extend(
                self.ephemerons
                    .iter()
                    .filter(|(k, v, _)| seen.contains(k) && !seen.contains(v))
                    .map(|(_, v, _)| *v),
            );
            if stack.is_empty() {
                return seen;
            }
        }
    }

    /// The real roots and the values of the ephemerons whose key the model
    /// says is reachable: where the real reachable graph starts.
    fn real_starts(&self, live: &BTreeSet<u64>) -> Vec<ObjectReference> {
        let mut starts = self.real_roots();
        for (k, v, e) in &self.ephemerons {
            if live.contains(k) {
                let (key, value) = e
                    .get()
                    .unwrap_or_else(|| panic!("ephemeron ({k}, {v}) cleared"));
                starts.push(key);
                starts.push(value);
            }
        }
        starts
    }

    fn summary(&self, ids: &BTreeSet<u64>) -> GraphSummary {
        let mut s = GraphSummary::default();
        for id in ids {
            let o = &self.objs[id];
            let targets: Vec<u64> = o.slots.iter().map(|t| t.unwrap_or(0)).collect();
            s.add(*id, o.size, &targets);
        }
        s
    }

    /// Called when a collection may have run: checks the heap against the
    /// model, forgets the unreachable objects, re-reads every address.
    fn after_collection(&mut self, stats: Option<hotmem::CollectStats>) {
        let live = self.reachable();
        let want = self.summary(&live);
        let full = stats
            .as_ref()
            .is_some_and(|s| s.kind == CollectionKind::Full);
        let roots = self.real_starts(&live);
        // SAFETY: the only mutator is this thread, not collecting now (no
        // cycle runs: the tests' runtime collects only when asked). Each
        // slot is read through the load barrier.
        let found =
            unsafe { SimpleObjects::verify_from_with(&self.me, roots.iter().copied()) }.unwrap();
        assert_eq!(found, want, "the reachable graph differs from the model");
        if let Some(s) = stats.as_ref().filter(|s| s.kind == CollectionKind::Full) {
            assert_eq!(
                s.objects_marked as usize,
                live.len(),
                "marked exactly the reachable objects"
            );
            assert_eq!(s.live_bytes as usize, want.bytes, "live bytes");
        }
        if let Some(s) = stats {
            // (A young collection marks young objects only, from the roots
            // and from the remembered slots of old objects, dead ones too:
            // it may keep young garbage that a dead old object refers to,
            // until the next full collection.)
            // (Use may grow by a few target pages: relocation fills one
            // page per worker CPU and age, so no `used_after <= used_before`.)
            assert!(s.used_after >= want.bytes, "{s:?}");
        }
        self.objs.retain(|id, _| live.contains(id));
        // Re-read addresses by walking the real graph (ids from headers).
        self.addr.clear();
        let mut stack = roots;
        while let Some(r) = stack.pop() {
            // SAFETY: reachable objects are live; no collection meanwhile.
            let h = unsafe { SimpleObjects::header(r) };
            if self.addr.insert(h[1], r).is_none() {
                for i in 0..h[2] as usize {
                    // SAFETY: as above.
                    if let Some(t) = unsafe { SimpleObjects::slot(r, i) } {
                        // A slot may still name an object's old copy (the
                        // concurrent collector heals lazily): where it is.
                        stack.push(self.me.resolve(t));
                    }
                }
            }
        }
        for (id, at, guard) in &self.pins {
            assert_eq!(self.addr[id], *at, "pinned object {id} moved");
            assert_eq!(guard.object(), *at);
        }
        // Weak references: a reachable object's hold its new address; after
        // a full collection an unreachable one's are cleared (a young
        // collection takes old objects as live, so theirs may stay).
        for (id, w) in &self.weak {
            match self.addr.get(id) {
                Some(&at) => assert_eq!(w.get(), Some(at), "weak handle of {id}"),
                None if full => assert_eq!(w.get(), None, "weak handle of dead {id}"),
                None => {}
            }
        }
        for (k, v, e) in &self.ephemerons {
            if live.contains(k) {
                assert_eq!(
                    e.get(),
                    Some((self.addr[k], self.addr[v])),
                    "ephemeron ({k}, {v})"
                );
            } else if full {
                assert_eq!(e.get(), None, "ephemeron ({k}, {v}) with a dead key");
            }
        }
        // Forget what the model no longer knows (cleared or of dead keys).
        let objs = &self.objs;
        self.weak.retain(|(id, _)| objs.contains_key(id));
        self.ephemerons.retain(|(k, _, _)| objs.contains_key(k));
    }

    fn run(&mut self, op: &Op) {
        match *op {
            Op::Alloc {
                slots,
                payload,
                medium,
                handle,
            } => {
                let mut size = SimpleObjects::size_for(slots, payload);
                if medium {
                    size = size.max(self.medium);
                }
                let payload = (size - SimpleObjects::size_for(slots, 0)) / 8;
                let before = self.rt.gc_totals().cycles;
                let addr = self.me.alloc(size).expect("the live set fits");
                let id = self.next_id;
                self.next_id += 1;
                // SAFETY: a fresh allocation of `size` bytes.
                let obj = unsafe { SimpleObjects::init(addr, size, slots, id) };
                let root = if handle {
                    Root::Handle(id, self.me.handle(obj))
                } else {
                    Root::Table(id, self.table.push(Some(obj)))
                };
                self.roots.push(root);
                self.objs.insert(
                    id,
                    MObj {
                        size: SimpleObjects::size_for(slots, payload),
                        slots: vec![None; slots],
                    },
                );
                if self.rt.gc_totals().cycles != before {
                    // The allocation collected: everything moved, and the
                    // new object was not there yet.
                    self.after_collection(None);
                } else {
                    self.addr.insert(id, obj);
                }
            }
            Op::Link { from, slot, to } => {
                let (Some(f), Some(t)) = (self.pick(from), self.pick(to)) else {
                    return;
                };
                let n = self.objs[&f].slots.len();
                if n == 0 {
                    return;
                }
                let (fa, ta) = (self.addr[&f], self.addr[&t]);
                // SAFETY: both are known objects (reachable or garbage not
                // yet collected), no collection since their addresses were read.
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
                unsafe { SimpleObjects::set_slot(&self.me, self.addr[&f], slot % n, None) };
                self.objs.get_mut(&f).unwrap().slots[slot % n] = None;
            }
            Op::DropRoot { root } => {
                if self.roots.is_empty() {
                    return;
                }
                match self.roots.swap_remove(root % self.roots.len()) {
                    Root::Handle(..) => {}
                    Root::Table(_, i) => {
                        self.table.set(i, None);
                    }
                }
            }
            Op::AddRoot { obj, handle } => {
                let Some(id) = self.pick(obj) else { return };
                let a = self.addr[&id];
                let root = if handle {
                    Root::Handle(id, self.me.handle(a))
                } else {
                    Root::Table(id, self.table.push(Some(a)))
                };
                self.roots.push(root);
            }
            Op::Pin { obj } => {
                let Some(id) = self.pick(obj) else { return };
                let a = self.addr[&id];
                self.pins.push((id, a, self.me.pin(a)));
            }
            Op::Unpin { pin } => {
                if !self.pins.is_empty() {
                    let i = pin % self.pins.len();
                    self.pins.swap_remove(i);
                }
            }
            Op::Weak { obj } => {
                let Some(id) = self.pick(obj) else { return };
                self.weak.push((id, self.rt.weak_handle(self.addr[&id])));
            }
            Op::DropWeak { weak } => {
                if !self.weak.is_empty() {
                    let i = weak % self.weak.len();
                    self.weak.swap_remove(i);
                }
            }
            Op::Ephemeron { key, value } => {
                let (Some(k), Some(v)) = (self.pick(key), self.pick(value)) else {
                    return;
                };
                let e = self.rt.ephemeron(self.addr[&k], self.addr[&v]);
                self.ephemerons.push((k, v, e));
            }
            Op::DropEphemeron { eph } => {
                if !self.ephemerons.is_empty() {
                    let i = eph % self.ephemerons.len();
                    self.ephemerons.swap_remove(i);
                }
            }
            Op::Collect { young } => {
                let stats = if young {
                    self.me.collect_young()
                } else {
                    self.me.collect()
                }
                .expect("a collection");
                if young && self.rt.config().generations() == Generations::YoungAndOld {
                    assert_eq!(stats.kind, CollectionKind::Young);
                }
                self.cycles += 1;
                self.after_collection(Some(stats));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 48 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_graphs_survive_collections_as_the_model_says(
        ops in prop::collection::vec(op(), 1..160)
    ) {
        end_to_end(Generations::Single, CollectorMode::StopTheWorld, &ops)?;
    }

    /// The same with young collections: links from old objects to young
    /// ones go through the store barrier, which the young collections
    /// mark from and update.
    #[test]
    fn random_graphs_survive_young_collections_as_the_model_says(
        ops in prop::collection::vec(op(), 1..160)
    ) {
        end_to_end(Generations::YoungAndOld, CollectorMode::StopTheWorld, &ops)?;
    }

    /// The same with the concurrent collector's young and full cycles.
    #[test]
    fn random_graphs_survive_young_and_full_concurrent_cycles_as_the_model_says(
        ops in prop::collection::vec(op(), 1..160)
    ) {
        end_to_end(Generations::YoungAndOld, CollectorMode::Concurrent, &ops)?;
    }

    /// The same with a young cycle after every round of each full
    /// cycle's marking (it finds no young page: the only mutator waits
    /// for the cycle; it takes the remembered slots, the logs and the weak
    /// sets' state from the full marking and gives them back).
    #[test]
    fn random_graphs_survive_young_cycles_inside_full_ones_as_the_model_says(
        ops in prop::collection::vec(op(), 1..160)
    ) {
        end_to_end_with(
            Generations::YoungAndOld,
            CollectorMode::Concurrent,
            YoungInFull::EachRound,
            &ops,
        )?;
    }
}

fn end_to_end(
    generations: Generations,
    collector: CollectorMode,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    end_to_end_with(generations, collector, YoungInFull::default(), ops)
}

fn end_to_end_with(
    generations: Generations,
    collector: CollectorMode,
    young_in_full: YoungInFull,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    {
        let mut w = World::with(generations, collector, young_in_full);
        for op in ops {
            w.run(op);
        }
        // Always end with two collections: the second finds the same graph.
        w.run(&Op::Collect { young: true });
        w.run(&Op::Collect { young: false });
        w.run(&Op::Collect { young: false });
        // Dropping every root reclaims everything.
        w.roots.clear();
        w.pins.clear();
        w.table.clear();
        w.ephemerons.clear();
        let stats = w.me.collect().unwrap();
        prop_assert_eq!(stats.objects_marked, 0);
        prop_assert_eq!(stats.live_bytes, 0);
        prop_assert_eq!(stats.used_after, 0, "every page was reclaimed");
    }
    Ok(())
}

/// A fixed graph with every shape at once, collected many times.
#[test]
fn cycles_self_loops_shared_substructure_and_arrays_survive_many_collections() {
    shapes(Generations::Single, CollectorMode::StopTheWorld);
}

/// The same with young and full collections in turn.
#[test]
fn cycles_self_loops_shared_substructure_and_arrays_survive_young_collections() {
    shapes(Generations::YoungAndOld, CollectorMode::StopTheWorld);
}

/// The same with the concurrent collector's young and full cycles.
#[test]
fn cycles_self_loops_shared_substructure_and_arrays_survive_young_concurrent_cycles() {
    shapes(Generations::YoungAndOld, CollectorMode::Concurrent);
}

fn shapes(generations: Generations, collector: CollectorMode) {
    let mut w = World::new(generations, collector);
    let ops = [
        Op::Alloc {
            slots: 2,
            payload: 3,
            medium: false,
            handle: true,
        }, // 1
        Op::Alloc {
            slots: 1,
            payload: 0,
            medium: false,
            handle: false,
        }, // 2
        Op::Alloc {
            slots: 40,
            payload: 1,
            medium: false,
            handle: false,
        }, // 3: array
        Op::Alloc {
            slots: 1,
            payload: 9,
            medium: true,
            handle: false,
        }, // 4: medium
        Op::Link {
            from: 0,
            slot: 0,
            to: 1,
        },
        Op::Link {
            from: 1,
            slot: 0,
            to: 0,
        }, // 1 <-> 2: a cycle
        Op::Link {
            from: 0,
            slot: 1,
            to: 2,
        },
        Op::Link {
            from: 2,
            slot: 3,
            to: 2,
        }, // a self-loop
        Op::Link {
            from: 2,
            slot: 0,
            to: 3,
        },
        Op::Link {
            from: 2,
            slot: 1,
            to: 3,
        }, // shared
        Op::Link {
            from: 2,
            slot: 2,
            to: 0,
        },
        Op::Link {
            from: 3,
            slot: 0,
            to: 2,
        }, // array <-> medium
        Op::DropRoot { root: 1 },
        Op::DropRoot { root: 1 },
        Op::DropRoot { root: 1 },
        Op::Collect { young: false },
    ];
    for op in &ops {
        w.run(op);
    }
    assert_eq!(w.objs.len(), 4, "all four reachable from the one handle");
    for i in 0..10 {
        w.run(&Op::Alloc {
            slots: 0,
            payload: 100,
            medium: false,
            handle: false,
        });
        w.run(&Op::DropRoot { root: 1 });
        w.run(&Op::Collect { young: i % 2 == 0 });
    }
    assert!(w.cycles >= 11);
}
