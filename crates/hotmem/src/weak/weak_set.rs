//! [`WeakSet`]: a hash set of objects, each held weakly, found by a hash
//! and an equality the embedder gives: the shape of a VM's string intern
//! table. The runtime owns it and processes it outside the pauses.
//!
//! How a collection treats a set (ZGC's concurrent weak-root processing,
//! with the set's own states in place of colored pointers):
//! - **Marking.** Entries are not marked. An object [`WeakSet::find`]
//!   returns while a concurrent cycle marks is kept alive for that cycle
//!   (it may become strongly reachable, which the snapshot would miss),
//!   unless marking has reached it already: Pause Mark Start gives each
//!   set the marking's verdict ([`Sweep::Marking`]), so that a program that
//!   looks the same strings up over and over logs each once per cycle, not
//!   once per lookup, and Pause Mark End does not grow with the lookups.
//! - **Sweeping.** Pause Mark End only puts each set in
//!   [`Sweep::Sweeping`], with the cycle's liveness; the GC thread then
//!   clears the dead entries after the pause, a chunk per lock acquisition.
//!   A lookup meanwhile asks the liveness of each entry the sweep has not
//!   passed, and clears it if dead: a dead object is never handed out
//!   (resurrection is blocked), and the pause does not grow with the set.
//!   An entry added since the sweep began is not the sweep's (its object
//!   was allocated after marking, or is reachable).
//! - **Forwarding.** Pause Relocate Start only puts each set in
//!   forwarding, as the root tables ([`TableGc`](crate::roots::table_gc));
//!   every read of an entry forwards and heals it first, and the GC thread
//!   forwards the rest.
//!
//! A stop-the-world collection does both in its pause.
//!
//! The embedder's equality runs with no lock held, so it may do anything
//! (call the set again, panic). A lookup that a collection's phase change
//! overtook while the equality ran starts again: each phase change bumps
//! the set's epoch, inside a pause.

use super::keep_alive::KeepAlive;
use super::liveness::Liveness;
use super::{EphemeronTable, WeakTable};
use crate::Mutator;
use crate::error::WeakSetError;
use crate::gc::core::in_collection;
use crate::pause_gate::PauseGate;
use crate::roots::table_gc::{CHUNK, GcTable, Guarded, RootForwarder, RootWord, RootWords, Step};
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crate::vm::ObjectReference;
use hotmem_os::Address;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// A word that never held an object.
const EMPTY: usize = 0;
/// A word whose object died.
const TOMBSTONE: usize = 1;
/// The first table's capacity.
const MIN_CAPACITY: usize = 16;

/// One entry: an object's address (or [`EMPTY`], [`TOMBSTONE`]), the
/// embedder's hash folded to 32 bits, and the sweep that the entry was
/// added during (0: none), which does not judge it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Entry {
    word: usize,
    hash: u32,
    born: u32,
}

impl Entry {
    const EMPTY: Entry = Entry {
        word: EMPTY,
        hash: 0,
        born: 0,
    };
}

impl RootWord for Entry {
    #[inline]
    fn object(&self) -> Option<ObjectReference> {
        if self.word > TOMBSTONE {
            ObjectReference::from_address(Address::new(self.word))
        } else {
            None
        }
    }
    #[inline]
    fn replace(&mut self, r: ObjectReference) {
        self.word = r.get();
    }
}

/// A set's state in a collection.
#[derive(Default)]
enum Sweep {
    /// No sweep: every entry holds a live object (or one not yet found
    /// dead by a collection).
    #[default]
    Idle,
    /// A concurrent cycle marks: `marked` says whether an object needs no
    /// keeping alive (marked, or allocated since mark start).
    Marking { marked: Liveness },
    /// Swept from `cursor` on by the GC thread; entries added since the
    /// sweep began carry `number`.
    Sweeping {
        cursor: usize,
        number: u32,
        live: Liveness,
    },
}

impl Sweep {
    /// Whether entry `i` (born in sweep `born`, holding `r`) is dead by the
    /// sweep in progress, and not yet cleared.
    #[inline]
    fn dead(&self, i: usize, born: u32, r: ObjectReference) -> bool {
        match self {
            Sweep::Sweeping {
                cursor,
                number,
                live,
            } => i >= *cursor && born != *number && !live.says_live(r),
            Sweep::Idle | Sweep::Marking { .. } => false,
        }
    }

    /// Whether a lookup that returns `r` now must keep it alive: while
    /// marking, unless marking reached it; outside a concurrent cycle's
    /// marking this is asked of the collector (a set made after mark start
    /// has no verdict); after it, never. `outer`: the verdict of a full
    /// cycle's marking that a young cycle runs inside of (see
    /// [`SetMarking::suspend_full`]), which must have reached `r` too.
    #[inline]
    fn keep(&self, r: ObjectReference, outer: Option<&Liveness>) -> bool {
        let outer_keeps = outer.is_some_and(|o| !o.says_live(r));
        match self {
            Sweep::Idle => true,
            Sweep::Marking { marked } => outer_keeps || !marked.says_live(r),
            Sweep::Sweeping { .. } => outer_keeps,
        }
    }

