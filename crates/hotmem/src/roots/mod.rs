//! Roots, in one room: the roots the runtime owns, which every collection
//! scans and updates besides the ones the binding reports, are here:
//! [`Handle`]s for Rust embedders that keep references in Rust locals,
//! pins ([`PinGuard`]) for objects handed to native code, [`ShadowStack`]s
//! (an interpreter's value stack, scanned in place), and the list of
//! attached mutators whose roots the binding reports. The binding's hooks
//! ([`Binding::scan_global_roots`](crate::Binding::scan_global_roots),
//! [`Binding::scan_mutator_roots`](crate::Binding::scan_mutator_roots),
//! and [`Binding::slot_at`](crate::Binding::slot_at) for shadow stacks'
//! words and remembered slots) are in `vm/binding.rs`; the phase that
//! marks from all of them and updates them after relocation, for every
//! collector, is `gc/core/root_scan.rs`.

mod handles;
#[cfg(all(test, hotmem_loom))]
mod loom_models;
mod pins;
mod root_table;
mod shadow_stack;
pub(crate) mod table_gc;

pub use handles::Handle;
pub(crate) use handles::HandleTable;
pub use pins::PinGuard;
pub(crate) use pins::PinTable;
pub use root_table::RootTable;
pub use shadow_stack::ShadowStack;
pub(crate) use shadow_stack::{Commit, StackArea};

use crate::vm::ObjectReference;
use hotmem_safepoint::MutatorId;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// Every handle table and pin of a runtime, and its attached mutators:
/// what each collection scans besides the binding's global roots.
#[derive(Default)]
pub(crate) struct RootRegistry {
    global: Arc<HandleTable>,
    tables: Mutex<Vec<Weak<HandleTable>>>,
    pub(crate) pins: Arc<PinTable>,
    /// The attached mutators, whose roots the binding reports.
    mutators: Mutex<Vec<MutatorId>>,
    /// Every shadow stack, scanned while it lives.
    stacks: Mutex<Vec<Weak<StackArea>>>,
}

impl RootRegistry {
    /// A new table, scanned while any handle of it lives.
    pub(crate) fn new_table(&self) -> Arc<HandleTable> {
        let t = Arc::new(HandleTable::default());
        let mut tables = self.tables.lock();
        tables.retain(|w| w.strong_count() > 0);
        tables.push(Arc::downgrade(&t));
        t
    }

    pub(crate) fn global_handle(&self, obj: ObjectReference) -> Handle {
        self.global.add_handle(obj)
    }

    /// The global table, where handles that belong to no mutator live.
    pub(crate) fn global_table(&self) -> Arc<HandleTable> {
        self.global.clone()
    }

    /// A mutator attached: the binding reports its roots from now on.
    pub(crate) fn attach(&self, id: MutatorId) {
        self.mutators.lock().push(id);
    }

    /// A mutator detached.
    pub(crate) fn detach(&self, id: MutatorId) {
        self.mutators.lock().retain(|&m| m != id);
    }

    /// The attached mutators now.
    pub(crate) fn mutators(&self) -> Vec<MutatorId> {
        self.mutators.lock().clone()
    }

    /// Registers a shadow stack: scanned until it is dropped.
    pub(crate) fn add_stack(&self, stack: &ShadowStack) {
        let mut stacks = self.stacks.lock();
        stacks.retain(|w| w.strong_count() > 0);
        stacks.push(Arc::downgrade(stack.area()));
    }

    /// Every live shadow stack.
    pub(crate) fn stacks(&self) -> Vec<Arc<StackArea>> {
        self.stacks
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Every live table, the global one first.
    pub(crate) fn tables(&self) -> Vec<Arc<HandleTable>> {
        let mut out = vec![self.global.clone()];
        out.extend(self.tables.lock().iter().filter_map(Weak::upgrade));
        out
    }
}
