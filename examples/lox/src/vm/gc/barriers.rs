//! The barriers: the one load path and the one store path that every
//! reference read out of, or written into, a heap object takes, compiled
//! once per barrier set ([`BarrierSet`]): the interpreter is generic over
//! the set, and the VM instantiates it with the one its runtime's
//! collector names, so each copy carries only its own barriers' code.
//!
//! - **Store**: a reference goes through `store_ref` (with two
//!   generations it remembers an old-to-young slot; with the concurrent
//!   collector, while marking, it logs the reference it overwrites); a
//!   number or a literal goes through `before_overwrite` (that log) when
//!   the word it overwrites holds a reference, then an atomic store
//!   (nothing but the store in the stop-the-world copy). Initializing stores
//!   into an object allocated since the last call that may collect take
//!   neither.
//! - **Load**: in the concurrent copy a reference goes through the load
//!   barrier, which returns a moved object's new address (copying it if no
//!   GC worker has yet) and heals the slot: its fast path (a tag test and
//!   one table lookup on the word's address, `BarrierSet::may_be_stale`)
//!   inlined, its slow path out of line. In the stop-the-world copy a load is a plain load,
//!   since objects move only while the VM is stopped at a safepoint.

use hotmem::{BarrierKind, BarrierSet, Mutator};

use super::super::value::Value;
use super::slot::ValueSlot;

/// Reads the value in `word`, a slot of a heap object, through `B`'s load
/// barrier.
///
/// # Safety
/// `word` is a slot of a live object, read before the next call that may
/// collect; `me` is the VM's mutator and `b` its runtime's set.
#[inline(always)]
pub(crate) unsafe fn load<B: BarrierSet>(b: B, me: &Mutator, word: *mut u64) -> Value {
    // SAFETY: the caller's slot of a live object.
    let slot = unsafe { ValueSlot::new(word) };
    // One load of the word; the barrier only for a reference, its fast
    // path on the word's address as it is (no `ObjectReference` made, no
    // re-encoding).
    let value = Value::from_bits(slot.load_bits());
    if B::KIND == BarrierKind::StopTheWorld {
        return value;
    }
    if value.is_object() && b.may_be_stale(me, value.addr()) {
        // SAFETY: the caller's slot.
        return unsafe { load_slow(b, me, word, value) };
    }
    value
}

/// [`load`] for a reference that may be stale: where its object is now
/// (the slot healed), out of line. Given the word rather than its
/// `ValueSlot`, so that the fast path need not keep a slot in memory for
/// it.
///
/// # Safety
/// As [`load`]; `value` was just read from `word`.
#[cold]
#[inline(never)]
unsafe fn load_slow<B: BarrierSet>(b: B, me: &Mutator, word: *mut u64, value: Value) -> Value {
    // SAFETY: the caller's slot of a live object.
    let slot = unsafe { ValueSlot::new(word) };
    match value.as_object() {
        Some(obj) => Value::object(b.after_load(me, &slot, obj).get()),
        None => value,
    }
}

/// Writes `value` into `word`, a slot of a heap object, through `B`'s
/// store barriers.
///
/// # Safety
/// As [`load`]; `value` is a number, a literal or a reference to a live
/// object.
#[inline(always)]
pub(crate) unsafe fn store<B: BarrierSet>(b: B, me: &Mutator, word: *mut u64, value: Value) {
    // SAFETY: the caller's slot of a live object.
    let slot = unsafe { ValueSlot::new(word) };
    match value.as_object() {
        Some(obj) => b.store_ref(me, slot, obj),
        None => {
            // The snapshot barrier logs the reference a store overwrites:
            // over a number or a literal there is none to log, and the
            // word's tag says so in one load, where the barrier's own test
            // of the collector's phase takes a chain of them. (A fresh
            // object's word may hold anything: a word that looks like a
            // reference takes the barrier, which passes fresh objects over.)
            let over_reference = match B::KIND {
                BarrierKind::StopTheWorld => false,
                _ => Value::from_bits(slot.load_bits()).is_object(),
            };
            if over_reference {
                b.before_overwrite(me, &slot);
            }
            slot.store_bits(value.bits());
        }
    }
}
