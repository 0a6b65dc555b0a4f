//! Root tables and handles visited after the pauses
//! ([`RootTableVisit::Concurrent`], the concurrent collector's default):
//! entries moved between tables while marking runs are kept, entries read
//! while the GC thread forwards them name the one copy every reader sees,
//! and the pauses visit no entry.

use hotmem::objects::{Ids, RootTable, SimpleObjects, build};
use hotmem::{
    Binding, CollectStats, CollectorMode, HeapSizing, Mutator, ObjectReference, RootTableVisit,
    Runtime, SimpleSlot, SlotVisitor, WeakPass, WeakRefs,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

mod common;

fn runtime<B: Binding>(objects: &Arc<B>, tables: RootTableVisit) -> Runtime {
    common::builder(128 << 20, Some(2))
        .collector(CollectorMode::Concurrent)
        .root_table_visit(tables)
        // Cycles run when the tests ask: what each finds does not depend on
        // timing.
        .heap_sizing(HeapSizing::Maximum)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime")
}

/// `n` objects of 6 payload words, every `keep`-th kept in `roots` (the
/// rest die, so their pages are worth evacuating); the ids kept.
fn fragmented(
    me: &mut Mutator,
    roots: &RootTable,
    ids: &mut Ids,
    n: usize,
    keep: usize,
) -> Vec<u64> {
    let mut kept = Vec::new();
    for i in 0..n {
        let id = ids.next();
        build::object(me, roots, 0, 6, id).expect("the heap holds them");
        if i % keep == 0 {
            kept.push(id);
        } else {
            roots.pop();
        }
    }
    kept
}

/// `first`, a cycle that ran while the mutator moved table entries,
/// marked the `n` objects of its snapshot and visited every entry at
/// least once after the pause (a value moved into an entry not reached yet
/// is visited twice); the next cycle keeps all `n`. Its statistics.
fn kept_through_two_cycles(rt: &Runtime, first: &CollectStats, n: usize) -> CollectStats {
    assert_eq!(
        first.objects_marked as usize, n,
        "every object of the snapshot"
    );
    let c = first.concurrent.expect("a concurrent cycle");
    assert!(c.root_table_entries as usize >= n, "{c:?}");
    let second = rt.collect().unwrap();
    assert_eq!(second.objects_marked as usize, n, "and each one kept");
    second
}

/// The object `r` refers to has id `id` and its payload is intact.
///
/// # Safety
/// `r` must be current on `me`'s thread (read in managed code since its
/// last poll).
unsafe fn check(r: ObjectReference, id: u64) {
    // SAFETY: the caller's promise.
    let header = unsafe { SimpleObjects::header(r) };
    assert_eq!(header[1], id, "{r}");
    // SAFETY: as above.
    unsafe { SimpleObjects::check(r) }.expect("intact");
}

/// The mutator empties one table into another and into handles while a
/// cycle marks: whatever the GC thread had visited when each value left
/// its entry, every object stays (the table keeps a value that leaves an
/// entry the GC thread has not reached yet).
#[test]
fn entries_moved_out_of_a_table_during_marking_are_kept() {
    const N: usize = 40_000;
    let objects = SimpleObjects::new();
    let rt = runtime(&objects, RootTableVisit::Concurrent);
    let mut me = rt.attach_mutator().unwrap();
    let (from, to) = (objects.root_table(), objects.root_table());
    let mut ids = Ids::from(1);
    let kept = fragmented(&mut me, &from, &mut ids, N, 1);
    let cycle = common::cycle_in_marking(&rt, &mut me);
    // From the end (where the GC thread has not been yet) and from the
    // front (where it may have been), into the other table, into handles,
    // overwriting as they go.
    let mut handles = Vec::new();
    for k in 0..N {
        let v = if k % 2 == 0 {
            from.pop()
        } else {
            from.swap_remove(0)
        };
        match k % 3 {
            0 => handles.push(me.handle(v.expect("a kept object"))),
            _ => {
                to.push(v);
            }
        }
        if k % 1000 == 0 {
            me.poll();
        }
    }
    assert!(from.is_empty());
    drop(me);
    kept_through_two_cycles(&rt, &cycle.join().unwrap(), N);
    let me = rt.attach_mutator().unwrap();
    let mut seen: Vec<u64> = to
        .roots()
        .into_iter()
        .map(Option::unwrap)
        .chain(handles.iter().map(|h| h.get()))
        .map(|r| {
            // SAFETY: read from a root just now; `me` does not poll.
            unsafe { SimpleObjects::header(r)[1] }
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, kept);
    drop(me);
}

/// Sixteen tables marked by four workers at once (a table per job), while
/// the mutator moves entries from each table into the next: every entry
/// of the snapshot is visited, and every object kept, whichever worker
/// marked which table and when.
#[test]
fn tables_marked_by_several_workers_keep_every_entry() {
    const TABLES: usize = 16;
    const PER_TABLE: usize = 2_500;
    const N: usize = TABLES * PER_TABLE;
    let objects = SimpleObjects::new();
    let rt = common::builder(128 << 20, Some(4))
        .collector(CollectorMode::Concurrent)
        .concurrent_gc_workers(4)
        .binding(objects.clone())
        .build()
        .expect("a concurrent runtime");
    let mut me = rt.attach_mutator().unwrap();
    let tables: Vec<_> = (0..TABLES).map(|_| objects.root_table()).collect();
    let mut ids = Ids::from(1);
    let mut kept: Vec<u64> = tables
        .iter()
        .flat_map(|t| fragmented(&mut me, t, &mut ids, PER_TABLE, 1))
        .collect();
    let cycle = common::cycle_in_marking(&rt, &mut me);
    for k in 0..N / 2 {
        let (from, to) = (&tables[k % TABLES], &tables[(k + 1) % TABLES]);
        let v = match k % 2 {
            0 => from.pop(),
            _ => from.swap_remove(0),
        };
        to.push(v);
        if k % 1000 == 0 {
            me.poll();
        }
    }
    drop(me);
    let second = kept_through_two_cycles(&rt, &cycle.join().unwrap(), N);
    assert_eq!(
        second.concurrent.unwrap().root_table_entries as usize,
        N,
        "each entry once when nothing moves"
    );
    let _me = rt.attach_mutator().unwrap();
    let mut seen: Vec<u64> = tables
        .iter()
        .flat_map(|t| t.roots())
        .map(|r| {
            // SAFETY: read from a root just now; nothing polls.
            unsafe { SimpleObjects::header(r.expect("no empty entry"))[1] }
        })
        .collect();
    seen.sort_unstable();
    kept.sort_unstable();
    assert_eq!(seen, kept);
}

/// The mutator reads every entry of a table, every handle and every weak
/// handle, over and over while cycles evacuate the pages they refer to:
/// each read names the object's one current copy (the reader relocates it
/// if the GC thread has not reached the entry yet), and all of them agree.
#[test]
fn entries_read_while_the_gc_thread_forwards_them_name_one_copy() {
    const N: usize = 200_000;
    const KEEP: usize = 8;
    let objects = SimpleObjects::new();
    let rt = runtime(&objects, RootTableVisit::Concurrent);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let kept = fragmented(&mut me, &roots, &mut ids, N, KEEP);
    let handles: Vec<_> = (0..kept.len())
        .step_by(5)
        .map(|i| (me.handle(roots.get(i).unwrap()), i))
        .collect();
    let weak: Vec<_> = (0..kept.len())
        .step_by(7)
        .map(|i| (rt.weak_handle(roots.get(i).unwrap()), i))
        .collect();
    let mut relocated = 0;
    let mut reads = 0u64;
    for _ in 0..3 {
        let cycle = {
            let rt = rt.clone();
            std::thread::spawn(move || rt.collect().unwrap())
        };
        while !cycle.is_finished() {
            for (i, &id) in kept.iter().enumerate() {
                let r = roots.get(i).unwrap();
                // SAFETY: read from the table since the last poll.
                unsafe { check(r, id) };
                reads += 1;
                if i % 4096 == 0 {
                    me.poll();
                }
            }
            for (h, i) in &handles {
                // SAFETY: as above.
                unsafe { check(h.get(), kept[*i]) };
            }
            for (w, i) in &weak {
                // SAFETY: as above (the table keeps the object alive).
                unsafe { check(w.get().expect("strongly held"), kept[*i]) };
            }
            me.poll();
        }
        let stats = cycle.join().unwrap();
        let c = stats.concurrent.unwrap();
        relocated += c.relocated_for_root_tables;
        assert!(stats.objects_relocated >= c.relocated_for_root_tables);
        for (h, i) in &handles {
            assert_eq!(h.get(), roots.get(*i).unwrap(), "one copy");
        }
        for (w, i) in &weak {
            assert_eq!(w.get(), roots.get(*i), "one copy");
        }
        // Leave garbage for the next cycle to evacuate around.
        fragmented(&mut me, &roots, &mut ids, N / 4, usize::MAX);
    }
    assert!(reads > 0);
    // The kept objects' pages were mostly garbage: evacuated, and their
    // objects relocated for the table's entries (by the GC thread or the
    // reader) rather than in a pause.
    assert!(relocated > 0, "nothing was relocated for the tables");
}

/// With the tables left to after the pauses, the pauses visit none of
/// their entries; in the pauses, Pause Mark Start marks them all.
#[test]
fn pauses_visit_no_entry_unless_asked_to() {
    for (visit, after) in [
        (RootTableVisit::Concurrent, 10_000),
        (RootTableVisit::InPause, 0),
    ] {
        let objects = SimpleObjects::new();
        let rt = runtime(&objects, visit);
        let mut me = rt.attach_mutator().unwrap();
        let roots = objects.root_table();
        let mut ids = Ids::from(1);
        fragmented(&mut me, &roots, &mut ids, 10_000, 1);
        let c = me.collect().unwrap().concurrent.unwrap();
        assert_eq!(c.root_table_entries, after, "{visit:?}");
    }
}

/// [`SimpleObjects`] that, once armed, makes a new root table in Pause
/// Mark End (its weak-reference hook) and copies the entries of `from`
/// into it: a table made after mark start, before the relocation set is
/// chosen.
struct LateTable {
    objects: Arc<SimpleObjects>,
    armed: AtomicBool,
    from: Mutex<Option<Arc<RootTable>>>,
    late: Mutex<Option<Arc<RootTable>>>,
}

impl Binding for LateTable {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        self.objects.scan_object(obj, v)
    }
    fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
        self.objects.root_tables(report)
    }
    fn process_weak_refs(&self, _refs: &mut WeakRefs<'_>) -> WeakPass {
        if self.armed.swap(false, Ordering::SeqCst) {
            let from = self
                .from
                .lock()
                .unwrap()
                .clone()
                .expect("set before arming");
            let late = self.objects.root_table();
            // In the pause: the entries read now are current.
            for r in from.roots() {
                late.push(r);
            }
            *self.late.lock().unwrap() = Some(late);
        }
        WeakPass::Done
    }
}

