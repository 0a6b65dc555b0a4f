//! [`WeakHandle`]: a reference the runtime clears when its object dies and
//! updates when it moves.

use super::keep_alive::KeepAlive;
use super::liveness::{Liveness, SweepVerdict};
use crate::GcError;
use crate::gc::core::in_collection;
use crate::pause_gate::PauseGate;
use crate::roots::table_gc::{CHUNK, GcTable, Guarded, RootWords, Step};
use crate::roots::{Handle, HandleTable};
use crate::slot_table::SlotTable;
use crate::sync::{Mutex, MutexGuard};
use crate::vm::ObjectReference;
use std::fmt;
use std::sync::Arc;

/// The weak handles' entries behind the table's lock, and their sweep.
#[derive(Default)]
pub(crate) struct WeakSlots {
    slots: SlotTable<ObjectReference>,
    sweep: HandleSweep,
}

/// A concurrent cycle's sweep of the weak handles after Pause Mark End
/// (when its finalization kept nothing alive: the verdict is then the one
/// before finalization, by which weak handles are cleared).
#[derive(Default)]
enum HandleSweep {
    #[default]
    Idle,
    Sweeping(Sweeping),
}

/// A sweep in progress: the entries from `cursor` on are judged by
/// `verdict` when read or passed. `found` and `cleared` count the entries
/// judged, each once.
struct Sweeping {
    cursor: usize,
    verdict: SweepVerdict,
    found: u64,
    cleared: u64,
}

impl RootWords for WeakSlots {
    type Word = Option<ObjectReference>;
    fn words(&mut self) -> &mut [Option<ObjectReference>] {
        self.slots.entries_mut()
    }
}

impl WeakSlots {
    /// A new entry holding `value` (not judged by a sweep in progress).
    fn add(&mut self, value: Option<ObjectReference>) -> usize {
        let index = self.slots.add(value);
        if let HandleSweep::Sweeping(s) = &mut self.sweep {
            s.verdict.added(index);
        }
        index
    }

    /// Clears entry `index` if the sweep in progress has not passed it and
    /// finds its object dead (an entry it finds alive is the sweep's to
    /// count when it passes).
    #[inline]
    fn judge(&mut self, index: usize) {
        let HandleSweep::Sweeping(s) = &mut self.sweep else {
            return;
        };
        if index >= s.cursor
            && let Some(r) = self.slots.get(index)
            && s.verdict.dead(index, r)
        {
            self.slots.set(index, None);
            s.found += 1;
            s.cleared += 1;
        }
    }

    /// One chunk of the sweep: up to [`CHUNK`] entries judged.
    fn sweep_step(&mut self) -> Step {
        let WeakSlots { slots, sweep } = self;
        let HandleSweep::Sweeping(s) = sweep else {
            return Step::Done;
        };
        let entries = slots.entries_mut();
        let end = entries.len().min(s.cursor.saturating_add(CHUNK));
        for (i, entry) in entries.iter_mut().enumerate().take(end).skip(s.cursor) {
            let Some(r) = *entry else { continue };
            if s.verdict.is_fresh(i) {
                continue;
            }
            s.found += 1;
            if s.verdict.dead(i, r) {
                *entry = None;
                s.cleared += 1;
            }
        }
        s.cursor = end;
        match end < entries.len() {
            true => Step::More,
            false => Step::Done,
        }
    }
}

/// Every weak handle of a runtime: an entry per handle, `None` once cleared.
pub(crate) struct WeakTable {
    /// Per handle: `Some` while its object lives; `None` once cleared (the
    /// handle still owns the entry). A concurrent cycle forwards them after
    /// Pause Relocate Start, as it does the roots' tables
    /// ([`TableGc`](crate::roots::table_gc::TableGc): a read forwards
    /// first): Pause Relocate Start does not grow with the weak handles.
    entries: Mutex<Guarded<WeakSlots>>,
    /// Keeps what a handle hands out alive while the concurrent collector
    /// marks.
    keep_alive: Option<Arc<dyn KeepAlive>>,
    /// Reads wait for the pause in progress (see [`PauseGate`]).
    gate: Arc<PauseGate>,
    /// Where [`WeakHandle::upgrade`] makes its strong handles: the
    /// runtime's global handle table.
    strong: Arc<HandleTable>,
}

