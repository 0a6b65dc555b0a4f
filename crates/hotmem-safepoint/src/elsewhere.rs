//! A thread's place in other coordinators: where else it is registered and
//! which safepoints it owns there, for the checks that keep a wait in one
//! coordinator from closing a cycle through another.
//!
//! A thread registered with coordinators A and B that waits inside A (in a
//! `begin`, a handshake, or stopped in A's safepoint) cannot poll B, so a
//! safepoint of B waits for it if it runs managed code there. Two cycles
//! that follow are certain, and found before anything changes:
//!
//! * the caller of a `begin` or a handshake on A runs managed code on B
//!   ([`managed_elsewhere`]): e.g. two mutators of both, each beginning a
//!   safepoint on one of them, wait for each other forever;
//! * a thread that runs managed code on B is stopped in a safepoint of A
//!   that the caller of B's `begin` owns ([`stopped_in_mine`]): it can
//!   only reach B's poll after the caller ends A's safepoint, which the
//!   caller, waiting in B's `begin`, never does.
//!
//! Both read states that cannot change while the cycle is possible: the
//! caller's own, and a thread stopped in the caller's safepoint, which does
//! nothing until the caller ends it.

use crate::ids::{MutatorId, SafepointId};
use crate::registry::{Slot, ThreadRecord};
use crate::state::ThreadState;
use crate::sync::{Arc, thread_local};
use std::cell::RefCell;

#[cfg(not(hotmem_loom))]
thread_local! {
    /// The calling thread's record, created at its first registration.
    static RECORD: Arc<ThreadRecord> = Arc::default();
    /// The safepoints the calling thread owns: (coordinator key, id).
    static OWNED: RefCell<Vec<(usize, SafepointId)>> = const { RefCell::new(Vec::new()) };
}

// loom's macro takes no `const` block.
#[cfg(hotmem_loom)]
thread_local! {
    static RECORD: Arc<ThreadRecord> = Arc::default();
    static OWNED: RefCell<Vec<(usize, SafepointId)>> = RefCell::new(Vec::new());
}

/// The calling thread's record, for a slot it is about to create.
pub(crate) fn record() -> Arc<ThreadRecord> {
    RECORD.with(Arc::clone)
}

/// The calling thread registered with coordinator `key` as `slot`.
pub(crate) fn registered(key: usize, slot: &Arc<Slot>) {
    slot.thread.slots.lock().push((key, Arc::clone(slot)));
}

/// The thread of `slot` unregistered from coordinator `key`.
pub(crate) fn unregistered(key: usize, slot: &Arc<Slot>) {
    let mut slots = slot.thread.slots.lock();
    if let Some(i) = slots
        .iter()
        .position(|(k, s)| *k == key && Arc::ptr_eq(s, slot))
    {
        slots.swap_remove(i);
    }
}

/// The calling thread owns safepoint `id` of coordinator `key` now.
pub(crate) fn owns(key: usize, id: SafepointId) {
    // Unreadable only while the thread is being torn down.
    let _ = OWNED.try_with(|o| o.borrow_mut().push((key, id)));
}

/// The calling thread's safepoint of coordinator `key` ended.
pub(crate) fn disowns(key: usize) {
    let _ = OWNED.try_with(|o| o.borrow_mut().retain(|(k, _)| *k != key));
}

/// The calling thread's registration with a coordinator other than `here`
/// where it runs managed code, if any.
pub(crate) fn managed_elsewhere(here: usize) -> Option<MutatorId> {
    let slots = RECORD.try_with(|r| r.slots()).unwrap_or_default();
    slots
        .iter()
        .find(|(key, slot)| *key != here && slot.state.snapshot().state == ThreadState::Managed)
        .map(|(_, slot)| slot.id)
}

/// Among the threads of coordinator `here` (`slots`, asked for only if
/// the caller owns a safepoint elsewhere), one that runs managed code here
/// and is stopped in a safepoint that the calling thread owns on another
/// coordinator: (its id here, the owned safepoint).
///
/// Its state there is read first: once it is stopped in the caller's
/// safepoint it stays stopped, and its state here stays what it was,
/// until the caller ends that safepoint.
pub(crate) fn stopped_in_mine(
    here: usize,
    slots: impl FnOnce() -> Vec<Arc<Slot>>,
) -> Option<(MutatorId, SafepointId)> {
    let owned: Vec<(usize, SafepointId)> = OWNED
        .try_with(|o| {
            o.borrow()
                .iter()
                .copied()
                .filter(|&(k, _)| k != here)
                .collect()
        })
        .unwrap_or_default();
    if owned.is_empty() {
        return None;
    }
    slots().iter().find_map(|slot| {
        let stopped = slot.thread.slots().into_iter().find_map(|(key, other)| {
            let &(_, id) = owned.iter().find(|&&(k, _)| k == key)?;
            let snapshot = other.state.snapshot();
            (snapshot.state == ThreadState::AtSafepoint && snapshot.safepoint == Some(id))
                .then_some(id)
        })?;
        (slot.state.snapshot().state == ThreadState::Managed).then_some((slot.id, stopped))
    })
}