    /// The number an entry added now carries.
    #[inline]
    fn born(&self) -> u32 {
        match self {
            Sweep::Sweeping { number, .. } => *number,
            Sweep::Idle | Sweep::Marking { .. } => 0,
        }
    }
}

/// A set's entries behind its lock: open addressing with linear probing.
#[derive(Default)]
pub(crate) struct SetSlots {
    entries: Vec<Entry>,
    /// Entries not [`EMPTY`] (objects and tombstones).
    used: usize,
    /// Entries holding an object.
    len: usize,
    sweep: Sweep,
    /// A full cycle's marking verdict, set aside while a young cycle that
    /// runs inside that marking marks and sweeps the set (see
    /// [`SetMarking::suspend_full`]).
    outer: Option<Liveness>,
    /// Sweeps begun (the next one's number is one more, never 0).
    sweeps: u32,
    /// Rehashes so far: a lookup that let go of the lock resumes its probe
    /// sequence only in the table it began in.
    version: u64,
}

impl SetSlots {
    /// See [`WeakSetTable::suspend_marking`].
    fn suspend_marking(&mut self) {
        if let Sweep::Marking { marked } = self.sweep {
            self.outer = Some(marked);
            self.sweep = Sweep::Idle;
        }
    }

    /// See [`WeakSetTable::resume_marking`].
    fn resume_marking(&mut self) {
        if let Some(marked) = self.outer.take() {
            debug_assert!(
                !matches!(self.sweep, Sweep::Sweeping { .. }),
                "the young cycle's sweep ends first"
            );
            self.sweep = Sweep::Marking { marked };
        }
    }
}

impl RootWords for SetSlots {
    type Word = Entry;
    fn words(&mut self) -> &mut [Entry] {
        &mut self.entries
    }
}

/// Folds the embedder's 64-bit hash to the 32 bits an entry keeps.
#[inline]
fn fold(hash: u64) -> u32 {
    (hash ^ (hash >> 32)) as u32
}