/// A table made after Pause Mark Start (here in Pause Mark End) is
/// forwarded too: its entries, current when stored, name objects of the
/// relocation set chosen afterwards.
#[test]
fn a_table_made_during_the_cycle_is_forwarded_too() {
    let objects = SimpleObjects::new();
    let binding = Arc::new(LateTable {
        objects: objects.clone(),
        armed: AtomicBool::new(false),
        from: Mutex::new(None),
        late: Mutex::new(None),
    });
    let rt = runtime(&binding, RootTableVisit::Concurrent);
    let mut me = rt.attach_mutator().unwrap();
    let roots = objects.root_table();
    let mut ids = Ids::from(1);
    let kept = fragmented(&mut me, &roots, &mut ids, 40_000, 8);
    *binding.from.lock().unwrap() = Some(roots.clone());
    binding.armed.store(true, Ordering::SeqCst);
    let stats = me.collect().unwrap();
    assert!(
        stats.objects_relocated > 0,
        "the kept objects' pages were evacuated"
    );
    let late = binding
        .late
        .lock()
        .unwrap()
        .clone()
        .expect("made in the cycle");
    assert_eq!(late.len(), kept.len());
    for (i, &id) in kept.iter().enumerate() {
        let (a, b) = (roots.get(i).unwrap(), late.get(i).unwrap());
        assert_eq!(a, b, "entry {i}: the late table names the old copy");
        // SAFETY: read from the tables since the last poll.
        unsafe { check(b, id) };
    }
}

