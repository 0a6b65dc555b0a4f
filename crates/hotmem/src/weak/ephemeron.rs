//! [`Ephemeron`]: a key and a value, the value kept alive only while the
//! key is (JavaScript's `WeakMap` entry, Lua's weak-keyed table entry).

use super::keep_alive::KeepAlive;
use super::liveness::{Liveness, SweepVerdict};
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

/// The pairs behind the table's lock, and the clearing after a pause.
#[derive(Default)]
pub(crate) struct EphemeronSlots {
    slots: SlotTable<(ObjectReference, ObjectReference)>,
    sweep: PairSweep,
}

/// A concurrent cycle's clearing of the pairs whose key died, after its
/// Pause Mark End (which only hands over the pairs it found waiting).
#[derive(Default)]
enum PairSweep {
    #[default]
    Idle,
    Sweeping(PairSweeping),
}

/// A clearing in progress: the `pending` pairs from `cursor` on are
/// judged by their key when read or passed (a pair not pending has a live
/// key by the same verdict: judging any pair is judging the pending
/// ones); `cleared` counts those it cleared, each once.
struct PairSweeping {
    pending: Vec<usize>,
    cursor: usize,
    verdict: SweepVerdict,
    cleared: u64,
}

impl EphemeronSlots {
    /// A new pair (not judged by a clearing in progress).
    fn add(&mut self, pair: Pair) -> usize {
        let index = self.slots.add(pair);
        if let PairSweep::Sweeping(s) = &mut self.sweep {
            s.verdict.added(index);
        }
        index
    }

    /// Clears pair `index` if a clearing is in progress and finds its key
    /// dead.
    #[inline]
    fn judge(&mut self, index: usize) {
        let PairSweep::Sweeping(s) = &mut self.sweep else {
            return;
        };
        if let Some((key, _)) = self.slots.get(index)
            && s.verdict.dead(index, key)
        {
            self.slots.set(index, None);
            s.cleared += 1;
        }
    }

    /// Up to [`CHUNK`] pending pairs judged; whether more are left.
    fn sweep_step(&mut self) -> bool {
        let EphemeronSlots { slots, sweep } = self;
        let PairSweep::Sweeping(s) = sweep else {
            return false;
        };
        let end = s.pending.len().min(s.cursor + CHUNK);
        for &i in &s.pending[s.cursor..end] {
            if let Some((key, _)) = slots.get(i)
                && s.verdict.dead(i, key)
            {
                slots.set(i, None);
                s.cleared += 1;
            }
        }
        s.cursor = end;
        end < s.pending.len()
    }
}

/// Every ephemeron of a runtime.
pub(crate) struct EphemeronTable {
    entries: Mutex<Guarded<EphemeronSlots>>,
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
                g.slots.judge(index);
                let Guarded { slots, gc } = &mut *g;
                let word = slots.slots.entries_mut().get_mut(index)?;
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
            let pairs = g.slots.slots.entries_mut();
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
            let pairs = g.slots.slots.entries_mut();
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
        f(self.entries.lock().slots.slots.entries_mut())
    }

    /// In Pause Mark End: the `pending` pairs (those whose key the pause
    /// found dead) are to be cleared after it, by `live` (see
    /// [`PairSweep`]); until then a read judges its pair first.
    pub(crate) fn begin_sweeping(&self, pending: Vec<usize>, live: Liveness) {
        let mut g = self.entries.lock();
        debug_assert!(
            matches!(g.slots.sweep, PairSweep::Idle),
            "one clearing at a time"
        );
        g.slots.sweep = PairSweep::Sweeping(PairSweeping {
            pending,
            cursor: 0,
            verdict: SweepVerdict::new(live),
            cleared: 0,
        });
    }

    /// After the pause: clears the pending pairs whose key died, [`CHUNK`]
    /// at a time under the lock, and ends the clearing (the verdict leaves
    /// the table); how many pairs it cleared. Nothing without a clearing
    /// in progress.
    pub(crate) fn finish_sweeping(&self) -> u64 {
        while self.entries.lock().slots.sweep_step() {}
        let mut g = self.entries.lock();
        match std::mem::take(&mut g.slots.sweep) {
            PairSweep::Sweeping(s) => s.cleared,
            PairSweep::Idle => 0,
        }
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

impl RootWords for EphemeronSlots {
    type Word = Pair;
    fn words(&mut self) -> &mut [Pair] {
        self.slots.entries_mut()
    }
}

/// The ephemerons as a concurrent cycle forwards them after Pause Relocate
/// Start (as the root tables: a read forwards first), so that the pause
/// does not grow with them. They are never marked through this (their
/// processing is Pause Mark End's).
impl GcTable for EphemeronTable {
    type Slots = EphemeronSlots;
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
        self.table.entries.lock().slots.slots.release(self.index);
    }
}

impl fmt::Debug for Ephemeron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Ephemeron").field(&self.get()).finish()
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use hotmem_os::Address;

    fn r(a: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(a)).expect("aligned, not null")
    }

    /// The clearing after a pause: a pending pair whose key died is
    /// cleared once (by a read or by the clearing), a pending pair whose
    /// key lives stays, and a pair added meanwhile stays whatever the
    /// verdict says of its key (it holds current references).
    #[test]
    fn the_clearing_after_a_pause_clears_each_dead_pending_pair_once() {
        let table = Arc::new(EphemeronTable::new(None, Arc::new(PauseGate::default())));
        let dead = table.add(r(0x1000), r(0x1100));
        let live = table.add(r(0x2000), r(0x2100));
        let also_dead = table.add(r(0x3000), r(0x3100));
        static VERDICT: fn(ObjectReference) -> bool = |k| k.get() == 0x2000;
        let verdict: &'static (dyn Fn(ObjectReference) -> bool + Sync) = &VERDICT;
        table.begin_sweeping(vec![0, 1, 2], Liveness::of(verdict));
        let fresh = table.add(r(0x4000), r(0x4100));
        assert_eq!(dead.get(), None, "judged at the read");
        assert_eq!(live.get(), Some((r(0x2000), r(0x2100))));
        assert_eq!(fresh.get(), Some((r(0x4000), r(0x4100))));
        assert_eq!(table.finish_sweeping(), 2, "the read's and the clearing's");
        assert_eq!(also_dead.get(), None);
        assert_eq!(fresh.get(), Some((r(0x4000), r(0x4100))));
        assert_eq!(table.finish_sweeping(), 0, "nothing in progress");
    }
}