/// The word where the probe sequence of hash `h` starts in a table of
/// `cap` words (a power of two): the hash multiplied by 2^64 / phi, its top
/// bits (Fibonacci hashing). An embedder's hash may be poor in its low bits
/// (consecutive ids, say), which linear probing would turn into one long
/// cluster.
#[inline]
fn home(h: u32, cap: usize) -> usize {
    let bits = cap.trailing_zeros();
    if bits == 0 {
        return 0;
    }
    (u64::from(h).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

impl Guarded<SetSlots> {
    /// The first object from word `from` on (from `h`'s home word if
    /// `None`) of the probe sequence of `h` whose entry has hash `h`, and
    /// its word: forwarded (and healed) while the set is forwarded; a dead
    /// entry the sweep has not reached is cleared and passed.
    #[inline]
    fn next_candidate(
        &mut self,
        h: u32,
        from: Option<usize>,
    ) -> Option<(ObjectReference, usize, bool)> {
        let Guarded { slots, gc } = self;
        let SetSlots {
            entries,
            len,
            sweep,
            outer,
            ..
        } = slots;
        let cap = entries.len();
        if cap == 0 {
            return None;
        }
        let mask = cap - 1;
        let mut i = from.unwrap_or_else(|| home(h, cap)) & mask;
        for _ in 0..cap {
            let e = &mut entries[i];
            match e.word {
                EMPTY => return None,
                TOMBSTONE => {}
                _ if e.hash == h => {
                    let born = e.born;
                    if let Some(r) = gc.read(e) {
                        if !sweep.dead(i, born, r) {
                            return Some((r, i, sweep.keep(r, outer.as_ref())));
                        }
                        e.word = TOMBSTONE;
                        *len -= 1;
                    }
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Adds `r` with hash `h`, growing the table first if needed.
    fn insert(&mut self, h: u32, r: ObjectReference) {
        self.reserve_one();
        let slots = &mut self.slots;
        let mask = slots.entries.len() - 1;
        let mut i = home(h, mask + 1);
        while slots.entries[i].word > TOMBSTONE {
            i = (i + 1) & mask;
        }
        let e = &mut slots.entries[i];
        if e.word == EMPTY {
            slots.used += 1;
        }
        *e = Entry {
            word: r.get(),
            hash: h,
            born: slots.sweep.born(),
        };
        slots.len += 1;
    }

    /// Makes room for one more entry: the table grows (or drops its
    /// tombstones) once three quarters of its words are used.
    fn reserve_one(&mut self) {
        let cap = self.slots.entries.len();
        if (self.slots.used + 1) * 4 <= cap * 3 {
            return;
        }
        let mut new_cap = MIN_CAPACITY.max(cap);
        while (self.slots.len + 1) * 2 > new_cap {
            new_cap *= 2;
        }
        self.rehash(new_cap);
    }

    /// Moves every entry into a fresh table of `new_cap` words: forwarded
    /// if the set is forwarded, dropped if the sweep finds it dead. A
    /// sweep in progress is then done for this set (every entry was
    /// judged); a forwarding goes on over words already forwarded.
    fn rehash(&mut self, new_cap: usize) {
        let Guarded { slots, gc } = self;
        let old = std::mem::replace(&mut slots.entries, vec![Entry::EMPTY; new_cap]);
        let mask = new_cap - 1;
        let mut len = 0;
        for (i, mut e) in old.into_iter().enumerate() {
            let Some(r) = gc.read(&mut e) else {
                continue;
            };
            if slots.sweep.dead(i, e.born, r) {
                continue;
            }
            let mut j = home(e.hash, new_cap);
            while slots.entries[j].word != EMPTY {
                j = (j + 1) & mask;
            }
            slots.entries[j] = e;
            len += 1;
        }
        slots.len = len;
        slots.used = len;
        slots.version += 1;
        if let Sweep::Sweeping { cursor, .. } = &mut slots.sweep {
            *cursor = new_cap;
        }
    }

    /// One chunk of the sweep: up to [`CHUNK`] entries judged; how many
    /// it found and cleared.
    fn sweep_step(&mut self) -> (Step, u64, u64) {
        let SetSlots {
            entries,
            len,
            sweep,
            ..
        } = &mut self.slots;
        let Sweep::Sweeping {
            cursor,
            number,
            live,
        } = sweep
        else {
            return (Step::Done, 0, 0);
        };
        let end = entries.len().min(cursor.saturating_add(CHUNK));
        let (mut found, mut cleared) = (0, 0);
        for e in entries.get_mut(*cursor..end).unwrap_or(&mut []) {
            let Some(r) = e.object() else { continue };
            if e.born == *number {
                continue;
            }
            found += 1;
            if !live.says_live(r) {
                e.word = TOMBSTONE;
                *len -= 1;
                cleared += 1;
            }
        }
        *cursor = end;
        if end < entries.len() {
            return (Step::More, found, cleared);
        }
        *sweep = Sweep::Idle;
        (Step::Done, found, cleared)
    }
}

/// A weak set as the runtime keeps it (see the [module docs](self)).
pub(crate) struct WeakSetTable {
    slots: Mutex<Guarded<SetSlots>>,
    /// Bumped, in a pause, by every collection that changes what the
    /// entries mean (a sweep begun, a forwarding begun, a pause's sweep or
    /// forwarding): a lookup whose equality ran across it starts again.
    epoch: AtomicU64,
    /// Keeps what a lookup returns alive while the concurrent collector
    /// marks.
    keep_alive: Option<Arc<dyn KeepAlive>>,
    /// Lookups and insertions wait for the pause in progress.
    gate: Arc<PauseGate>,
    /// The heap's reservation: what may be inserted.
    heap: Range<usize>,
}

impl GcTable for WeakSetTable {
    type Slots = SetSlots;
    fn guarded(&self) -> MutexGuard<'_, Guarded<SetSlots>> {
        self.slots.lock()
    }

    fn begin_forwarding(
        &self,
        owner: usize,
        to: &Arc<dyn RootForwarder>,
    ) -> Result<(), crate::roots::table_gc::TableBusy> {
        let mut g = self.slots.lock();
        self.bump();
        g.gc.begin_forwarding(owner, to)
    }
}

impl WeakSetTable {
    fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// In a stop-the-world pause: clears every entry whose object
    /// `is_live` says is dead; how many entries it found and cleared.
    pub(crate) fn sweep_in_pause(&self, is_live: &dyn Fn(ObjectReference) -> bool) -> (u64, u64) {
        let mut g = self.slots.lock();
        self.bump();
        let SetSlots { entries, len, .. } = &mut g.slots;
        let (mut found, mut cleared) = (0, 0);
        for e in entries.iter_mut() {
            if let Some(r) = e.object() {
                found += 1;
                if !is_live(r) {
                    e.word = TOMBSTONE;
                    *len -= 1;
                    cleared += 1;
                }
            }
        }
        (found, cleared)
    }

    /// In a pause: every entry forwarded through `forwarded`.
    pub(crate) fn forward_in_pause(&self, forwarded: &dyn Fn(ObjectReference) -> ObjectReference) {
        let mut g = self.slots.lock();
        self.bump();
        for e in g.slots.entries.iter_mut() {
            if let Some(r) = e.object() {
                e.replace(forwarded(r));
            }
        }
    }

    /// In Pause Mark Start: lookups ask `marked` whether to keep what they
    /// return alive.
    fn begin_marking(&self, marked: Liveness) {
        let mut g = self.slots.lock();
        self.bump();
        if matches!(g.slots.sweep, Sweep::Idle) {
            g.slots.sweep = Sweep::Marking { marked };
        }
    }

    /// Sets the marking verdict of a full cycle aside (in a young cycle's
    /// Pause Mark Start, inside that full cycle's marking): lookups still
    /// ask it, beside the young cycle's.
    fn suspend_marking(&self) {
        self.slots.lock().slots.suspend_marking();
    }

    /// Puts the full cycle's verdict set aside back (once the young cycle
    /// inside its marking has swept the set, or failed): the set is
    /// marking for it again.
    fn resume_marking(&self) {
        self.slots.lock().slots.resume_marking();
    }

    /// The marking ended (or its cycle failed): no verdict kept.
    fn end_marking(&self) {
        let mut g = self.slots.lock();
        if matches!(g.slots.sweep, Sweep::Marking { .. }) {
            g.slots.sweep = Sweep::Idle;
        }
    }

    /// In Pause Mark End: the set is to be swept by `live` after the pause.
    fn begin_sweeping(&self, live: Liveness) {
        let mut g = self.slots.lock();
        self.bump();
        let s = &mut g.slots;
        debug_assert!(
            matches!(s.sweep, Sweep::Idle | Sweep::Marking { .. }),
            "one sweep at a time"
        );
        s.sweeps = s.sweeps.wrapping_add(1).max(1);
        s.sweep = Sweep::Sweeping {
            cursor: 0,
            number: s.sweeps,
            live,
        };
    }

    /// Sweeps to the end, a chunk per lock acquisition: found, cleared.
    fn finish_sweeping(&self) -> (u64, u64) {
        let (mut found, mut cleared) = (0, 0);
        loop {
            let (step, f, c) = self.slots.lock().sweep_step();
            found += f;
            cleared += c;
            if step == Step::Done {
                return (found, cleared);
            }
        }
    }

    /// Whether `me` is a mutator of this set's runtime, made to run
    /// managed code (leaving a leaked native region first: see
    /// [`Mutator::ensure_managed`]), outside a collection of it.
    #[inline]
    fn check_mutator(&self, me: &Mutator) -> Result<(), WeakSetError> {
        if !std::ptr::eq(&*me.runtime().inner.gc.weak.gate, &*self.gate) {
            return Err(WeakSetError::OtherRuntime);
        }
        if in_collection::inside(&*self.gate) {
            return Err(WeakSetError::InsideCollection);
        }
        me.ensure_managed();
        Ok(())
    }

    /// The object of hash `h` that `eq` accepts: each candidate taken
    /// under the lock (`locked` runs its argument with the slots locked),
    /// `eq` called with the lock released.
    #[inline]
    fn lookup(
        h: u32,
        eq: &mut impl FnMut(ObjectReference) -> bool,
        mut locked: impl FnMut(&mut dyn FnMut(&mut Guarded<SetSlots>)),
    ) -> Option<(ObjectReference, bool)> {
        let mut resume: Option<(usize, u64)> = None;
        // Candidates `eq` may refuse: as many as the set held when the
        // lookup began. An equality that inserts under the same hash
        // would otherwise keep the lookup going for ever (each refusal
        // adding a candidate further along); it may make it miss instead.
        let mut budget: Option<usize> = None;
        loop {
            let mut next = None;
            locked(&mut |g| {
                budget.get_or_insert(g.slots.len);
                let version = g.slots.version;
                let from = resume.filter(|&(_, v)| v == version).map(|(i, _)| i);
                next = g
                    .next_candidate(h, from)
                    .map(|(r, i, keep)| (r, i, keep, version));
            });
            let (r, i, keep, version) = next?;
            // No lock held: the embedder's code may do anything.
            if eq(r) {
                return Some((r, keep));
            }
            let left = budget.as_mut()?;
            *left = left.checked_sub(1)?;
            resume = Some((i + 1, version));
        }
    }

    /// [`WeakSet::find`]: from a mutator running managed code, no pause
    /// runs while it looks (the lock orders it with the GC thread's
    /// sweeping and forwarding); a pause can run only if `eq` polls, and
    /// the epoch says so.
    #[inline]
    fn find(
        &self,
        me: &Mutator,
        hash: u64,
        eq: &mut impl FnMut(ObjectReference) -> bool,
    ) -> Result<Option<ObjectReference>, WeakSetError> {
        self.check_mutator(me)?;
        let h = fold(hash);
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            let found = Self::lookup(h, eq, |f| f(&mut self.slots.lock()));
            if self.epoch.load(Ordering::Acquire) == epoch {
                if let Some((r, true)) = found {
                    me.keep_alive(r);
                }
                return Ok(found.map(|(r, _)| r));
            }
        }
    }

    /// [`WeakSet::find_detached`]: from any thread, each step between two
    /// pauses (the gate).
    fn find_detached(
        &self,
        hash: u64,
        eq: &mut impl FnMut(ObjectReference) -> bool,
    ) -> Result<Option<ObjectReference>, WeakSetError> {
        if in_collection::inside(&*self.gate) {
            return Err(WeakSetError::InsideCollection);
        }
        let h = fold(hash);
        loop {
            let epoch = self.epoch.load(Ordering::Acquire);
            let found = Self::lookup(h, eq, |f| {
                self.gate.outside_pauses(|| f(&mut self.slots.lock()));
            });
            let settled = self.gate.outside_pauses(|| {
                if self.epoch.load(Ordering::Acquire) != epoch {
                    return false;
                }
                if let (Some((r, true)), Some(k)) = (found, &self.keep_alive) {
                    k.keep_alive(r);
                }
                true
            });
            if settled {
                return Ok(found.map(|(r, _)| r));
            }
        }
    }

    /// An insertion without a mutator, for the loom models.
    #[cfg(all(test, hotmem_loom))]
    pub(crate) fn insert_for_model(&self, hash: u64, obj: ObjectReference) {
        self.slots.lock().insert(fold(hash), obj);
    }

    /// The lookup without its settling step: the candidate is kept alive
    /// after the gate was let go, whatever pause ran meanwhile (the racy
    /// baseline of the loom model of lookups).
    #[cfg(all(test, hotmem_loom))]
    pub(crate) fn find_unsettled(&self, hash: u64) -> Option<ObjectReference> {
        let found = Self::lookup(fold(hash), &mut |_| true, |f| {
            self.gate.outside_pauses(|| f(&mut self.slots.lock()));
        });
        if let (Some((r, true)), Some(k)) = (found, &self.keep_alive) {
            k.keep_alive(r);
        }
        found.map(|(r, _)| r)
    }

    fn check_in_heap(&self, obj: ObjectReference) -> Result<(), WeakSetError> {
        match self.heap.contains(&obj.get()) {
            true => Ok(()),
            false => Err(WeakSetError::NotInHeap(obj)),
        }
    }

    fn insert(&self, me: &Mutator, hash: u64, obj: ObjectReference) -> Result<(), WeakSetError> {
        self.check_in_heap(obj)?;
        self.check_mutator(me)?;
        self.slots.lock().insert(fold(hash), obj);
        Ok(())
    }
}

/// The sweeps of one concurrent cycle's weak sets, and of its weak handles
/// when they are cleared after the pause, begun in Pause Mark End with the
/// cycle's liveness (`'a`: the marking's), run after it. Dropping it
/// finishes every sweep, so no table keeps the liveness past `'a` (also
/// when the cycle fails); it is never leaked (the cycle owns it on its
/// stack).
pub(crate) struct Sweeps<'a> {
    sets: Vec<Arc<WeakSetTable>>,
    handles: Option<Arc<WeakTable>>,
    ephemerons: Option<Arc<EphemeronTable>>,
    _live: std::marker::PhantomData<&'a ()>,
}

/// What the sweeps after a pause judged and cleared: the weak sets'
/// entries, the weak handles (when swept after the pause), the ephemerons
/// cleared.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Swept {
    pub(crate) sets: (u64, u64),
    pub(crate) handles: Option<(u64, u64)>,
    pub(crate) ephemerons: u64,
}

impl<'a> Sweeps<'a> {
    /// In Pause Mark End: every set of `sets`, the weak handles of
    /// `handles` if given, and the pairs of an ephemeron table to clear if
    /// given, are to be swept by `live`.
    pub(crate) fn begin(
        sets: Vec<Arc<WeakSetTable>>,
        handles: Option<Arc<WeakTable>>,
        ephemerons: Option<(Arc<EphemeronTable>, Vec<usize>)>,
        live: &'a (dyn Fn(ObjectReference) -> bool + Sync),
    ) -> Sweeps<'a> {
        // SAFETY: the erased verdict goes only into the tables' states,
        // which hold it until their sweep ends; `Sweeps`' drop ends every
        // sweep begun here (each under its table's lock) before `'a` ends,
        // and nothing else reads a state's verdict but under that lock.
        let live = unsafe { Liveness::erase(live) };
        for s in &sets {
            s.begin_sweeping(live);
        }
        if let Some(h) = &handles {
            h.begin_sweeping(live);
        }
        let ephemerons = ephemerons.map(|(table, pending)| {
            table.begin_sweeping(pending, live);
            table
        });
        Sweeps {
            sets,
            handles,
            ephemerons,
            _live: std::marker::PhantomData,
        }
    }

    /// After the pause: sweeps every table; what each judged and cleared.
    pub(crate) fn run(self) -> Swept {
        let mut swept = Swept::default();
        for s in &self.sets {
            let (f, c) = s.finish_sweeping();
            swept.sets.0 += f;
            swept.sets.1 += c;
        }
        swept.handles = self.handles.as_ref().map(|h| h.finish_sweeping());
        swept.ephemerons = self.ephemerons.as_ref().map_or(0, |e| e.finish_sweeping());
        swept
    }
}

impl Drop for Sweeps<'_> {
    fn drop(&mut self) {
        for s in &self.sets {
            s.finish_sweeping();
        }
        if let Some(h) = &self.handles {
            h.finish_sweeping();
        }
        if let Some(e) = &self.ephemerons {
            e.finish_sweeping();
        }
    }
}

