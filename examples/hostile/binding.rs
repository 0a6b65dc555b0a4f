//! [`Hostile`]: the sample binding ([`SimpleObjects`]) with a panic
//! planted in one of its callbacks.

use hotmem::objects::SimpleObjects;
use hotmem::{Address, Binding, MutatorId, ObjectReference, SimpleSlot, SlotVisitor};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A binding callback a panic can be planted in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Callback {
    /// `scan_global_roots`: marking's root scan, and the update's (or
    /// Pause Relocate Start's).
    GlobalRoots,
    /// `root_tables`: in Pause Mark Start (and in the stop-the-world
    /// collector's update).
    RootTables,
    /// `scan_mutator_roots`.
    MutatorRoots,
    /// `scan_object`, on the GC workers (marking, the update).
    ScanObject,
    /// `slot_at` (remembered slots, shadow stacks).
    SlotAt,
    /// `process_weak_refs`.
    ProcessWeakRefs,
    /// `forward_weak_refs`.
    ForwardWeakRefs,
}

impl Callback {
    /// Every callback, for generators.
    pub const ALL: [Callback; 7] = [
        Callback::GlobalRoots,
        Callback::RootTables,
        Callback::MutatorRoots,
        Callback::ScanObject,
        Callback::SlotAt,
        Callback::ProcessWeakRefs,
        Callback::ForwardWeakRefs,
    ];
}

/// A panic planted in `callback`, at its `nth` call (from 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PanicPlan {
    /// Where.
    pub callback: Callback,
    /// At which of its calls.
    pub nth: u64,
}

/// [`SimpleObjects`] that panics once, where its plan says.
pub struct Hostile {
    /// The model it delegates to.
    pub objects: Arc<SimpleObjects>,
    plan: Option<PanicPlan>,
    calls: [AtomicU64; 7],
    fired: AtomicBool,
}

impl Hostile {
    /// The model with `plan` planted (none: an honest binding).
    pub fn new(objects: Arc<SimpleObjects>, plan: Option<PanicPlan>) -> Hostile {
        Hostile {
            objects,
            plan,
            calls: Default::default(),
            fired: AtomicBool::new(false),
        }
    }

    /// Whether the planted panic went off.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Counts a call of `callback`; panics if it is the planned one.
    fn call(&self, callback: Callback) {
        let Some(plan) = self.plan.filter(|p| p.callback == callback) else {
            return;
        };
        let i = Callback::ALL
            .iter()
            .position(|&c| c == callback)
            .expect("listed");
        if self.calls[i].fetch_add(1, Ordering::SeqCst) + 1 == plan.nth {
            self.fired.store(true, Ordering::SeqCst);
            panic!(
                "the hostile binding panics in {callback:?}, call {}",
                plan.nth
            );
        }
    }
}

impl Binding for Hostile {
    type Slot = SimpleSlot;

    fn object_size(&self, obj: ObjectReference) -> usize {
        self.objects.object_size(obj)
    }

    fn scan_object<V: SlotVisitor<SimpleSlot>>(&self, obj: ObjectReference, v: &mut V) {
        self.call(Callback::ScanObject);
        self.objects.scan_object(obj, v)
    }

    fn scan_global_roots<V: SlotVisitor<SimpleSlot>>(&self, v: &mut V) {
        self.call(Callback::GlobalRoots);
        self.objects.scan_global_roots(v)
    }

    fn root_tables(&self, report: &mut dyn FnMut(&Arc<hotmem::RootTable>)) {
        self.call(Callback::RootTables);
        self.objects.root_tables(report)
    }

    fn scan_mutator_roots<V: SlotVisitor<SimpleSlot>>(&self, m: MutatorId, v: &mut V) {
        self.call(Callback::MutatorRoots);
        self.objects.scan_mutator_roots(m, v)
    }

    fn slot_at(&self, addr: Address) -> Option<SimpleSlot> {
        self.call(Callback::SlotAt);
        self.objects.slot_at(addr)
    }

    fn process_weak_refs(&self, refs: &mut hotmem::WeakRefs<'_>) -> hotmem::WeakPass {
        self.call(Callback::ProcessWeakRefs);
        self.objects.process_weak_refs(refs)
    }

    fn forward_weak_refs(&self, refs: &hotmem::WeakForwarding<'_>) {
        self.call(Callback::ForwardWeakRefs);
        self.objects.forward_weak_refs(refs)
    }
}
