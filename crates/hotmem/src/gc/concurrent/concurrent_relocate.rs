//! Relocation in a concurrent cycle: Pause Relocate Start forwards the
//! roots, then Concurrent Relocate copies the rest of the relocation set
//! on the GC workers while the mutators run (and relocate what they load
//! first, through the load barrier).

use crate::GcError;
use crate::gc::core::heap::{GcAllocator, GcHeap};
use crate::gc::core::in_collection;
use crate::gc::core::relocation_set::{RelocationSet, Relocator};
use crate::gc::core::root_scan::update_roots;
use crate::gc::core::root_tables::{RootTableVisit, TableJob};
use crate::gc::core::weak_processing::forward_weak_refs;
use crate::gc::core::workers::{Crew, GcWorkers, PhaseSummary};
use crate::roots::table_gc::RootForwarder;
use crate::vm::{Binding, Forwarder, ObjectReference};
use crate::weak::Finalizers;
use hotmem_page::NodeId;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards through a relocation set, relocating on demand (in the pause).
struct SetForwarder<'a> {
    set: &'a RelocationSet,
    alloc: &'a GcAllocator,
}

impl Forwarder for SetForwarder<'_> {
    fn forwarded(&self, obj: ObjectReference) -> ObjectReference {
        self.set.forward_in_pause(obj, self.alloc)
    }
}

/// Forwards the entries of root tables after Pause Relocate Start (see
/// [`ConcurrentTables`](crate::gc::core::root_tables::ConcurrentTables)):
/// whoever reads an entry first, or the GC thread, relocates its object.
pub(super) struct TableForwarder {
    set: Arc<RelocationSet>,
    alloc: NonNull<GcAllocator>,
}

// SAFETY: `alloc` is the heap's GC allocator, which any thread may use
// (mutators' load barriers and the workers allocate in it at once); it is
// read only through `forward`, see there why it is valid then.
unsafe impl Send for TableForwarder {}
// SAFETY: as for `Send`: `forward` takes `&self` and the allocator is
// shared by design.
unsafe impl Sync for TableForwarder {}

impl TableForwarder {
    /// A forwarder through `set` into `heap`'s GC allocator, for the
    /// tables of the cycle that installed `set`.
    pub(super) fn for_set(set: Arc<RelocationSet>, heap: &GcHeap) -> Arc<dyn RootForwarder> {
        Arc::new(TableForwarder {
            set,
            alloc: NonNull::from(&heap.gc_alloc),
        })
    }
}

impl RootForwarder for TableForwarder {
    fn forward(&self, r: ObjectReference) -> ObjectReference {
        let Some(pi) = self.set.page_in_set(r.get()) else {
            return r;
        };
        // SAFETY: a forwarder is reached only through the state of a root
        // table its cycle put in forwarding, or through the finalizer
        // registry's stale entries (under the table's or the registry's
        // lock), and the cycle finishes every such table and the registry,
        // taking each lock, before it returns (`ConcurrentTables::forward`
        // and `FinalizersForwarding`'s drop, also when the cycle fails:
        // their `Drop`); the heap outlives each of its cycles, so the
        // allocator is alive whenever this runs.
        let alloc = unsafe { self.alloc.as_ref() };
        self.set.forward(pi, r, alloc, Relocator::RootTable).to
    }
}

/// The registered finalizers of a cycle's relocation set, in forwarding
/// from Pause Relocate Start: dropping it forwards what no registration
/// has ([`Finalizers::finish_forwarding`]), so that the cycle's
/// forwarder, which the registry holds meanwhile, is gone before the cycle
/// returns, as [`TableForwarder`] requires.
pub(super) struct FinalizersForwarding<'h> {
    finalizers: &'h Finalizers,
}

impl<'h> FinalizersForwarding<'h> {
    /// In Pause Relocate Start, `set` installed: `entries` (the registered
    /// objects noted in the set when it was chosen) and those registered
    /// since in the set are forwarded through `to` after the pause.
    pub(super) fn begin(
        finalizers: &'h Finalizers,
        entries: Vec<ObjectReference>,
        set: &RelocationSet,
        to: Arc<dyn RootForwarder>,
    ) -> FinalizersForwarding<'h> {
        finalizers.begin_forwarding(entries, |r| set.holds(r), to);
        FinalizersForwarding { finalizers }
    }
}

impl Drop for FinalizersForwarding<'_> {
    fn drop(&mut self) {
        self.finalizers.finish_forwarding();
    }
}

/// Pause Relocate Start, with the set installed: every root into the set
/// (the binding's roots, shadow stacks, the finalization queue, and the
/// root tables if `tables` says so) and every weak reference the runtime
/// or the binding keeps gets its object's new address, the object
/// relocated now if needed. From here on a mutator holds no reference
/// into the set: it reaches objects through the roots, through the load
/// barrier, which forwards, and through the root tables, which forward
/// their entries as they are read until the GC thread has forwarded them
/// all.
///
/// A binding hook that panics does not stop the others: every root that
/// can be forwarded is, and the first error is returned.
pub(super) fn forward_roots<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    set: &RelocationSet,
    tables: RootTableVisit,
) -> Result<(), GcError> {
    let alloc = &heap.gc_alloc;
    let roots = update_roots(binding, heap, tables, |r| {
        let to = set.forward_in_pause(r, alloc);
        (to != r).then_some(to)
    });
    let weak = forward_weak_refs(binding, heap, &SetForwarder { set, alloc }, tables);
    roots.and(weak)
}