/// One concurrent cycle's marking as its weak sets see it, from Pause
/// Mark Start (`'a`: the marking's lifetime). Dropping it takes the
/// verdict back from every set (each under its lock), so no set keeps it
/// past `'a`, also when the cycle fails; the cycle owns it on its stack.
pub(crate) struct SetMarking<'a> {
    sets: Vec<Arc<WeakSetTable>>,
    _marked: std::marker::PhantomData<&'a ()>,
}

impl<'a> SetMarking<'a> {
    /// In Pause Mark Start: lookups in `sets` ask `marked` whether what
    /// they return needs keeping alive.
    pub(crate) fn begin(
        sets: Vec<Arc<WeakSetTable>>,
        marked: &'a (dyn Fn(ObjectReference) -> bool + Sync),
    ) -> SetMarking<'a> {
        // SAFETY: the erased verdict goes only into the sets' states, which
        // hold it while they are `Marking`; `SetMarking`'s drop ends every
        // such state (each under its set's lock) before `'a` ends, and
        // nothing reads a state's verdict but under that lock.
        let marked = unsafe { Liveness::erase(marked) };
        for s in &sets {
            s.begin_marking(marked);
        }
        SetMarking {
            sets,
            _marked: std::marker::PhantomData,
        }
    }
}

impl Drop for SetMarking<'_> {
    fn drop(&mut self) {
        for s in &self.sets {
            s.end_marking();
        }
    }
}

