//! The barriers: the mutators' fast paths beside the collector's side they
//! feed, one small interface per collector.
//!
//! | barrier | mutator's side | collector's side | collector |
//! |---|---|---|---|
//! | store: remembered set | [`StoreBarrier`] | [`RememberedSet`] (slots, [`OldPages`](crate::gc::core::meta::OldPages)) | stop-the-world, with generations |
//! | store: snapshot at the beginning | [`ConcurrentBarrier::before_overwrite`], [`ConcurrentBarrier::keep_alive`] | [`ConcurrentBarriers`] ([`satb`] logs, new pages) | concurrent |
//! | load: forward and heal | [`MutatorBarriers::may_be_relocating`], [`ConcurrentBarrier::load_slow`] | [`ConcurrentBarriers`] (installed set, [`relocation_index`]) | concurrent (moving) |
//!
//! A collector declares the barriers it needs in its
//! [`Constraints`](crate::gc::core::collector::Constraints); the runtime
//! makes their collector's side ([`BarrierSet`]) from them, and each
//! mutator its own side ([`MutatorBarriers`]). The public entry points are
//! the [`Mutator`](crate::Mutator)'s (`load_ref`, `store_ref`,
//! `before_overwrite`, `keep_alive`, `resolve`), each one call into here.

mod concurrent_barriers;
pub(crate) mod relocation_index;
mod remembered_set;
pub(crate) mod satb;

pub(crate) use concurrent_barriers::{
    BarrierPhase, ConcurrentBarrier, ConcurrentBarriers, Installed, SetOwner,
};
pub(crate) use remembered_set::{RememberedSet, StoreBarrier, sorted};

use crate::gc::core::collector::NeededBarriers;
use crate::gc::core::tlab::Tlab;
use relocation_index::RelocationView;
use std::sync::Arc;

/// The collector's side of every barrier a runtime's collector needs.
#[derive(Default)]
pub(crate) struct BarrierSet {
    /// The generational store barrier's remembered set.
    pub(crate) remembered: Option<Arc<RememberedSet>>,
    /// The concurrent collector's snapshot and load barriers.
    pub(crate) concurrent: Option<Arc<ConcurrentBarriers>>,
}

/// The heap a barrier set is made for: its reservation and page sizes.
#[derive(Copy, Clone, Debug)]
pub(crate) struct BarrierHeap {
    /// The heap reservation's start and length.
    pub(crate) base: usize,
    pub(crate) len: usize,
    /// The smallest page size (the unit of the table of old pages).
    pub(crate) small_page: usize,
    /// The largest medium object (a larger one lies in a large page).
    pub(crate) medium_object_max: usize,
}

impl BarrierSet {
    /// The collector's side of the barriers in `needed`, for `heap`.
    pub(crate) fn new(needed: NeededBarriers, heap: BarrierHeap) -> BarrierSet {
        BarrierSet {
            remembered: needed.remembered_set.then(|| {
                Arc::new(RememberedSet::new(
                    heap.base,
                    heap.len,
                    heap.small_page,
                    heap.medium_object_max,
                ))
            }),
            concurrent: (needed.snapshot || needed.load).then(|| {
                Arc::new(ConcurrentBarriers::new(
                    heap.base,
                    heap.len,
                    hotmem_page::GRANULE_SIZE,
                ))
            }),
        }
    }

    /// A new mutator's side of these barriers; `tlab` is its allocation
    /// buffer.
    pub(crate) fn for_mutator(&self, tlab: &Arc<Tlab>) -> MutatorBarriers {
        MutatorBarriers {
            store: self.remembered.as_ref().map(StoreBarrier::new),
            concurrent: (self.concurrent.as_deref())
                .map(|c| ConcurrentBarrier::new(c, tlab.clone())),
            relocating: self
                .concurrent
                .as_deref()
                .map_or_else(RelocationView::none, |c| c.index.view()),
        }
    }
}

/// One mutator's side of its runtime's barriers.
pub(crate) struct MutatorBarriers {
    /// The generational store barrier (with generations only).
    pub(crate) store: Option<StoreBarrier>,
    /// The concurrent collector's barriers (with it only).
    pub(crate) concurrent: Option<ConcurrentBarrier>,
    /// The load barrier's test, kept outside the `Option` above so that
    /// the fast path is the lookup alone: the concurrent collector's
    /// relocation index, or a view in which no address is relocating
    /// (every other collector). Only the slow path, reached when the
    /// lookup finds a page, tests which barriers the runtime has.
    relocating: RelocationView,
}

impl MutatorBarriers {
    /// The load barrier's test: whether `addr` may lie in the installed
    /// relocation set (one table lookup; false without a concurrent
    /// moving collector).
    #[inline]
    pub(crate) fn may_be_relocating(&self, addr: usize) -> bool {
        // SAFETY: the view is of the relocation index of the runtime the
        // mutator owning these barriers keeps alive (it holds a
        // `Runtime`), or covers no address and reads nothing.
        unsafe { self.relocating.lookup(addr) != 0 }
    }
}
