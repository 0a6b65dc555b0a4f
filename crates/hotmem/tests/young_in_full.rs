//! Young cycles inside a full cycle's marking ([`YoungInFull`]), at a
//! moment the test decides: the binding holds the full marking at one old
//! object until the mutator has allocated young survivors among young
//! garbage (some only an old object refers to). The young cycle after the
//! marking's round then evacuates them while the full marking waits, and
//! both it and every later cycle keep exactly the graph the mutator built.

use hotmem::objects::{GraphSummary, Ids, SimpleObjects, build};
use hotmem::{
    Address, Binding, CollectorMode, Generations, MutatorId, ObjectReference, RootTable,
    SimpleSlot, SlotVisitor, WeakForwarding, WeakPass, WeakRefs, YoungInFull,
};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

/// Where the binding's hold on one object's scan stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Hold {
    /// Scans run.
    Off,
    /// The next scan of the object at this address waits.
    Armed(usize),
    /// A scan of it waits now.
    Holding,
    /// Let go.
    Released,
}

/// [`SimpleObjects`] whose scan of one chosen object waits, once, until
/// the test lets it go (or 20 s passed: a hang becomes a failed check).
struct HeldObjects {
    objects: Arc<SimpleObjects>,
    hold: Mutex<Hold>,
    moved: Condvar,
}

impl HeldObjects {
    fn wait_while(&self, held: impl Fn(Hold) -> bool) -> Hold {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut h = self.hold.lock();
        while held(*h) && Instant::now() < deadline {
            self.moved.wait_until(&mut h, deadline);
        }
        *h
    }

    fn set(&self, hold: Hold) {
        *self.hold.lock() = hold;
        self.moved.notify_all();
    }
}

impl Binding for HeldObjects {
    type Slot = SimpleSlot;

    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }

    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        let armed = {
            let mut h = self.hold.lock();
            let armed = *h == Hold::Armed(obj.get());
            if armed {
                *h = Hold::Holding;
                self.moved.notify_all();
            }
            armed
        };
        if armed {
            self.wait_while(|h| h == Hold::Holding);
        }
        self.objects.scan_object(obj, visitor)
    }

    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, visitor: &mut V) {
        self.objects.scan_global_roots(visitor)
    }

    fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
        self.objects.root_tables(report)
    }

    fn scan_mutator_roots<V: SlotVisitor<SimpleSlot>>(&self, mutator: MutatorId, visitor: &mut V) {
        self.objects.scan_mutator_roots(mutator, visitor)
    }

    fn slot_at(&self, addr: Address) -> Option<SimpleSlot> {
        self.objects.slot_at(addr)
    }

    fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
        self.objects.process_weak_refs(refs)
    }

    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        self.objects.forward_weak_refs(refs)
    }
}

#[test]
fn a_young_cycle_inside_a_full_marking_evacuates_what_the_mutator_made_meanwhile() {
    common::with_deadline(
        "young cycle inside a full one",
        Duration::from_secs(60),
        run,
    );
}