/// A full cycle's marking verdict set aside in every weak set while a
/// young cycle runs inside that marking: the young cycle's marking and
/// sweep take the sets' state, and a lookup meanwhile keeps what it
/// returns alive if either marking has not reached it. Dropping it (after
/// the young cycle's sweeps, or when it fails) gives the sets the full
/// verdict back.
pub(crate) struct SuspendedMarking {
    sets: Vec<Arc<WeakSetTable>>,
}

impl SetMarking<'_> {
    /// In a young cycle's Pause Mark Start, inside a full cycle's marking
    /// (whose own `SetMarking` outlives the young cycle): sets the full
    /// verdict of each of `sets` aside.
    pub(crate) fn suspend_full(sets: Vec<Arc<WeakSetTable>>) -> SuspendedMarking {
        for s in &sets {
            s.suspend_marking();
        }
        SuspendedMarking { sets }
    }
}

impl Drop for SuspendedMarking {
    fn drop(&mut self) {
        for s in &self.sets {
            s.resume_marking();
        }
    }
}

/// The weak sets of a runtime.
#[derive(Default)]
pub(crate) struct WeakSets {
    sets: Mutex<Vec<std::sync::Weak<WeakSetTable>>>,
}

impl WeakSets {
    /// A new set, in the heap whose reservation is `heap`.
    pub(crate) fn add(
        &self,
        keep_alive: Option<Arc<dyn KeepAlive>>,
        gate: Arc<PauseGate>,
        heap: Range<usize>,
    ) -> WeakSet {
        let table = Arc::new(WeakSetTable {
            slots: Mutex::new(Guarded::default()),
            epoch: AtomicU64::new(0),
            keep_alive,
            gate,
            heap,
        });
        let mut sets = self.sets.lock();
        sets.retain(|s| s.strong_count() > 0);
        sets.push(Arc::downgrade(&table));
        WeakSet { table }
    }

