//! [`TableGc`]: what a concurrent cycle asks of a table of roots (a
//! [`RootTable`](super::RootTable), a handle table) while the mutators
//! run, so that neither pause grows with the number of roots.
//!
//! - **Marking.** Pause Mark Start only puts every table in
//!   [`TableGc::Marking`]; a GC worker then marks each table's entries
//!   after the pause, a chunk per lock acquisition. Until it has passed an
//!   entry, a mutator that overwrites or removes the entry's value keeps
//!   the value in the table's log, which the worker marks last: the
//!   snapshot at mark start is marked, as the store barrier's log keeps it
//!   for heap slots. An entry added meanwhile holds a current reference,
//!   reachable in the snapshot or allocated since, so it needs no log.
//! - **Forwarding.** Pause Relocate Start only puts every table in
//!   [`TableGc::Forwarding`]; a GC worker then forwards each entry into
//!   the relocation set (relocating its object if nobody has), a chunk
//!   per lock acquisition. Until the table is done, every read of an
//!   entry forwards it first and heals it, so a reader never sees an old
//!   copy: whoever reaches a root first relocates its object, as ZGC's
//!   lazy root processing does.
//!
//! Both states end with the cycle: the cycle's guard finishes the
//! forwarding and forgets the marking of every table it started, also
//! when it fails. A table one cycle works on refuses another runtime's
//! cycle ([`TableBusy`]).

use crate::slot_table::SlotTable;
use crate::sync::MutexGuard;
use crate::vm::ObjectReference;
use std::sync::Arc;

/// Entries a collector visits per lock acquisition: a mutator waits for
/// one chunk at most (a few microseconds) to use the table. One under
/// loom, so that the models interleave a mutator between entries.
#[cfg(not(hotmem_loom))]
pub(crate) const CHUNK: usize = 4096;
#[cfg(hotmem_loom)]
pub(crate) const CHUNK: usize = 1;

/// Forwards a reference into the relocation set of the cycle that
/// forwards a table: the object's new address, the object relocated now
/// if nobody has; any other reference as it is.
pub(crate) trait RootForwarder: Send + Sync {
    fn forward(&self, r: ObjectReference) -> ObjectReference;
}

/// One word of a table: a reference or none.
pub(crate) trait RootWord {
    fn object(&self) -> Option<ObjectReference>;
    fn replace(&mut self, r: ObjectReference);

    /// Forwards every reference the word holds through `to`, healing it.
    /// A word of one reference forwards [`RootWord::object`]; a word of
    /// several (an ephemeron's key and value) forwards each.
    #[inline]
    fn forward_all(&mut self, to: &dyn RootForwarder) {
        forward_word(to, self);
    }
}

impl RootWord for Option<ObjectReference> {
    #[inline]
    fn object(&self) -> Option<ObjectReference> {
        *self
    }
    #[inline]
    fn replace(&mut self, r: ObjectReference) {
        *self = Some(r);
    }
}

/// Forwards the reference in `word` through `to` and heals the word: what
/// it holds now.
fn forward_word<W: RootWord + ?Sized>(
    to: &dyn RootForwarder,
    word: &mut W,
) -> Option<ObjectReference> {
    let v = word.object()?;
    let n = to.forward(v);
    if n != v {
        word.replace(n);
    }
    Some(n)
}

/// A table's words as a collector visits them.
pub(crate) trait RootWords {
    type Word: RootWord;
    fn words(&mut self) -> &mut [Self::Word];
}

impl RootWords for Vec<Option<ObjectReference>> {
    type Word = Option<ObjectReference>;
    fn words(&mut self) -> &mut [Self::Word] {
        self
    }
}

impl RootWords for SlotTable<ObjectReference> {
    type Word = Option<ObjectReference>;
    fn words(&mut self) -> &mut [Self::Word] {
        self.entries_mut()
    }
}

/// What a table of roots keeps behind its lock: its words, and its state
/// in a concurrent cycle.
#[derive(Default)]
pub(crate) struct Guarded<S> {
    pub(crate) slots: S,
    pub(crate) gc: TableGc,
}

impl<S: RootWords> Guarded<S> {
    /// Word `index` as a reader must see it: forwarded (and healed) while
    /// the table is being forwarded; `None` if empty or out of range.
    pub(crate) fn read(&mut self, index: usize) -> Option<ObjectReference> {
        let Guarded { slots, gc } = self;
        gc.read(slots.words().get_mut(index)?)
    }
}

/// A table of roots behind its lock: what a concurrent cycle asks of it
/// (the handle tables, the binding's [`RootTable`](super::RootTable)s,
/// the weak handles).
pub(crate) trait GcTable {
    type Slots: RootWords;

    /// The table, locked.
    fn guarded(&self) -> MutexGuard<'_, Guarded<Self::Slots>>;

    /// Pause Mark Start of a concurrent cycle of `owner`.
    fn begin_marking(&self, owner: usize) -> Result<(), TableBusy> {
        self.guarded().gc.begin_marking(owner)
    }