impl WeakTable {
    pub(crate) fn new(
        keep_alive: Option<Arc<dyn KeepAlive>>,
        gate: Arc<PauseGate>,
        strong: Arc<HandleTable>,
    ) -> WeakTable {
        WeakTable {
            entries: Mutex::new(Guarded::default()),
            keep_alive,
            gate,
            strong,
        }
    }

    /// What entry `index` holds, kept alive for the cycle that marks now:
    /// between two pauses, so never an object a pause has found dead and
    /// not yet cleared, and logged (while marking runs) before the next
    /// pause drains the logs.
    fn read(&self, index: usize) -> Option<ObjectReference> {
        self.gate.outside_pauses(|| self.read_between_pauses(index))
    }

    /// [`WeakTable::read`], the gate open already.
    fn read_between_pauses(&self, index: usize) -> Option<ObjectReference> {
        let r = {
            let mut g = self.entries.lock();
            g.slots.judge(index);
            g.read(index)
        };
        if let (Some(r), Some(k)) = (r, &self.keep_alive) {
            k.keep_alive(r);
        }
        r
    }

    /// A strong handle to what entry `index` holds, made between two
    /// pauses: the entry's object is alive when read, and the handle
    /// exists before the next pause scans the handles (or, while the
    /// concurrent collector marks, the object is logged for this cycle).
    fn upgrade(&self, index: usize) -> Result<Option<Handle>, GcError> {
        if in_collection::inside(&*self.gate) {
            return Err(GcError::InsideCollection);
        }
        Ok(self.gate.outside_pauses(|| {
            self.read_between_pauses(index)
                .map(|r| self.strong.add_handle(r))
        }))
    }

    pub(crate) fn add(self: &Arc<Self>, obj: ObjectReference) -> WeakHandle {
        let index = self.entries.lock().slots.add(Some(obj));
        WeakHandle {
            table: self.clone(),
            index,
        }
    }

    /// In Pause Mark End: the entries are to be judged by `live` after the
    /// pause (see [`HandleSweep`]).
    pub(crate) fn begin_sweeping(&self, live: Liveness) {
        let mut g = self.entries.lock();
        debug_assert!(
            matches!(g.slots.sweep, HandleSweep::Idle),
            "one sweep at a time"
        );
        g.slots.sweep = HandleSweep::Sweeping(Sweeping {
            cursor: 0,
            verdict: SweepVerdict::new(live),
            found: 0,
            cleared: 0,
        });
    }

    /// Sweeps to the end, a chunk per lock acquisition; the table is idle
    /// again. Returns the entries judged and cleared (by the sweep and by
    /// the reads meanwhile).
    pub(crate) fn finish_sweeping(&self) -> (u64, u64) {
        loop {
            let mut g = self.entries.lock();
            if g.slots.sweep_step() == Step::Done {
                return match std::mem::take(&mut g.slots.sweep) {
                    HandleSweep::Sweeping(s) => (s.found, s.cleared),
                    HandleSweep::Idle => (0, 0),
                };
            }
        }
    }

    /// Calls `f` with every uncleared entry; `f` returns the entry's new
    /// value (`None` clears it). At a safepoint.
    pub(crate) fn update(&self, mut f: impl FnMut(ObjectReference) -> Option<ObjectReference>) {
        for slot in self.entries.lock().slots.slots.entries_mut() {
            if let Some(r) = *slot {
                *slot = f(r);
            }
        }
    }
}

impl GcTable for WeakTable {
    type Slots = WeakSlots;
    fn guarded(&self) -> MutexGuard<'_, Guarded<Self::Slots>> {
        self.entries.lock()
    }
}

/// A weak reference the runtime owns: it does not keep its object alive;
/// once the object is unreachable, a collection clears the handle
/// ([`WeakHandle::get`] returns `None` from then on); while the object
/// lives, the handle follows it when it moves. Weak handles are cleared
/// before finalization: an object that a finalizer resurrects
/// ([`Runtime::register_finalizer`](crate::Runtime::register_finalizer))
/// is already gone from its weak handles.
///
/// Made by [`Runtime::weak_handle`](crate::Runtime::weak_handle). Cloning
/// makes a second weak reference to the same object (or a second cleared
/// one). Dropping it drops the reference.
///
/// ```compile_fail,E0451
/// # use hotmem::WeakHandle;
/// # fn forge<T>() -> T { panic!("compiled, never run") }
/// let h = WeakHandle { table: forge(), index: 0 }; // private fields
/// ```
pub struct WeakHandle {
    table: Arc<WeakTable>,
    index: usize,
}

