//! Loom models of a weak upgrade racing a pause, on the real code
//! (`crate::sync` is loom's in these builds): a thread that is no mutator
//! upgrades a weak handle while a collection's pause scans the strong
//! handles and clears the weak handles whose object it did not mark. With
//! the pause gate, the strong handle the upgrade makes is one the scan saw
//! (its object lives), or the upgrade ran after the clearing and found
//! nothing; the racy baseline (`global_handle(weak.get()?)`, no gate) is
//! shown to keep a handle to an object the pause found dead.
//!
//! And of a weak set's lookup, and of a weak handle's read, racing Pause
//! Mark End and the sweep after it: what a lookup returns was kept alive before the pause drained the
//! log (so marking reached it), or the lookup ran after the pause and saw
//! the sweep's verdict; the racy baseline (keep alive after letting go of
//! the gate, no epoch) is shown to return an object the pause found dead.
//!
//! And of an ephemeron's read racing the clearing of the pairs whose key
//! died, after Pause Mark End: the read returns a pair whose key was kept
//! alive before the pause drained the log, or nothing.
//!
//! And of a finalizer registration racing the GC thread's forwarding of
//! the registry after Pause Relocate Start: the moved object stays
//! registered once, and registering its new address is refused.
//!
//! Run: `cargo xtask loom`.

use super::{EphemeronTable, Finalizers, KeepAlive, Sweeps, WeakSet, WeakSets, WeakTable};
use crate::error::FinalizerError;
use crate::pause_gate::PauseGate;
use crate::roots::table_gc::GcTable;
use crate::roots::table_gc::RootForwarder;
use crate::roots::{Handle, HandleTable};
use crate::sync::Mutex;
use crate::vm::ObjectReference;
use hotmem_os::Address;
use std::sync::Arc;

fn r(a: usize) -> ObjectReference {
    ObjectReference::from_address(Address::new(a)).expect("aligned, not null")
}

/// A pause: marks the object if a strong handle names it, clears the weak
/// handles of what it did not mark; whether it marked.
fn pause(gate: &PauseGate, strong: &HandleTable, weak: &WeakTable) -> bool {
    let _closed = gate.close();
    let mut marked = false;
    strong.for_each_word(|x| marked |= *x == Some(r(0x1000)));
    weak.update(|x| marked.then_some(x));
    marked
}

fn race(upgrade: fn(&crate::weak::WeakHandle, &Arc<HandleTable>) -> Option<Handle>) {
    loom::model(move || {
        let gate = Arc::new(PauseGate::default());
        let strong = Arc::new(HandleTable::default());
        let weak = Arc::new(WeakTable::new(None, gate.clone(), strong.clone()));
        let w = weak.add(r(0x1000));
        let gc = {
            let (gate, strong, weak) = (gate.clone(), strong.clone(), weak.clone());
            loom::thread::spawn(move || pause(&gate, &strong, &weak))
        };
        // Held until the pause is over, as an embedder holds it.
        let upgraded = upgrade(&w, &strong);
        let marked = gc.join().unwrap();
        assert!(
            upgraded.is_none() || marked,
            "a strong handle to an object the pause found dead"
        );
    });
}

#[test]
fn loom_an_upgrade_racing_a_pause_keeps_only_what_the_pause_marked() {
    race(|w, _| w.upgrade().expect("not inside a collection"));
}

#[test]
#[should_panic(expected = "a strong handle to an object the pause found dead")]
fn loom_the_two_step_upgrade_can_keep_a_dead_object() {
    // Before the fix: read (no gate), then a handle made.
    race(|w, strong| w.read_without_gate().map(|x| strong.add_handle(x)));
}

/// The keep-alive log of a concurrent marking.
#[derive(Default)]
struct Log(Mutex<Vec<usize>>);

impl KeepAlive for Log {
    fn keep_alive(&self, obj: ObjectReference) {
        self.0.lock().push(obj.get());
    }
}

fn lookup_race(find: fn(&WeakSet) -> Option<ObjectReference>) {
    loom::model(move || {
        let gate = Arc::new(PauseGate::default());
        let log = Arc::new(Log::default());
        let sets = WeakSets::default();
        let set = sets.add(Some(log.clone()), gate.clone(), 0..usize::MAX);
        let table = set.table().clone();
        table.insert_for_model(1, r(0x1000));
        let gc = loom::thread::spawn(move || {
            // Pause Mark End: what was logged is marked; the set's sweep
            // begins with that verdict and runs after the pause.
            let closed = gate.close();
            let marked = log.0.lock().contains(&0x1000);
            let live = move |_: ObjectReference| marked;
            let sweeps = Sweeps::begin(vec![table], None, None, &live);
            drop(closed);
            sweeps.run();
            marked
        });
        let found = find(&set);
        let marked = gc.join().unwrap();
        assert!(
            found.is_none() || marked,
            "a lookup returned an object the pause found dead"
        );
    });
}