/// What Concurrent Relocate did.
pub(super) struct Relocated {
    /// Objects and bytes the workers copied (the mutators' copies are
    /// counted in the set).
    pub(super) objects: u64,
    pub(super) bytes: u64,
    pub(super) summary: PhaseSummary,
}

/// The work of Concurrent Relocate, claimed one job at a time by the
/// workers: each root table's entries to forward (the objects they name
/// relocated by whoever reaches them first), then the set's pages, each
/// worker its node's.
struct Jobs<'j> {
    tables: &'j [TableJob<'j>],
    next_table: AtomicUsize,
    /// The set's pages by node, and the next of each list to claim.
    nodes: Vec<(NodeId, Vec<usize>, AtomicUsize)>,
}

impl Jobs<'_> {
    /// The next table to forward, if any is left.
    fn table(&self) -> Option<&TableJob<'_>> {
        self.tables
            .get(self.next_table.fetch_add(1, Ordering::Relaxed))
    }

    /// The next page to relocate of list `home` (an index into `nodes`);
    /// with [`Claim::AnyNode`], another list's once `home`'s are all
    /// claimed.
    fn page(&self, home: usize, claim: Claim) -> Option<usize> {
        let n = self.nodes.len();
        let lists = match claim {
            Claim::OwnNode => 1,
            Claim::AnyNode => n,
        };
        (0..lists).find_map(|k| {
            let (_, pages, next) = self.nodes.get((home + k) % n.max(1))?;
            pages.get(next.fetch_add(1, Ordering::Relaxed)).copied()
        })
    }

    /// Whether every page was claimed (not necessarily relocated yet).
    fn all_claimed(&self) -> bool {
        self.nodes
            .iter()
            .all(|(_, pages, next)| next.load(Ordering::Relaxed) >= pages.len())
    }
}

/// Which pages a worker of Concurrent Relocate claims.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Claim {
    /// Its node's only: every node has a worker of its own, bound to it
    /// during the phase where NUMA affinity is on.
    OwnNode,
    /// Its node's, then any other's: fewer workers than nodes.
    AnyNode,
}

/// Concurrent Relocate: the workers forward the root tables visited after
/// the pauses (`tables`, one job per table) and copy what nobody has
/// copied yet of every page of the set, each worker its node's pages,
/// claiming one job at a time, on as many workers as `allowed()` says at
/// each moment (at least one; the others wait and join when it allows
/// more, as in Concurrent Mark; a worker whose node's pages are all
/// claimed leaves its place to another node's). It
/// always completes: every live object of the set is forwarded when it
/// returns (a copy that finds no memory forwards the object to itself),
/// which the next marking relies on, and every table is forwarded. Should
/// the workers fail, the calling thread does what is left.
pub(super) fn relocate(
    heap: &GcHeap,
    workers: &mut GcWorkers,
    set: &RelocationSet,
    tables: &[TableJob<'_>],
    allowed: &(dyn Fn() -> usize + Sync),
) -> Relocated {
    let alloc = &heap.gc_alloc;
    let mut by_node: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (node, pi) in set.pages() {
        by_node.entry(node).or_default().push(pi);
    }
    let jobs = Jobs {
        tables,
        next_table: AtomicUsize::new(0),
        nodes: by_node
            .into_iter()
            .map(|(node, pages)| (node, pages, AtomicUsize::new(0)))
            .collect(),
    };
    let nodes = jobs.nodes.len().max(1);
    let claim = match workers.count() >= nodes {
        true => Claim::OwnNode,
        false => Claim::AnyNode,
    };
    let crew = Crew::default();
    // One item per worker; item `i` works on node list `i % nodes`.
    let items = (0..workers.count())
        .map(|i| {
            let node = jobs
                .nodes
                .get(i % nodes)
                .map_or(heap.partitions[0], |n| n.0);
            (node, i)
        })
        .collect();
    let run = workers.run(items, |i: usize| {
        let _inside = in_collection::enter(heap);
        let (mut objects, mut bytes) = (0u64, 0u64);
        while let Some(shift) = crew.join(allowed) {
            if let Some(forward) = jobs.table() {
                forward();
            } else if let Some(pi) = jobs.page(i % nodes, claim) {
                let (o, b) = set.relocate_page(pi, alloc);
                objects += o;
                bytes += b;
            } else {
                // This worker's node is done; the phase once every node is
                // (whoever claimed the last page sees it here).
                if jobs.all_claimed() {
                    shift.nothing_left();
                }
                break;
            }
        }
        (objects, bytes)
    });
    match run {
        Ok((done, summary)) => Relocated {
            objects: done.iter().map(|d| d.0).sum(),
            bytes: done.iter().map(|d| d.1).sum(),
            summary,
        },
        Err(_) => {
            // A page or table a worker began and did not finish is done
            // here: what it copied is forwarded, the rest is copied now.
            let _inside = in_collection::enter(heap);
            for forward in tables {
                forward();
            }
            let (mut objects, mut bytes) = (0, 0);
            for (_, pi) in set.pages() {
                let (o, b) = set.relocate_page(pi, alloc);
                objects += o;
                bytes += b;
            }
            Relocated {
                objects,
                bytes,
                summary: PhaseSummary::default(),
            }
        }
    }
}