impl WeakHandle {
    /// The object's current address, or `None` once a collection found it
    /// unreachable. Read it again after anything that may collect.
    pub fn get(&self) -> Option<ObjectReference> {
        self.table.read(self.index)
    }

    /// Whether a collection cleared the handle.
    pub fn is_cleared(&self) -> bool {
        self.get().is_none()
    }

    /// A strong [`Handle`] (a global one, as
    /// [`Runtime::global_handle`](crate::Runtime::global_handle) makes) to
    /// the object, or `None` once a collection found it unreachable:
    /// atomic with respect to collections, from any thread. Where
    /// `runtime.global_handle(weak.get()?)` is two steps, between which a
    /// collection may free the object (a thread that is not a mutator
    /// holds no current reference), the handle here exists before the
    /// next collection decides what lives.
    ///
    /// # Errors
    /// [`GcError::InsideCollection`] from a binding callback (a collection
    /// of this runtime is deciding what lives).
    ///
    /// ```
    /// # use hotmem::{NumaConfig, Runtime};
    /// # let rt = Runtime::builder().numa(NumaConfig::Off).build()?;
    /// let mut me = rt.attach_mutator()?;
    /// let obj = hotmem::ObjectReference::from_address(me.alloc(16)?).unwrap();
    /// let weak = rt.weak_handle(obj);
    /// let strong = weak.upgrade()?.expect("nothing collected yet");
    /// assert_eq!(strong.get(), obj);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn upgrade(&self) -> Result<Option<Handle>, GcError> {
        self.table.upgrade(self.index)
    }

    /// The entry read without the pause gate: the racy baseline of the
    /// loom model of upgrades.
    #[cfg(all(test, hotmem_loom))]
    pub(crate) fn read_without_gate(&self) -> Option<ObjectReference> {
        self.table.read_between_pauses(self.index)
    }
}

impl Clone for WeakHandle {
    fn clone(&self) -> WeakHandle {
        let index = {
            let mut e = self.table.entries.lock();
            e.slots.judge(self.index);
            let value = e.read(self.index);
            e.slots.add(value)
        };
        WeakHandle {
            table: self.table.clone(),
            index,
        }
    }
}

impl Drop for WeakHandle {
    fn drop(&mut self) {
        self.table.entries.lock().slots.slots.release(self.index);
    }
}

impl fmt::Debug for WeakHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WeakHandle").field(&self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotmem_os::Address;

    fn r(v: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(v)).unwrap()
    }

    static LIVE_EVEN: fn(ObjectReference) -> bool = |o| (o.get() / 8) % 2 == 0;

    #[test]
    fn a_sweep_judges_each_entry_once_and_spares_the_handles_made_meanwhile() {
        let mut w = WeakSlots::default();
        for i in 1..=10 {
            w.add(Some(r(i * 8)));
        }
        w.sweep = HandleSweep::Sweeping(Sweeping {
            cursor: 0,
            verdict: SweepVerdict::new(Liveness::of(&LIVE_EVEN)),
            found: 0,
            cleared: 0,
        });
        // A read judges its entry first: object 1 is dead.
        w.judge(0);
        assert_eq!(w.slots.get(0), None);
        w.judge(1);
        assert_eq!(w.slots.get(1), Some(r(16)), "object 2 lives");
        // A handle made during the sweep holds a current reference.
        let made = w.add(Some(r(0x1008)));
        while w.sweep_step() == Step::More {}
        assert_eq!(w.slots.get(made), Some(r(0x1008)), "not judged");
        let HandleSweep::Sweeping(s) = &w.sweep else {
            panic!("the table ends the sweep, not the step");
        };
        assert_eq!((s.found, s.cleared), (10, 5), "each old entry judged once");
        let left: Vec<_> = w
            .slots
            .entries_mut()
            .iter()
            .flatten()
            .map(|o| o.get() / 8)
            .collect();
        assert_eq!(left, [2, 4, 6, 8, 10, 0x201]);
    }
}
