//! [`Ephemeron`]: a key and a value, the value kept alive only while the
//! key is (JavaScript's `WeakMap` entry, Lua's weak-keyed table entry).

use super::keep_alive::KeepAlive;
use crate::pause_gate::PauseGate;
use crate::roots::table_gc::{GcTable, Guarded, RootForwarder, RootWord, RootWords};
use crate::slot_table::SlotTable;
use crate::sync::{Mutex, MutexGuard};
use crate::vm::ObjectReference;
use std::fmt;
use std::sync::Arc;

/// One pair: its key and value while the key lives; `None` once cleared
/// or free.
pub(crate) type Pair = Option<(ObjectReference, ObjectReference)>;

/// Pairs a pass of concurrent marking looks at under one hold of the lock.
const CHUNK: usize = 512;

/// Every ephemeron of a runtime.
pub(crate) struct EphemeronTable {
    entries: Mutex<Guarded<SlotTable<(ObjectReference, ObjectReference)>>>,
    /// Keeps what an ephemeron hands out alive while the concurrent
    /// collector marks.
    keep_alive: Option<Arc<dyn KeepAlive>>,
    /// Reads wait for the pause in progress (see [`PauseGate`]).
    gate: Arc<PauseGate>,
}

impl EphemeronTable {
    pub(crate) fn new(
        keep_alive: Option<Arc<dyn KeepAlive>>,
        gate: Arc<PauseGate>,
    ) -> EphemeronTable {
        EphemeronTable {
            entries: Mutex::default(),
            keep_alive,
            gate,
        }
    }

    /// What pair `index` holds, kept alive for the cycle that marks now:
    /// read between two pauses (as a weak handle is).
    fn read(&self, index: usize) -> Pair {
        self.gate.outside_pauses(|| {
            let pair = {
                let mut g = self.entries.lock();
                let Guarded { slots, gc } = &mut *g;
                let word = slots.entries_mut().get_mut(index)?;
                gc.heal(word);
                *word
            };
            if let (Some((k, v)), Some(keep)) = (pair, &self.keep_alive) {
                keep.keep_alive(k);
                keep.keep_alive(v);
            }
            pair
        })
    }

    pub(crate) fn add(self: &Arc<Self>, key: ObjectReference, value: ObjectReference) -> Ephemeron {
        let index = self.entries.lock().slots.add(Some((key, value)));
        Ephemeron {
            table: self.clone(),
            index,
        }
    }

    /// Runs `f` on every pair, by index, taking the lock for
    /// [`CHUNK`] pairs at a time: for concurrent marking, while mutators
    /// read and add pairs (each waits for one chunk at most). A pair added
    /// meanwhile may or may not be seen.
    pub(crate) fn for_each_chunked(&self, mut f: impl FnMut(usize, Pair)) {
        let mut start = 0;
        loop {
            let mut g = self.entries.lock();
            let pairs = g.slots.entries_mut();
            if start >= pairs.len() {
                return;
            }
            let end = (start + CHUNK).min(pairs.len());
            for (i, pair) in pairs[start..end].iter().enumerate() {
                f(start + i, *pair);
            }
            start = end;
        }
    }

    /// Keeps the indices of `indices` for whose pair `keep` says so (an
    /// index past the table's end is dropped), taking the lock for
    /// [`CHUNK`] indices at a time (as [`EphemeronTable::for_each_chunked`]).
    pub(crate) fn retain_chunked(
        &self,
        indices: &mut Vec<usize>,
        mut keep: impl FnMut(Pair) -> bool,
    ) {
        let mut kept = Vec::with_capacity(indices.len());
        for chunk in indices.chunks(CHUNK) {
            let mut g = self.entries.lock();
            let pairs = g.slots.entries_mut();
            kept.extend(
                chunk
                    .iter()
                    .copied()
                    .filter(|&i| pairs.get(i).is_some_and(|p| keep(*p))),
            );
        }
        *indices = kept;
    }

    /// Runs `f` on every pair (the live ones and the cleared or free
    /// `None`s, in a stable order for as long as the lock is held). At a
    /// safepoint.
    pub(crate) fn with_pairs<R>(&self, f: impl FnOnce(&mut [Pair]) -> R) -> R {
        f(self.entries.lock().slots.entries_mut())
    }
}

/// An ephemeron's words: its key and value, forwarded together.
impl RootWord for Pair {
    fn object(&self) -> Option<ObjectReference> {
        self.map(|(k, _)| k)
    }
    fn replace(&mut self, r: ObjectReference) {
        if let Some((k, _)) = self {
            *k = r;
        }
    }
    fn forward_all(&mut self, to: &dyn RootForwarder) {
        if let Some((k, v)) = self {
            *k = to.forward(*k);
            *v = to.forward(*v);
        }
    }
}

impl RootWords for SlotTable<(ObjectReference, ObjectReference)> {
    type Word = Pair;
    fn words(&mut self) -> &mut [Pair] {
        self.entries_mut()
    }
}

/// The ephemerons as a concurrent cycle forwards them after Pause Relocate
/// Start (as the root tables: a read forwards first), so that the pause
/// does not grow with them. They are never marked through this (their
/// processing is Pause Mark End's).
impl GcTable for EphemeronTable {
    type Slots = SlotTable<(ObjectReference, ObjectReference)>;
    fn guarded(&self) -> MutexGuard<'_, Guarded<Self::Slots>> {
        self.entries.lock()
    }
}

/// An ephemeron the runtime owns: the value is reachable through it only
/// while the key is reachable from elsewhere. A collection keeps the value
/// (and what it reaches) alive exactly while the key is, to a fixpoint: a
/// value may hold the key of another ephemeron, in chains of any length
/// and registration order. Once the key is unreachable, both are cleared
/// ([`Ephemeron::get`] returns `None`); while it lives, both follow their
/// objects when they move. The ephemeron itself does not keep the key
/// alive.
///
/// Made by [`Runtime::ephemeron`](crate::Runtime::ephemeron); dropping it
/// drops the pair.
pub struct Ephemeron {
    table: Arc<EphemeronTable>,
    index: usize,
}

impl Ephemeron {
    /// The key and the value at their current addresses, or `None` once a
    /// collection found the key unreachable. Read it again after anything
    /// that may collect.
    pub fn get(&self) -> Option<(ObjectReference, ObjectReference)> {
        self.table.read(self.index)
    }

    /// The key, while it lives.
    pub fn key(&self) -> Option<ObjectReference> {
        self.get().map(|(k, _)| k)
    }

    /// The value, while the key lives.
    pub fn value(&self) -> Option<ObjectReference> {
        self.get().map(|(_, v)| v)
    }
}

impl Drop for Ephemeron {
    fn drop(&mut self) {
        self.table.entries.lock().slots.release(self.index);
    }
}

impl fmt::Debug for Ephemeron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Ephemeron").field(&self.get()).finish()
    }
}