    /// Pause Relocate Start of a concurrent cycle of `owner`.
    fn begin_forwarding(&self, owner: usize, to: &Arc<dyn RootForwarder>) -> Result<(), TableBusy> {
        self.guarded().gc.begin_forwarding(owner, to)
    }

    /// One chunk of `owner`'s visit (see [`TableGc::step`]).
    fn step<E>(
        &self,
        owner: usize,
        mark: &mut dyn FnMut(ObjectReference) -> Result<(), E>,
    ) -> Result<Step, E> {
        let mut g = self.guarded();
        let Guarded { slots, gc } = &mut *g;
        gc.step(owner, slots.words(), mark)
    }

    /// `owner`'s cycle failed before marking the table.
    fn forget_marking(&self, owner: usize) {
        self.guarded().gc.forget_marking(owner);
    }

    /// A pause's visit: every word, which `f` may rewrite.
    fn for_each_word(&self, mut f: impl FnMut(&mut <Self::Slots as RootWords>::Word)) {
        self.guarded().slots.words().iter_mut().for_each(&mut f);
    }
}

/// The state of one table in a concurrent cycle (see the [module
/// docs](self)). `owner` is the cycle's runtime
/// ([`Collected::collection_key`](crate::gc::core::in_collection::Collected)).
#[derive(Default)]
pub(crate) enum TableGc {
    /// No cycle works on the table: entries are read and written as they
    /// are.
    #[default]
    Idle,
    /// Marked from `cursor` on by the GC thread; the values that left an
    /// entry at `cursor` or after are kept in `removed`.
    Marking {
        owner: usize,
        cursor: usize,
        removed: Vec<ObjectReference>,
    },
    /// Forwarded from `cursor` on by a GC worker; every read forwards.
    Forwarding {
        owner: usize,
        cursor: usize,
        to: Arc<dyn RootForwarder>,
    },
}

/// A table is in another runtime's concurrent cycle: a table reported by
/// the bindings of two runtimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableBusy;

/// What one step of a collector's visit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Entries are left: call again.
    More,
    /// The table is done (and idle again).
    Done,
}

impl TableGc {
    /// Pause Mark Start: the table is to be marked by `owner`'s cycle.
    pub(crate) fn begin_marking(&mut self, owner: usize) -> Result<(), TableBusy> {
        match self {
            TableGc::Idle => {
                *self = TableGc::Marking {
                    owner,
                    cursor: 0,
                    removed: Vec::new(),
                };
                Ok(())
            }
            // Reported twice by one binding: once is enough.
            TableGc::Marking { owner: o, .. } if *o == owner => Ok(()),
            _ => Err(TableBusy),
        }
    }

    /// Pause Relocate Start: the table's entries are to be forwarded by
    /// `owner`'s cycle through `to`.
    pub(crate) fn begin_forwarding(
        &mut self,
        owner: usize,
        to: &Arc<dyn RootForwarder>,
    ) -> Result<(), TableBusy> {
        match self {
            TableGc::Idle => {
                *self = TableGc::Forwarding {
                    owner,
                    cursor: 0,
                    to: to.clone(),
                };
                Ok(())
            }
            TableGc::Forwarding { owner: o, .. } if *o == owner => Ok(()),
            _ => Err(TableBusy),
        }
    }

    /// The value at `index` is about to leave its entry (overwritten,
    /// removed, or moved to an entry the collector has passed): kept for
    /// marking if the collector has not passed `index` yet.
    #[inline]
    pub(crate) fn leaving(&mut self, index: usize, value: Option<ObjectReference>) {
        if let (
            TableGc::Marking {
                cursor, removed, ..
            },
            Some(v),
        ) = (self, value)
        {
            if index >= *cursor {
                removed.push(v);
            }
        }
    }

    /// Whether a value moved from entry `from` to entry `to` must be kept
    /// for marking: the collector passed `to` but not `from`.
    #[inline]
    pub(crate) fn moving(&mut self, from: usize, to: usize, value: Option<ObjectReference>) {
        if let (
            TableGc::Marking {
                cursor, removed, ..
            },
            Some(v),
        ) = (self, value)
        {
            if from >= *cursor && to < *cursor {
                removed.push(v);
            }
        }
    }

    /// Heals every reference of `word` while the table is being forwarded
    /// (a word that [`TableGc::read`] cannot return whole: an ephemeron's
    /// pair).
    #[inline]
    pub(crate) fn heal<W: RootWord>(&self, word: &mut W) {
        if let TableGc::Forwarding { to, .. } = self {
            word.forward_all(&**to);
        }
    }

    /// `word` as a reader must see it: forwarded (and healed) while the
    /// table is being forwarded.
    #[inline]
    pub(crate) fn read<W: RootWord>(&self, word: &mut W) -> Option<ObjectReference> {
        match self {
            TableGc::Forwarding { to, .. } => forward_word(&**to, word),
            _ => word.object(),
        }
    }

