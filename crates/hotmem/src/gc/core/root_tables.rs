//! The root tables of a concurrent cycle: the runtime's handle tables and
//! the binding's [`RootTable`]s, visited after the pauses instead of in
//! them (see [`table_gc`](crate::roots::table_gc)), so that a pause does
//! not grow with the number of roots they hold; and the runtime's weak
//! handles, forwarded after Pause Relocate Start the same way.
//!
//! Each pause only changes every table's state ([`ConcurrentTables::begin_marking`]
//! in Pause Mark Start, [`ConcurrentTables::begin_forwarding`] in Pause
//! Relocate Start); the GC workers then mark the entries (one table per
//! job, before they trace) and forward them (one table per job, beside
//! the relocation set's pages), a chunk at a time while the mutators run.
//! Dropping the set finishes what its cycle started: a forwarding is
//! always completed (the entries must not name old copies once the
//! relocation set goes), a marking forgotten.

use super::binding_panic::call_model;
use super::heap::GcHeap;
use super::in_collection::Collected;
use super::mark::RootJob;
use crate::GcError;
use crate::roots::table_gc::{GcTable, RootForwarder, RootWord, Step, TableBusy};
use crate::roots::{HandleTable, RootTable};
use crate::vm::{Binding, ObjectReference};
use crate::weak::{EphemeronTable, WeakSetTable, WeakTable};
use serde::Serialize;
use std::convert::Infallible;
use std::sync::Arc;

/// Where a concurrent collector visits the root tables: the handle tables
/// ([`Handle`](crate::Handle)) and the binding's [`RootTable`]s. The
/// stop-the-world collector visits them in its pauses.
///
/// ```
/// use hotmem::{CollectorMode, RootTableVisit, Runtime};
/// let rt = Runtime::builder()
///     .collector(CollectorMode::Concurrent)
///     .root_table_visit(RootTableVisit::InPause)
///     .build()?;
/// assert_eq!(rt.config().root_table_visit(), RootTableVisit::InPause);
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum RootTableVisit {
    /// After the pauses, while the mutators run (the default): Pause Mark
    /// Start and Pause Relocate Start only change each table's state, the
    /// GC workers mark and forward the entries afterwards,
    /// and a read of an entry not forwarded yet forwards it (relocating
    /// the object if nobody has). The pauses do not grow with the number
    /// of entries.
    #[default]
    Concurrent,
    /// In the pauses, with the other roots: Pause Mark Start marks every
    /// entry and Pause Relocate Start forwards every entry into the
    /// relocation set, copying the objects they refer to (within the
    /// pause's copy budget). Kept to compare with.
    InPause,
}

/// The binding's root tables now ([`Binding::root_tables`]); its panic is
/// the error.
pub(crate) fn binding_tables<B: Binding>(binding: &B) -> Result<Vec<Arc<RootTable>>, GcError> {
    let mut tables = Vec::new();
    call_model(|| binding.root_tables(&mut |t| tables.push(t.clone())))?;
    Ok(tables)
}

/// The tables one concurrent cycle works on, and what it did with them.
pub(crate) struct ConcurrentTables {
    owner: usize,
    handles: Vec<Arc<HandleTable>>,
    tables: Vec<Arc<RootTable>>,
    /// The weak handles, once forwarding began.
    weak: Option<Arc<WeakTable>>,
    /// The weak sets, once forwarding began.
    sets: Vec<Arc<WeakSetTable>>,
    /// The ephemerons, once forwarding began.
    ephemerons: Option<Arc<EphemeronTable>>,
}

/// Runs `$body` with `$t` bound to every table of a [`ConcurrentTables`]
/// in turn (the handle tables, the binding's tables, the weak handles),
/// each a [`GcTable`] of its own type.
macro_rules! each_table {
    ($set:expr, |$t:ident| $body:expr) => {{
        for $t in &$set.handles {
            $body;
        }
        for $t in &$set.tables {
            $body;
        }
        if let Some($t) = &$set.weak {
            $body;
        }
        for $t in &$set.sets {
            $body;
        }
        if let Some($t) = &$set.ephemerons {
            $body;
        }
    }};
}

