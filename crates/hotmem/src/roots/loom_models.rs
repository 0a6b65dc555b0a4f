//! Loom models of the root tables' races, on the real code (`crate::sync`
//! is loom's in these builds):
//! - a handle clone made on a thread that is no mutator racing a
//!   collection's update of the table. The clone reads the entry and makes
//!   the new one under one lock acquisition, which the update also takes,
//!   so it names the moved object's new address in every interleaving; the
//!   racy baseline (read, then add: two acquisitions) is shown to fail;
//! - a mutator overwriting and moving entries of a [`RootTable`] while a
//!   GC worker marks it after Pause Mark Start, a chunk of one entry at a
//!   time: every value of the snapshot is marked;
//! - a reader of an entry racing the GC thread's forwarding of the table
//!   after Pause Relocate Start: the object is copied once, and the
//!   reader, the table and the GC thread all name that copy.
//!
//! Run: `cargo xtask loom`.

use super::table_gc::{GcTable, RootForwarder, Step};
use super::{HandleTable, RootTable};
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::vm::ObjectReference;
use hotmem_os::Address;
use std::convert::Infallible;
use std::sync::Arc;

fn r(a: usize) -> ObjectReference {
    ObjectReference::from_address(Address::new(a)).expect("aligned, not null")
}

/// The collection's update: the object at 0x1000 moved to 0x2000.
fn update(table: &HandleTable) {
    table.for_each_word(|x| {
        if *x == Some(r(0x1000)) {
            *x = Some(r(0x2000));
        }
    });
}

#[test]
fn loom_a_clone_racing_the_update_names_the_new_copy() {
    loom::model(|| {
        let table = Arc::new(HandleTable::default());
        let h = table.add_handle(r(0x1000));
        let gc = {
            let table = table.clone();
            loom::thread::spawn(move || update(&table))
        };
        let c = h.clone();
        gc.join().unwrap();
        assert_eq!(h.get(), r(0x2000));
        assert_eq!(c.get(), r(0x2000), "the clone names the old copy");
    });
}

#[test]
#[should_panic(expected = "the clone names the old copy")]
fn loom_the_racy_clone_can_name_the_old_copy() {
    loom::model(|| {
        let table = Arc::new(HandleTable::default());
        let h = table.add_handle(r(0x1000));
        let gc = {
            let table = table.clone();
            loom::thread::spawn(move || update(&table))
        };
        // Before the fix: the entry read, then the new one added.
        let c = table.add_handle(h.get());
        gc.join().unwrap();
        assert_eq!(c.get(), r(0x2000), "the clone names the old copy");
    });
}

/// The snapshot is `[A, B, C]`; while a GC worker marks the table one
/// entry per step, the mutator overwrites the last entry and moves the
/// second into the first (swap_remove): A, B and C are all marked.
#[test]
fn loom_entries_changed_while_the_table_is_marked_keep_the_snapshot() {
    loom::model(|| {
        let table = RootTable::new();
        for a in [0x1000, 0x2000, 0x3000] {
            table.push(Some(r(a)));
        }
        table.begin_marking(1).unwrap();
        let gc = {
            let table = table.clone();
            loom::thread::spawn(move || {
                let mut marked = Vec::new();
                let mut mark = |x: ObjectReference| -> Result<(), Infallible> {
                    marked.push(x.get());
                    Ok(())
                };
                while table.step(1, &mut mark).unwrap() == Step::More {}
                marked
            })
        };
        table.set(2, Some(r(0x4000)));
        table.swap_remove(0);
        let mut marked = gc.join().unwrap();
        marked.sort_unstable();
        marked.dedup();
        for a in [0x1000, 0x2000, 0x3000] {
            assert!(marked.contains(&a), "{a:#x} not marked: {marked:x?}");
        }
    });
}

/// Forwards 0x1000 to one copy, made by whoever comes first: a count of
/// copies and the copy's address, as a forwarding table's entry.
struct CopyOnce {
    copies: AtomicUsize,
    to: Mutex<Option<ObjectReference>>,
}

impl CopyOnce {
    /// No copy made yet.
    fn new() -> Arc<CopyOnce> {
        Arc::new(CopyOnce {
            copies: AtomicUsize::new(0),
            to: Mutex::new(None),
        })
    }
}

impl RootForwarder for CopyOnce {
    fn forward(&self, x: ObjectReference) -> ObjectReference {
        if x != r(0x1000) {
            return x;
        }
        let mut to = self.to.lock();
        *to.get_or_insert_with(|| {
            let n = self.copies.fetch_add(1, Ordering::Relaxed);
            r(0x8000 + 0x1000 * n)
        })
    }
}

/// A reader of a handle and of a table entry racing the GC thread's
/// forwarding: each names the one copy, and the tables hold it after.
#[test]
fn loom_readers_racing_the_forwarding_name_the_one_copy() {
    loom::model(|| {
        let copy = CopyOnce::new();
        let to: Arc<dyn RootForwarder> = copy.clone();
        let table = RootTable::new();
        table.push(Some(r(0x1000)));
        let handles = Arc::new(HandleTable::default());
        let h = handles.add_handle(r(0x1000));
        table.begin_forwarding(1, &to).unwrap();
        handles.begin_forwarding(1, &to).unwrap();
        drop(to);
        let gc = {
            let (table, handles) = (table.clone(), handles.clone());
            loom::thread::spawn(move || {
                let mut none = |_: ObjectReference| -> Result<(), Infallible> { Ok(()) };
                while table.step(1, &mut none).unwrap() == Step::More {}
                while handles.step(1, &mut none).unwrap() == Step::More {}
            })
        };
        let (a, b) = (table.get(0), h.get());
        gc.join().unwrap();
        assert_eq!(copy.copies.load(Ordering::Relaxed), 1, "copied once");
        let one = Some(r(0x8000));
        assert_eq!((a, Some(b)), (one, one));
        assert_eq!((table.get(0), Some(h.get())), (one, one));
        assert_eq!(
            Arc::strong_count(&copy),
            1,
            "the tables let the forwarder go"
        );
    });
}

/// The table is `[A, B, 0x1000]`; while the GC thread forwards it one
/// entry per step, the mutator removes the first entry, moving the last
/// into its place (swap_remove): once the forwarding ends, no entry names
/// the old copy, wherever the move fell between the steps.
#[test]
fn loom_an_entry_moved_while_the_table_is_forwarded_is_forwarded() {
    loom::model(|| {
        let to: Arc<dyn RootForwarder> = CopyOnce::new();
        let table = RootTable::new();
        for a in [0x2000, 0x3000, 0x1000] {
            table.push(Some(r(a)));
        }
        table.begin_forwarding(1, &to).unwrap();
        drop(to);
        let gc = {
            let table = table.clone();
            loom::thread::spawn(move || {
                let mut none = |_: ObjectReference| -> Result<(), Infallible> { Ok(()) };
                while table.step(1, &mut none).unwrap() == Step::More {}
            })
        };
        table.swap_remove(0);
        gc.join().unwrap();
        let roots = table.roots();
        assert!(roots.contains(&Some(r(0x8000))), "{roots:x?}");
        assert!(!roots.contains(&Some(r(0x1000))), "{roots:x?}");
    });
}