/// One model, and so one set of root tables, reported by the bindings of
/// two concurrent runtimes (a hostile embedder): each runtime's cycles see
/// the other's tables busy or full of references that are not its own,
/// and fail with a typed error; none hangs or panics, and each runtime's
/// objects stay intact in its own tables.
#[test]
fn tables_reported_by_two_runtimes_fail_collections_with_typed_errors() {
    common::with_deadline(
        "two runtimes, one model",
        std::time::Duration::from_secs(120),
        || {
            let objects = SimpleObjects::new();
            let (a, b) = (
                runtime(&objects, RootTableVisit::Concurrent),
                runtime(&objects, RootTableVisit::Concurrent),
            );
            let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let run = |rt: Runtime, seed: u64, busy: Arc<std::sync::atomic::AtomicUsize>| {
                let objects = objects.clone();
                std::thread::spawn(move || {
                    let mut me = rt.attach_mutator().unwrap();
                    let table = objects.root_table();
                    let mut ids = Ids::from(seed);
                    let kept = fragmented(&mut me, &table, &mut ids, 4_000, 4);
                    for round in 0..40 {
                        match me.collect() {
                            Ok(_) => {}
                            Err(hotmem::GcError::RootTableInUse) => {
                                busy.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(hotmem::GcError::InvalidReference { .. }) => {}
                            Err(e) => panic!("round {round}: {e}"),
                        }
                        // Entries move while the other runtime may be marking.
                        if let Some(r) = table.swap_remove(0) {
                            table.push(Some(r));
                        }
                    }
                    // The failed cycles freed nothing: every object is intact.
                    let roots = table.roots();
                    let mut ids: Vec<u64> = roots
                        .iter()
                        .map(|r| {
                            let r = r.expect("kept");
                            // SAFETY: read from the table now; no poll since.
                            unsafe { check(r, SimpleObjects::header(r)[1]) };
                            // SAFETY: as above.
                            unsafe { SimpleObjects::header(r)[1] }
                        })
                        .collect();
                    ids.sort_unstable();
                    assert_eq!(ids, kept);
                })
            };
            let ta = run(a, 1, busy.clone());
            let tb = run(b, 1 << 40, busy.clone());
            ta.join().unwrap();
            tb.join().unwrap();
        },
    );
}