    /// The sets alive now.
    pub(crate) fn live(&self) -> Vec<Arc<WeakSetTable>> {
        self.sets
            .lock()
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect()
    }
}

/// A hash set of heap objects that holds each one weakly: once a
/// collection finds an object unreachable it is no longer in the set, and
/// while it lives the set follows it when it moves. Objects are found by a
/// hash and an equality the embedder gives, so the set is the shape of a
/// VM's string intern table (find by contents, else allocate and insert).
///
/// The runtime processes the set outside the pauses: a concurrent cycle's
/// pauses only flip its state, the GC thread clears the dead entries and
/// forwards the moved ones afterwards, and a lookup in between does that
/// work for the entries it passes (a dead object is never handed out).
///
/// Made by [`Runtime::weak_set`](crate::Runtime::weak_set); any thread
/// may use it; clones share the set.
///
/// ```
/// # use hotmem::{NumaConfig, ObjectReference, Runtime};
/// let rt = Runtime::builder().numa(NumaConfig::Off).build()?;
/// let mut me = rt.attach_mutator()?;
/// let strings = rt.weak_set();
/// let s = ObjectReference::from_address(me.alloc(16)?).unwrap();
/// strings.insert(&me, 42, s)?;
/// // A VM compares contents here; this example compares addresses.
/// assert_eq!(strings.find(&me, 42, |o| o == s)?, Some(s));
/// assert_eq!(strings.find(&me, 7, |_| true)?, None);
/// // Another thread, no mutator:
/// let other = strings.clone();
/// std::thread::spawn(move || assert_eq!(other.find_detached(42, |o| o == s), Ok(Some(s))))
///     .join()
///     .unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct WeakSet {
    table: Arc<WeakSetTable>,
}

impl WeakSet {
    /// The object among those inserted with `hash` for which `eq` answers
    /// true, or `None`, looked up by `me`, a mutator of the set's runtime.
    /// `eq` is called with objects that are alive (at their current
    /// addresses), with no lock held; it may do anything, poll included (a
    /// lookup that a collection overtook starts again). It is called at
    /// most as many times as the set held entries when the lookup began
    /// (or began again, after a collection overtook it): an `eq` that
    /// inserts under the same hash may make the lookup miss, never run on
    /// for ever. An object found
    /// while a concurrent cycle marks is kept alive by that cycle. As any
    /// reference, what it returns is valid until `me`'s next safepoint,
    /// unless rooted.
    ///
    /// # Errors
    /// [`WeakSetError::OtherRuntime`] if `me` is another runtime's;
    /// [`WeakSetError::InsideCollection`] from a binding callback or a
    /// [`Runtime::run_at_safepoint`](crate::Runtime::run_at_safepoint)
    /// operation of its runtime.
    #[inline]
    pub fn find(
        &self,
        me: &Mutator,
        hash: u64,
        mut eq: impl FnMut(ObjectReference) -> bool,
    ) -> Result<Option<ObjectReference>, WeakSetError> {
        self.table.find(me, hash, &mut eq)
    }