fn run() {
    const OLD_SLOTS: usize = 64;
    let objects = SimpleObjects::new();
    let binding = Arc::new(HeldObjects {
        objects: objects.clone(),
        hold: Mutex::new(Hold::Off),
        moved: Condvar::new(),
    });
    let records = Arc::new(Mutex::new(Vec::new()));
    let sink = records.clone();
    let output = hotmem::log::LogOutput::callback(move |r| sink.lock().push(r.to_string()));
    let rt = common::builder(64 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .generations(Generations::YoungAndOld)
        .young_in_full(YoungInFull::EachRound)
        .log(hotmem::log::LogConfig::new().output("gc*=info".parse().unwrap(), output))
        .binding(binding.clone())
        .build()
        .unwrap();
    let roots = objects.root_table();
    let mut me = rt.attach_mutator().unwrap();
    let mut ids = Ids::from(1);
    let mut want = GraphSummary::default();
    // An old object with room for references to young ones.
    let old_id = ids.next();
    build::object(&mut me, &roots, OLD_SLOTS, 2, old_id).unwrap();
    let old_root = roots.len() - 1;
    // A young cycle first (young cycles run inside full ones only once one
    // ran whole), then a full one makes everything old, and a young one
    // takes out what the full one's young cycles left in the barrier.
    me.collect_young().unwrap();
    me.collect().unwrap();
    me.collect_young().unwrap();
    let old = roots.get(old_root).unwrap();
    let relocated_before = rt.gc_totals().objects_relocated;
    binding.set(Hold::Armed(old.get()));
    let full = {
        let rt = rt.clone();
        std::thread::spawn(move || rt.collect())
    };
    // Polling lets the full cycle's Pause Mark Start run; its marking then
    // holds at the old object.
    let deadline = Instant::now() + Duration::from_secs(20);
    while *binding.hold.lock() != Hold::Holding {
        assert!(
            Instant::now() < deadline,
            "the full marking never scanned the old object"
        );
        me.poll();
        std::thread::yield_now();
    }
    // Young pages of garbage with a few survivors each: every 16th object
    // is kept, the even ones by the old object's slots only, the odd ones
    // by roots.
    let mut kept_by_old = Vec::new();
    for i in 0..(OLD_SLOTS * 2) {
        build::garbage(&mut me, &roots, 64, &mut ids).unwrap();
        let id = ids.next();
        let obj = build::object(&mut me, &roots, 0, 8, id).unwrap();
        want.add(id, SimpleObjects::size_for(0, 8), &[]);
        if i % 2 == 0 {
            roots.pop();
            kept_by_old.push(id);
            let old = roots.get(old_root).unwrap();
            // SAFETY: both are reachable (the old object from a root, the
            // new one just allocated), and this thread does not poll
            // between reading their addresses and the store.
            unsafe { SimpleObjects::set_slot(&me, old, i / 2, Some(obj)) };
        }
    }
    binding.set(Hold::Released);
    // The cycles' pauses need this mutator at a safepoint.
    while !full.is_finished() {
        me.poll();
        std::thread::yield_now();
    }
    let stats = full.join().unwrap().unwrap();
    let inside = stats.concurrent.unwrap().young_cycles_inside;
    assert!(inside >= 1, "young cycles inside the full one: {inside}");
    // Nothing else ran since (the sizing is pinned, and the mutator's 8
    // MiB stay far from the pacing's margin): what the full cycle did not
    // relocate, its young cycles did.
    let relocated = rt.gc_totals().objects_relocated - relocated_before;
    assert!(
        relocated > stats.objects_relocated,
        "the young cycles inside evacuated the survivors ({relocated} relocated in all, \
         {} by the full cycle)",
        stats.objects_relocated
    );
    // The full cycle's phases name its young cycles, which have lines of
    // their own.
    rt.flush_log();
    let lines = records.lock().clone();
    let (full, first) = (stats.cycle, stats.cycle + 1);
    let named =
        format!("GC({full}) O: Young Cycles Inside Concurrent Mark: {inside} (GC({first})-");
    assert!(
        lines.iter().any(|l| l.contains(&named)),
        "no {named:?} in {lines:#?}"
    );
    let young = format!("GC({first}) Minor Collection (Full Mark Round)");
    assert!(
        lines.iter().any(|l| l.contains(&young)),
        "no {young:?} in {lines:#?}"
    );
    // What the mutator built is intact, now and after more cycles.
    let targets: Vec<u64> = (0..OLD_SLOTS)
        .map(|k| kept_by_old.get(k).copied().unwrap_or(0))
        .collect();
    want.add(old_id, SimpleObjects::size_for(OLD_SLOTS, 2), &targets);
    let check = |me: &hotmem::Mutator| {
        let starts: Vec<ObjectReference> = roots.roots().into_iter().flatten().collect();
        // SAFETY: this thread is the only mutator and does not poll or
        // allocate during the walk: no pause runs meanwhile. Each slot is
        // read through the load barrier.
        let found = unsafe { SimpleObjects::verify_from_with(me, starts) }.unwrap();
        assert_eq!(
            found, want,
            "the reachable graph differs from what was built"
        );
    };
    check(&me);
    me.collect_young().unwrap();
    check(&me);
    me.collect().unwrap();
    check(&me);
}
