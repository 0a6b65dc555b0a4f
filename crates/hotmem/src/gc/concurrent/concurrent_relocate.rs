//! Relocation in a concurrent cycle: Pause Relocate Start forwards the
//! roots, then Concurrent Relocate copies the rest of the relocation set
//! on the GC workers while the mutators run (and relocate what they load
//! first, through the load barrier).

use crate::GcError;
use crate::gc::core::heap::{GcAllocator, GcHeap};
use crate::gc::core::in_collection;
use crate::gc::core::relocation_set::RelocationSet;
use crate::gc::core::root_scan::update_roots;
use crate::gc::core::weak_processing::forward_weak_refs;
use crate::gc::core::workers::{GcWorkers, PhaseSummary};
use crate::vm::{Binding, Forwarder, ObjectReference};
use hotmem_page::NodeId;
use std::collections::BTreeMap;

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

/// Pause Relocate Start, with the set installed: every root into the set
/// (the binding's roots, shadow stacks, handles, the finalization queue)
/// and every weak reference the runtime or the binding keeps gets its
/// object's new address, the object relocated now if needed. From here on
/// a mutator holds no reference into the set: it reaches objects through
/// the roots and through the load barrier, which forwards.
///
/// A binding hook that panics does not stop the others: every root that
/// can be forwarded is, and the first error is returned.
pub(super) fn forward_roots<B: Binding>(
    binding: &B,
    heap: &GcHeap,
    set: &RelocationSet,
) -> Result<(), GcError> {
    let alloc = &heap.gc_alloc;
    let roots = update_roots(binding, heap, |r| {
        let to = set.forward_in_pause(r, alloc);
        (to != r).then_some(to)
    });
    let weak = forward_weak_refs(binding, heap, &SetForwarder { set, alloc });
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

/// Concurrent Relocate: `count` workers copy what nobody has copied yet of
/// every page of the set. It always completes: every live object of the
/// set is forwarded when it returns (a copy that finds no memory forwards
/// the object to itself), which the next marking relies on. Should the
/// workers fail, the calling thread relocates what is left.
pub(super) fn relocate(
    heap: &GcHeap,
    workers: &mut GcWorkers,
    set: &RelocationSet,
    count: usize,
) -> Relocated {
    let alloc = &heap.gc_alloc;
    let items = buckets(set, count);
    let run = workers.run(items, |pages: Vec<usize>| {
        let _inside = in_collection::enter(heap);
        pages.iter().fold((0, 0), |(o, b), &pi| {
            let (objects, bytes) = set.relocate_page(pi, alloc);
            (o + objects, b + bytes)
        })
    });
    match run {
        Ok((done, summary)) => Relocated {
            objects: done.iter().map(|d| d.0).sum(),
            bytes: done.iter().map(|d| d.1).sum(),
            summary,
        },
        Err(_) => {
            let _inside = in_collection::enter(heap);
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

/// The set's pages in `count` lists or so, each of one node's pages, for
/// a worker bound to that node: a node's pages are split into
/// `count / nodes` lists (at least one).
fn buckets(set: &RelocationSet, count: usize) -> Vec<(NodeId, Vec<usize>)> {
    let mut by_node: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (node, pi) in set.pages() {
        by_node.entry(node).or_default().push(pi);
    }
    let per_node = (count / by_node.len().max(1)).max(1);
    let mut items = Vec::new();
    for (node, pages) in by_node {
        let mut lists = vec![Vec::new(); per_node.min(pages.len())];
        let n = lists.len();
        for (i, pi) in pages.into_iter().enumerate() {
            lists[i % n].push(pi);
        }
        items.extend(lists.into_iter().map(|l| (node, l)));
    }
    items
}