    /// [`WeakSet::find`] from a thread that is no mutator (or is in a
    /// native region): each step waits for the pause in progress. What it
    /// hands `eq` and returns is not current on such a thread (see the
    /// crate docs' rule 2): `eq` may compare addresses with references read
    /// in it (a [`Handle`](crate::Handle)'s, say), not read the objects.
    /// There is no detached insertion: such a thread holds no current
    /// reference to insert.
    ///
    /// # Errors
    /// [`WeakSetError::InsideCollection`] from a binding callback.
    pub fn find_detached(
        &self,
        hash: u64,
        mut eq: impl FnMut(ObjectReference) -> bool,
    ) -> Result<Option<ObjectReference>, WeakSetError> {
        self.table.find_detached(hash, &mut eq)
    }

    /// Adds `obj` under `hash`, from `me`, a mutator of the set's runtime,
    /// whether or not an equal object is in the set (a caller that interns
    /// from several threads serializes its find and insert per key). The
    /// set trusts `obj` to be current on `me` (the crate docs' rule 3): a
    /// made-up address makes a later collection fail with a
    /// [`GcError`](crate::GcError), as a made-up weak handle does.
    ///
    /// # Errors
    /// [`WeakSetError::NotInHeap`] for an address outside the heap;
    /// [`WeakSetError::OtherRuntime`], [`WeakSetError::InsideCollection`]
    /// as for [`WeakSet::find`]. Nothing is added then.
    pub fn insert(
        &self,
        me: &Mutator,
        hash: u64,
        obj: ObjectReference,
    ) -> Result<(), WeakSetError> {
        self.table.insert(me, hash, obj)
    }

    /// Entries holding an object: those alive, and those dead whose
    /// collection has not cleared them yet.
    pub fn len(&self) -> usize {
        self.table.slots.lock().slots.len
    }

    /// Whether [`WeakSet::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(all(test, hotmem_loom))]
impl WeakSet {
    /// The set's table, for the loom models.
    pub(crate) fn table(&self) -> &Arc<WeakSetTable> {
        &self.table
    }
}

impl fmt::Debug for WeakSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakSet").field("len", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::table_gc::TableGc;