#[test]
fn loom_a_weak_set_lookup_racing_mark_end_returns_only_what_marking_kept() {
    lookup_race(|s| {
        s.find_detached(1, |_| true)
            .expect("not inside a collection")
    });
}

#[test]
#[should_panic(expected = "a lookup returned an object the pause found dead")]
fn loom_a_lookup_that_keeps_alive_after_the_gate_can_return_a_dead_object() {
    lookup_race(|s| s.table().find_unsettled(1));
}

/// A weak handle read racing Pause Mark End of a concurrent cycle that
/// clears the weak handles after the pause: as for the sets, what the read
/// returns was logged before the pause drained the log, or the read saw
/// the sweep's verdict.
fn handle_race(read: fn(&super::WeakHandle) -> Option<ObjectReference>) {
    loom::model(move || {
        let gate = Arc::new(PauseGate::default());
        let log = Arc::new(Log::default());
        let strong = Arc::new(HandleTable::default());
        let keep: Arc<dyn KeepAlive> = log.clone();
        let table = Arc::new(WeakTable::new(Some(keep), gate.clone(), strong));
        let w = table.add(r(0x1000));
        let gc = loom::thread::spawn(move || {
            let closed = gate.close();
            let marked = log.0.lock().contains(&0x1000);
            let live = move |_: ObjectReference| marked;
            let sweeps = Sweeps::begin(Vec::new(), Some(table), None, &live);
            drop(closed);
            sweeps.run();
            marked
        });
        let got = read(&w);
        let marked = gc.join().unwrap();
        assert!(
            got.is_none() || marked,
            "a weak read returned an object the pause found dead"
        );
    });
}

#[test]
fn loom_a_weak_read_racing_a_deferred_clearing_returns_only_what_marking_kept() {
    handle_race(|w| w.get());
}

#[test]
#[should_panic(expected = "a weak read returned an object the pause found dead")]
fn loom_a_weak_read_without_the_gate_can_return_a_dead_object() {
    handle_race(|w| w.read_without_gate());
}

/// An ephemeron read racing Pause Mark End of a concurrent cycle that
/// clears the pairs whose key died after the pause (the pair is pending:
/// the pause found its key dead unless the read logged it first).
#[test]
fn loom_an_ephemeron_read_racing_the_clearing_returns_only_what_marking_kept() {
    loom::model(|| {
        let gate = Arc::new(PauseGate::default());
        let log = Arc::new(Log::default());
        let keep: Arc<dyn KeepAlive> = log.clone();
        let table = Arc::new(EphemeronTable::new(Some(keep), gate.clone()));
        let e = table.add(r(0x1000), r(0x2000));
        let gc = loom::thread::spawn(move || {
            let closed = gate.close();
            let marked = log.0.lock().contains(&0x1000);
            let live = move |_: ObjectReference| marked;
            let pending = if marked { Vec::new() } else { vec![0] };
            let sweeps = Sweeps::begin(Vec::new(), None, Some((table, pending)), &live);
            drop(closed);
            let swept = sweeps.run();
            (marked, swept.ephemerons)
        });
        let got = e.get();
        let (marked, cleared) = gc.join().unwrap();
        assert!(
            got.is_none() || marked,
            "an ephemeron read returned a pair the pause found dead"
        );
        assert_eq!(
            cleared,
            u64::from(!marked),
            "cleared once, by the read or the clearing"
        );
    });
}

/// Forwards 0x1000 (in the relocation set) to 0x9000.
struct Moved;

impl RootForwarder for Moved {
    fn forward(&self, obj: ObjectReference) -> ObjectReference {
        if obj == r(0x1000) { r(0x9000) } else { obj }
    }
}

/// A mutator registers the new address of a registered object that a
/// concurrent cycle moved, while the GC thread forwards the registry
/// after Pause Relocate Start: refused whichever runs first, and the
/// registry ends with the object once, at its new address.
#[test]
fn loom_a_registration_racing_the_registrys_forwarding_finds_the_moved_object() {
    loom::model(|| {
        let f = Arc::new(Finalizers::default());
        f.register(r(0x1000)).unwrap();
        let in_set = |x: ObjectReference| x == r(0x1000);
        let noted = f.note_relocation_set(in_set);
        f.begin_forwarding(noted, in_set, Arc::new(Moved));
        let gc = {
            let f = f.clone();
            loom::thread::spawn(move || f.finish_forwarding())
        };
        let again = f.register(r(0x9000));
        gc.join().unwrap();
        assert_eq!(again, Err(FinalizerError::AlreadyRegistered(r(0x9000))));
        assert_eq!(f.registered_count(), 1);
        assert_eq!(f.register(r(0x1000)), Ok(()), "the old address is free");
    });
}