impl ConcurrentTables {
    /// In Pause Mark Start: every table of `heap` and of `binding` is to be
    /// marked after the pause. A table in another runtime's cycle fails
    /// the collection ([`GcError::RootTableInUse`]); the tables begun are
    /// forgotten when the set is dropped.
    pub(crate) fn begin_marking<B: Binding>(
        binding: &B,
        heap: &GcHeap,
    ) -> Result<ConcurrentTables, GcError> {
        let mut set = ConcurrentTables {
            owner: heap.collection_key(),
            handles: heap.roots.tables(),
            tables: Vec::new(),
            weak: None,
            sets: Vec::new(),
            ephemerons: None,
        };
        for h in &set.handles {
            h.begin_marking(set.owner).map_err(busy)?;
        }
        // Taken after the handle tables: on an error the drop forgets
        // only the tables begun.
        let tables = binding_tables(binding)?;
        for (i, t) in tables.iter().enumerate() {
            if let Err(e) = t.begin_marking(set.owner) {
                set.tables = tables[..i].to_vec();
                return Err(busy(e));
            }
        }
        set.tables = tables;
        Ok(set)
    }

    /// After Pause Mark Start, one job per table for the workers of
    /// Concurrent Mark to share: a job passes every entry of its table,
    /// and every value that left an entry before the visit reached it, to
    /// the function that marks it; it returns how many.
    pub(crate) fn marking_jobs(&self) -> Vec<RootJob<'_>> {
        let owner = self.owner;
        let mut jobs: Vec<RootJob<'_>> = Vec::new();
        each_table!(self, |t| jobs
            .push(Box::new(move |mark| mark_table(owner, &**t, mark))));
        jobs
    }

    /// In Pause Relocate Start: every table of `heap` and of `binding`
    /// now, the weak handles, the weak sets and the ephemerons are to be
    /// forwarded through `to` after the pause, and read through it until
    /// then. Every table, not only
    /// those marked: one made since mark start holds references that were
    /// current when stored, and may name objects of the relocation set
    /// chosen since. A table another runtime's cycle took (a table two
    /// bindings report) is forwarded here, in the pause. If the binding's
    /// hook panics, its tables reported at mark start are forwarded and
    /// the panic is the error (the caller poisons the runtime: a table
    /// made since may name old copies).
    pub(crate) fn begin_forwarding<B: Binding>(
        &mut self,
        binding: &B,
        heap: &GcHeap,
        to: Arc<dyn RootForwarder>,
    ) -> Result<(), GcError> {
        self.handles = heap.roots.tables();
        self.weak = Some(heap.weak.handles.clone());
        self.sets = heap.weak.sets.live();
        self.ephemerons = Some(heap.weak.ephemerons.clone());
        let reported = binding_tables(binding);
        if let Ok(tables) = &reported {
            self.tables.clone_from(tables);
        }
        let owner = self.owner;
        each_table!(self, |t| if t.begin_forwarding(owner, &to).is_err() {
            t.for_each_word(|w| w.forward_all(&*to));
        });
        reported.map(drop)
    }

    /// After Pause Relocate Start: forwards every entry of every table (the
    /// objects relocated by whoever reaches them first); the tables are
    /// idle again.
    pub(crate) fn forward(&self) {
        for job in self.forwarding_jobs() {
            job();
        }
    }

    /// What [`ConcurrentTables::forward`] does, one job per table, for the
    /// workers of Concurrent Relocate to share: a job forwards every entry
    /// of its table; once every job has run, the tables are idle again.
    pub(crate) fn forwarding_jobs(&self) -> Vec<TableJob<'_>> {
        let owner = self.owner;
        let mut jobs: Vec<TableJob<'_>> = Vec::new();
        each_table!(self, |t| jobs
            .push(Box::new(move || forward_table(owner, &**t))));
        jobs
    }
}

/// Forwards every entry of one root table ([`ConcurrentTables::forwarding_jobs`]).
pub(crate) type TableJob<'t> = Box<dyn Fn() + Sync + 't>;

/// Passes every entry of `table` in `owner`'s cycle to `mark`
/// ([`ConcurrentTables::marking_jobs`]): how many it visited.
fn mark_table<T: GcTable>(
    owner: usize,
    table: &T,
    mark: &mut dyn FnMut(ObjectReference) -> Result<(), GcError>,
) -> Result<u64, GcError> {
    let mut entries = 0u64;
    let mut visit = |r: ObjectReference| {
        entries += 1;
        mark(r)
    };
    while table.step(owner, &mut visit)? == Step::More {}
    Ok(entries)
}

/// Forwards every entry of `table` in `owner`'s cycle.
fn forward_table<T: GcTable>(owner: usize, table: &T) {
    let mut none = |_: ObjectReference| -> Result<(), Infallible> { Ok(()) };
    while let Ok(Step::More) = table.step(owner, &mut none) {}
}

impl Drop for ConcurrentTables {
    /// A failed cycle's tables: a marking is forgotten, a forwarding
    /// finished (a no-op for the tables already done).
    fn drop(&mut self) {
        let owner = self.owner;
        each_table!(self, |t| t.forget_marking(owner));
        self.forward();
    }
}

fn busy(_: TableBusy) -> GcError {
    GcError::RootTableInUse
}