    fn r(v: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(v)).unwrap()
    }

    fn all(g: &mut Guarded<SetSlots>, h: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let mut from = None;
        while let Some((r, i, _)) = g.next_candidate(h, from) {
            out.push(r.get());
            from = Some(i + 1);
        }
        out
    }

    #[test]
    fn entries_are_found_by_hash_across_growth() {
        let mut g = Guarded::<SetSlots>::default();
        for i in 1..=1000usize {
            g.insert((i % 37) as u32, r(i * 8));
        }
        assert_eq!(g.slots.len, 1000);
        let found = all(&mut g, 5);
        assert_eq!(found.len(), (1..=1000).filter(|i| i % 37 == 5).count());
        assert!(found.iter().all(|a| (a / 8) % 37 == 5));
        assert!(g.slots.entries.len().is_power_of_two());
        assert!(g.slots.used * 4 <= g.slots.entries.len() * 3);
    }

    static LIVE_EVEN: fn(ObjectReference) -> bool = |o| (o.get() / 8) % 2 == 0;

    /// A young cycle inside a full one's marking: a lookup keeps what it
    /// returns alive unless both markings reached it, also while the young
    /// cycle sweeps; then the full marking's verdict is back.
    #[test]
    fn a_young_cycle_inside_a_full_marking_keeps_the_full_verdict() {
        static FULL: fn(ObjectReference) -> bool = |o| o.get() < 0x1000;
        static YOUNG: fn(ObjectReference) -> bool = |o| (o.get() / 8) % 2 == 0;
        let (full, young) = (Liveness::of(&FULL), Liveness::of(&YOUNG));
        let mut g = Guarded::<SetSlots>::default();
        g.insert(1, r(0x800));
        g.slots.sweep = Sweep::Marking { marked: full };
        g.slots.suspend_marking();
        assert!(matches!(g.slots.sweep, Sweep::Idle));
        g.slots.sweep = Sweep::Marking { marked: young };
        let keep = |g: &Guarded<SetSlots>, a| g.slots.sweep.keep(r(a), g.slots.outer.as_ref());
        assert!(!keep(&g, 0x800), "both reached it");
        assert!(keep(&g, 0x808), "the young marking did not");
        assert!(keep(&g, 0x2000), "the full marking did not");
        g.slots.sweep = Sweep::Sweeping {
            cursor: 0,
            number: 1,
            live: young,
        };
        assert!(
            keep(&g, 0x2000) && !keep(&g, 0x808),
            "sweeping: the full verdict"
        );
        while g.sweep_step().0 == Step::More {}
        g.slots.resume_marking();
        assert!(matches!(g.slots.sweep, Sweep::Marking { .. }) && g.slots.outer.is_none());
        assert!(keep(&g, 0x2000) && !keep(&g, 0x808));
    }

    #[test]
    fn a_sweep_clears_the_dead_and_lookups_never_return_them() {
        let mut g = Guarded::<SetSlots>::default();
        for i in 1..=(3 * CHUNK) {
            g.insert(1 + (i % 3) as u32, r(i * 8));
        }
        g.slots.sweeps = 1;
        g.slots.sweep = Sweep::Sweeping {
            cursor: 0,
            number: 1,
            live: Liveness::of(&LIVE_EVEN),
        };
        // Added during the sweep: not judged (allocated after marking).
        g.insert(2, r(0x10_0008));
        assert!(
            all(&mut g, 2)
                .iter()
                .all(|a| (a / 8) % 2 == 0 || *a == 0x10_0008)
        );
        let (mut found, mut cleared) = (0, 0);
        loop {
            let (step, f, c) = g.sweep_step();
            found += f;
            cleared += c;
            if step == Step::Done {
                break;
            }
        }
        assert!(matches!(g.slots.sweep, Sweep::Idle));
        let left: Vec<usize> = (1..=3).flat_map(|h| all(&mut g, h)).collect();
        assert!(left.contains(&0x10_0008), "the fresh entry stays");
        assert_eq!(left.len(), 3 * CHUNK / 2 + 1);
        assert_eq!(g.slots.len, left.len());
        assert!(found <= 3 * CHUNK as u64 && cleared <= found);
    }

    #[test]
    fn growth_during_a_sweep_judges_every_entry() {
        let mut g = Guarded::<SetSlots>::default();
        for i in 1..=12usize {
            g.insert(3, r(i * 8));
        }
        g.slots.sweeps = 1;
        g.slots.sweep = Sweep::Sweeping {
            cursor: 0,
            number: 1,
            live: Liveness::of(&LIVE_EVEN),
        };
        g.rehash(64);
        assert_eq!(all(&mut g, 3).len(), 6);
        assert_eq!(g.sweep_step().0, Step::Done);
    }

    struct Plus;
    impl RootForwarder for Plus {
        fn forward(&self, x: ObjectReference) -> ObjectReference {
            if x.get() < 0x10000 {
                r(x.get() + 0x10000)
            } else {
                x
            }
        }
    }

    #[test]
    fn lookups_forward_and_heal_while_the_set_is_forwarded() {
        let mut g = Guarded::<SetSlots>::default();
        g.insert(9, r(0x80));
        g.insert(9, r(0x20000));
        let to: Arc<dyn RootForwarder> = Arc::new(Plus);
        g.gc = TableGc::Idle;
        g.gc.begin_forwarding(1, &to).unwrap();
        let mut found = all(&mut g, 9);
        found.sort_unstable();
        assert_eq!(found, [0x10080, 0x20000]);
        // Healed: the word holds the new address.
        assert!(g.slots.entries.iter().any(|e| e.word == 0x10080));
    }

    /// What the counters say is what the words hold.
    fn check_counts(g: &Guarded<SetSlots>) {
        let objects = g
            .slots
            .entries
            .iter()
            .filter(|e| e.word > TOMBSTONE)
            .count();
        let used = g.slots.entries.iter().filter(|e| e.word != EMPTY).count();
        assert_eq!(g.slots.len, objects, "len");
        assert_eq!(g.slots.used, used, "used");
        assert!(used < g.slots.entries.len() || g.slots.entries.is_empty());
    }

    static LIVE_ODD_HASH: fn(ObjectReference) -> bool = |o| (o.get() >> 3) % 3 != 0;

    #[test]
    fn random_operations_keep_the_counts_and_a_free_word() {
        let mut g = Guarded::<SetSlots>::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut addr = 8usize;
        for step in 0..30_000u32 {
            match next() % 10 {
                0..=4 => {
                    addr += 8;
                    g.insert((next() % 512) as u32, r(addr));
                }
                5..=7 => {
                    let h = (next() % 512) as u32;
                    let mut from = None;
                    while let Some((_, i, _)) = g.next_candidate(h, from) {
                        from = Some(i + 1);
                    }
                }
                8 => {
                    if matches!(g.slots.sweep, Sweep::Idle) && next() % 50 == 0 {
                        g.slots.sweeps += 1;
                        g.slots.sweep = Sweep::Sweeping {
                            cursor: 0,
                            number: g.slots.sweeps,
                            live: Liveness::of(&LIVE_ODD_HASH),
                        };
                    }
                }
                _ => {
                    let _ = g.sweep_step();
                }
            }
            if step.is_multiple_of(64) {
                check_counts(&g);
            }
        }
        check_counts(&g);
        assert!(g.slots.len > 0, "something stayed");
    }
}