    /// One step of `owner`'s visit of `words`: up to [`CHUNK`] entries
    /// marked (`mark`) or forwarded. A table not in `owner`'s cycle (one
    /// made after the pause) is done at once.
    pub(crate) fn step<W: RootWord, E>(
        &mut self,
        owner: usize,
        words: &mut [W],
        mark: &mut dyn FnMut(ObjectReference) -> Result<(), E>,
    ) -> Result<Step, E> {
        let start = match self {
            TableGc::Marking {
                owner: o, cursor, ..
            }
            | TableGc::Forwarding {
                owner: o, cursor, ..
            } if *o == owner => *cursor,
            _ => return Ok(Step::Done),
        };
        let len = words.len();
        let end = len.min(start.saturating_add(CHUNK));
        let chunk = words.get_mut(start..end).unwrap_or(&mut []);
        match self {
            TableGc::Marking {
                cursor, removed, ..
            } => {
                for r in chunk.iter().filter_map(RootWord::object) {
                    mark(r)?;
                }
                *cursor = end;
                if end < len {
                    return Ok(Step::More);
                }
                for r in std::mem::take(removed) {
                    mark(r)?;
                }
            }
            TableGc::Forwarding { cursor, to, .. } => {
                for w in chunk {
                    w.forward_all(&**to);
                }
                *cursor = end;
                if end < len {
                    return Ok(Step::More);
                }
            }
            TableGc::Idle => return Ok(Step::Done),
        }
        *self = TableGc::Idle;
        Ok(Step::Done)
    }

    /// Forgets `owner`'s marking (its cycle failed): the table is idle
    /// again. A forwarding is never forgotten, only finished ([`step`](Self::step)).
    pub(crate) fn forget_marking(&mut self, owner: usize) {
        if matches!(self, TableGc::Marking { owner: o, .. } if *o == owner) {
            *self = TableGc::Idle;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotmem_os::Address;

    fn r(v: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(v)).unwrap()
    }

    struct Plus(usize);
    impl RootForwarder for Plus {
        fn forward(&self, x: ObjectReference) -> ObjectReference {
            if x.get() < 0x10000 {
                r(x.get() + self.0)
            } else {
                x
            }
        }
    }

    #[test]
    fn marking_keeps_what_leaves_unvisited_entries_and_ends_idle() {
        let mut words: Vec<Option<ObjectReference>> =
            (1..=CHUNK + 2).map(|i| Some(r(i * 8))).collect();
        let mut gc = TableGc::Idle;
        gc.begin_marking(7).unwrap();
        assert_eq!(
            gc.begin_marking(8),
            Err(TableBusy),
            "another runtime's cycle"
        );
        let mut seen = Vec::new();
        let mut mark = |x: ObjectReference| -> Result<(), ()> {
            seen.push(x.get());
            Ok(())
        };
        assert_eq!(gc.step(7, &mut words, &mut mark), Ok(Step::More));
        // Entry 0 was visited: its old value need not be kept; the last
        // was not: it must be.
        gc.leaving(0, words[0]);
        words[0] = None;
        let last = words.len() - 1;
        gc.leaving(last, words[last]);
        words[last] = Some(r(0x99990));
        // A value moved from an unvisited entry to a visited one.
        gc.moving(last - 1, 1, words[last - 1]);
        words[1] = words[last - 1];
        assert_eq!(gc.step(7, &mut words, &mut mark), Ok(Step::Done));
        assert!(matches!(gc, TableGc::Idle));
        let want = (CHUNK + 2) * 8;
        assert!(seen.contains(&want), "the overwritten value was marked");
        assert!(
            seen.contains(&((CHUNK + 1) * 8)),
            "the moved value was marked"
        );
        assert!(
            seen.contains(&8),
            "the first chunk was marked before the removal"
        );
    }

    #[test]
    fn forwarding_heals_on_read_and_in_steps_and_refuses_others() {
        let mut words: Vec<Option<ObjectReference>> = vec![Some(r(8)), None, Some(r(0x20000))];
        let to: Arc<dyn RootForwarder> = Arc::new(Plus(0x100));
        let mut gc = TableGc::Idle;
        gc.begin_forwarding(1, &to).unwrap();
        assert_eq!(gc.begin_marking(1), Err(TableBusy));
        assert_eq!(gc.read(&mut words[0]).map(|x| x.get()), Some(0x108));
        assert_eq!(words[0].map(|x| x.get()), Some(0x108), "healed");
        let mut mark = |_: ObjectReference| -> Result<(), ()> { panic!("no marking") };
        assert_eq!(gc.step(2, &mut words, &mut mark), Ok(Step::Done), "not 2's");
        assert!(matches!(gc, TableGc::Forwarding { .. }));
        gc.forget_marking(1);
        assert!(
            matches!(gc, TableGc::Forwarding { .. }),
            "forwarding is finished, never forgotten"
        );
        assert_eq!(gc.step(1, &mut words, &mut mark), Ok(Step::Done));
        assert_eq!(words[2].map(|x| x.get()), Some(0x20000));
        assert!(matches!(gc, TableGc::Idle));
    }
}
