//! The barriers: every reference a mutator loads from or stores into a
//! heap object may go through [`Mutator::load_ref`] and
//! [`Mutator::store_ref`]. Today the store barrier feeds the young
//! generation's remembered set; concurrent marking (SATB) and relocation
//! (self-healing loads) attach here without changing embedders.

use super::Mutator;
use crate::gc::generations::{GenerationalState, SlotBuffer};
use crate::vm::{ObjectReference, Slot};
use parking_lot::Mutex;
use std::sync::Arc;

impl Mutator {
    /// The load barrier: reads a reference field through it. A plain load
    /// today (collections stop the world). Concurrent relocation attaches
    /// here: a reference into a page being evacuated is forwarded through
    /// the page's forwarding table (relocating the object if no worker has
    /// yet) and the slot healed with the new address.
    #[inline]
    pub fn load_ref<S: Slot>(&self, slot: S) -> Option<ObjectReference> {
        slot.load()
    }

    /// The store barrier: writes a reference field through it.
    ///
    /// With [`Generations::YoungAndOld`](crate::Generations::YoungAndOld),
    /// a store into an old object of a reference to a young one also
    /// remembers the slot's address, which the next young collection treats
    /// as a root (and updates when the young object moves). Every store of a
    /// reference into an object that may be old must come through here; a
    /// store into an object allocated since the last call that may collect
    /// (young, unless allocated old or large) need not. With
    /// [`Generations::Single`](crate::Generations::Single) it is a plain
    /// store.
    ///
    /// Concurrent (SATB) marking attaches here too: while marking is
    /// active, the value being overwritten is pushed to this thread's
    /// marking buffer first, so the snapshot at the start of marking stays
    /// reachable.
    #[inline]
    pub fn store_ref<S: Slot>(&self, slot: S, value: ObjectReference) {
        slot.store(value);
        if let Some(barrier) = &self.barrier {
            barrier.stored(slot.address().get(), value.get());
        }
    }
}

/// A mutator's side of the store barrier.
pub(super) struct StoreBarrier {
    state: Arc<GenerationalState>,
    buffer: Arc<Mutex<SlotBuffer>>,
    /// [`OldTable::unit_shift`](crate::gc::generations::OldTable::unit_shift), kept here so that the common store (slot
    /// and value in the same page) is decided without a load.
    shift: u32,
}

impl StoreBarrier {
    pub(super) fn new(state: &Arc<GenerationalState>) -> StoreBarrier {
        StoreBarrier {
            buffer: state.register(),
            shift: state.old.unit_shift(),
            state: state.clone(),
        }
    }

    /// After `slot` was given `value`: remembers the slot if it lies in an
    /// old page and `value` in a young one. A slot and a value in the same
    /// page are both old or both young: no table lookup.
    #[inline]
    pub(super) fn stored(&self, slot: usize, value: usize) {
        if (slot ^ value) >> self.shift == 0 {
            return;
        }
        let old = &self.state.old;
        if old.is_old(slot) && old.is_young(value) {
            GenerationalState::remember(&self.buffer, slot);
        }
    }
}
