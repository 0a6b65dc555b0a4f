//! Loom models of the handle table's race, on the real code (`crate::sync`
//! is loom's in these builds): a clone made on a thread that is no
//! mutator racing a collection's update of the table. The clone reads the
//! entry and makes the new one under one lock acquisition, which the
//! update also takes, so it names the moved object's new address in every
//! interleaving; the racy baseline (read, then add: two acquisitions) is
//! shown to fail.
//!
//! Run: `cargo xtask loom`.

use super::HandleTable;
use crate::vm::ObjectReference;
use hotmem_os::Address;
use std::sync::Arc;

fn r(a: usize) -> ObjectReference {
    ObjectReference::from_address(Address::new(a)).expect("aligned, not null")
}

/// The collection's update: the object at 0x1000 moved to 0x2000.
fn update(table: &HandleTable) {
    table.for_each(|x| {
        if *x == r(0x1000) {
            *x = r(0x2000);
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
