//! [`HookedObjects`]: [`SimpleObjects`] with a weak table of the binding's
//! own, keyed by a number the caller chooses (an object's id, say), that
//! its weak hooks sweep after marking and forward after relocation, inside
//! the pauses. It is the in-tree baseline of the runtime's
//! [`WeakSet`](crate::WeakSet): what a VM's intern table was before the
//! runtime had one (the `weak_refs` bench and the `weak_pauses` example
//! compare them).

use super::SimpleObjects;
use crate::roots::RootTable;
use crate::vm::{
    Binding, ObjectReference, SimpleSlot, SlotVisitor, WeakForwarding, WeakPass, WeakRefs,
};
use crate::{Address, Mutator};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// [`SimpleObjects`] whose binding also keeps a weak table by key, which
/// its weak hooks sweep after marking and forward after relocation, inside
/// the pauses: the in-tree baseline of [`WeakSet`](crate::WeakSet).
///
/// ```
/// # use hotmem::objects::{HookedObjects, SimpleObjects, build};
/// # use hotmem::{NumaConfig, Runtime};
/// let vm = HookedObjects::new(SimpleObjects::new());
/// let rt = Runtime::builder().numa(NumaConfig::Off).binding(vm.clone()).build()?;
/// let mut me = rt.attach_mutator()?;
/// let roots = vm.objects().root_table();
/// let obj = build::object(&mut me, &roots, 0, 1, 7)?;
/// vm.insert(7, obj);
/// roots.pop(); // only the weak table refers to it now
/// me.collect()?;
/// assert_eq!(vm.find(&me, 7), None, "the hook swept it");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct HookedObjects {
    objects: Arc<SimpleObjects>,
    table: Mutex<HashMap<u64, ObjectReference>>,
}

impl HookedObjects {
    /// `objects`, with an empty weak table.
    pub fn new(objects: Arc<SimpleObjects>) -> Arc<HookedObjects> {
        Arc::new(HookedObjects {
            objects,
            table: Mutex::new(HashMap::new()),
        })
    }

    /// The object model.
    pub fn objects(&self) -> &Arc<SimpleObjects> {
        &self.objects
    }

    /// Puts `obj` in the table under `key` (replacing what was there).
    pub fn insert(&self, key: u64, obj: ObjectReference) {
        self.table.lock().insert(key, obj);
    }

    /// The object under `key`, read by `me` and kept alive for a
    /// concurrent marking in progress (read from a weak table, it may not
    /// be in the marking's snapshot).
    pub fn find(&self, me: &Mutator, key: u64) -> Option<ObjectReference> {
        let found = self.table.lock().get(&key).copied();
        if let Some(obj) = found {
            me.keep_alive(obj);
        }
        found
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.table.lock().len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Binding for HookedObjects {
    type Slot = SimpleSlot;
    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }
    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, visitor: &mut V) {
        self.objects.scan_object(obj, visitor);
    }
    fn slot_at(&self, addr: Address) -> Option<SimpleSlot> {
        self.objects.slot_at(addr)
    }
    fn root_tables(&self, report: &mut dyn FnMut(&Arc<RootTable>)) {
        self.objects.root_tables(report);
    }
    fn process_weak_refs(&self, refs: &mut WeakRefs<'_>) -> WeakPass {
        self.table.lock().retain(|_, obj| refs.is_live(*obj));
        WeakPass::Done
    }
    fn forward_weak_refs(&self, refs: &WeakForwarding<'_>) {
        for obj in self.table.lock().values_mut() {
            *obj = refs.forwarded(*obj);
        }
    }
}
