//! The barriers: the one load path and the one store path that every
//! reference read out of, or written into, a heap object takes, and which
//! of the runtime's barriers they call ([`BarrierMode`]), decided once from
//! the runtime's collector.
//!
//! - **Store**: a reference goes through `Mutator::store_ref` (with two
//!   generations it remembers an old-to-young slot; with the concurrent
//!   collector, while marking, it logs the reference it overwrites); a
//!   number or a literal goes through `Mutator::before_overwrite` (that
//!   log) and an atomic store. Initializing stores into an object
//!   allocated since the last call that may collect take neither.
//! - **Load**: with the concurrent collector, a reference goes through
//!   `Mutator::after_load`, which returns a moved object's new address
//!   (copying it if no GC worker has yet) and heals the slot; with the
//!   stop-the-world collector a load is a plain load, since objects move
//!   only while the VM is stopped at a safepoint.

use hotmem::{CollectorMode, Mutator};

use super::super::value::Value;
use super::slot::ValueSlot;

/// Which of the runtime's barriers the VM's loads and stores take.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum BarrierMode {
    /// The store barriers only: loads are plain loads.
    StoreOnly,
    /// The store barriers and the load barrier.
    LoadAndStore,
}

impl BarrierMode {
    /// The barriers `collector` needs.
    pub(crate) fn of(collector: CollectorMode) -> BarrierMode {
        match collector {
            CollectorMode::StopTheWorld => BarrierMode::StoreOnly,
            // The concurrent collector, and any collector this VM does not
            // know yet: every barrier (a missing one is a use-after-free,
            // an extra one only takes time).
            _ => BarrierMode::LoadAndStore,
        }
    }

    /// Reads the value in `word`, a slot of a heap object.
    ///
    /// # Safety
    /// `word` is a slot of a live object, read before the next call that
    /// may collect; `me` is the VM's mutator.
    #[inline(always)]
    pub(crate) unsafe fn load(self, me: &Mutator, word: *mut u64) -> Value {
        // SAFETY: the caller's slot of a live object.
        let slot = unsafe { ValueSlot::new(word) };
        // One load of the word; the barrier only for a reference.
        let value = Value::from_bits(slot.load_bits());
        if self == BarrierMode::LoadAndStore {
            return load_barrier(me, slot, value);
        }
        value
    }

    /// Writes `value` into `word`, a slot of a heap object.
    ///
    /// # Safety
    /// As [`BarrierMode::load`]; `value` is a number, a literal or a
    /// reference to a live object.
    #[inline(always)]
    pub(crate) unsafe fn store(self, me: &Mutator, word: *mut u64, value: Value) {
        // SAFETY: the caller's slot of a live object.
        let slot = unsafe { ValueSlot::new(word) };
        match value.as_object() {
            Some(obj) => me.store_ref(slot, obj),
            None => {
                me.before_overwrite(&slot);
                slot.store_bits(value.bits());
            }
        }
    }
}

/// The load barrier on `value`, just read from `slot`. Out of line: its
/// code inlined at every load slowed the interpreter in every mode
/// (fields.lox 1.3 s -> 2.2 s with the generational collector, where it
/// never runs).
#[inline(never)]
fn load_barrier(me: &Mutator, slot: ValueSlot, value: Value) -> Value {
    match value.as_object() {
        Some(obj) => Value::object(me.after_load(&slot, obj).get()),
        None => value,
    }
}
