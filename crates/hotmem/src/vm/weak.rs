//! What the binding's weak-reference hooks receive: after marking, a view
//! that says which objects are live and keeps more of them alive
//! ([`WeakRefs`]); after relocation, where each surviving object went
//! ([`WeakForwarding`]). The runtime's own weak references are in
//! `weak/`; the phase that processes both is
//! `gc/core/weak_processing.rs`, whose marker and forwarding stand behind
//! [`WeakTracer`] and [`Forwarder`].

use super::ObjectReference;
use crate::gc::core::generations::CollectionKind;

/// What [`Binding::process_weak_refs`](super::Binding::process_weak_refs)
/// answers: whether it wants to be called again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WeakPass {
    /// Finished: every dead weak reference of the binding is cleared.
    Done,
    /// Call again once what this pass retained is traced (ephemeron
    /// values, say, that may make further keys live).
    Again,
}

/// The collector's side of [`WeakRefs`].
pub(crate) trait WeakTracer {
    fn is_live(&self, obj: ObjectReference) -> bool;
    fn retain(&mut self, obj: ObjectReference) -> bool;
    fn kind(&self) -> CollectionKind;
}

/// The collector's side of [`WeakForwarding`].
pub(crate) trait Forwarder {
    fn forwarded(&self, obj: ObjectReference) -> ObjectReference;
}

/// Given to [`Binding::process_weak_refs`](super::Binding::process_weak_refs)
/// after the strong closure: asks whether an object is live and keeps more
/// objects alive.
pub struct WeakRefs<'a> {
    tracer: &'a mut dyn WeakTracer,
    pass: u32,
}

impl<'a> WeakRefs<'a> {
    pub(crate) fn new(tracer: &'a mut dyn WeakTracer, pass: u32) -> Self {
        WeakRefs { tracer, pass }
    }

    /// Whether `obj` is live: reachable from the strong roots, or retained
    /// in this collection. In a young collection every object outside the
    /// young pages counts as live (it is not examined). A value that is not
    /// a reference to an object of the heap is not live.
    #[inline]
    pub fn is_live(&self, obj: ObjectReference) -> bool {
        self.tracer.is_live(obj)
    }

    /// Keeps `obj` alive, with everything it reaches: the collector traces
    /// it on the GC workers before the next call. True if `obj` was not
    /// live before. A value that is not a reference to an object fails the
    /// collection with [`GcError::InvalidReference`](crate::GcError::InvalidReference).
    #[inline]
    pub fn retain(&mut self, obj: ObjectReference) -> bool {
        self.tracer.retain(obj)
    }

    /// Young or full: in a young collection only young objects can be
    /// dead, so a binding may skip weak references it knows to be old.
    pub fn kind(&self) -> CollectionKind {
        self.tracer.kind()
    }

    /// How many times the hook was called before in this collection.
    pub fn pass(&self) -> u32 {
        self.pass
    }
}

/// Given to [`Binding::forward_weak_refs`](super::Binding::forward_weak_refs)
/// after relocation: where each live object is now.
pub struct WeakForwarding<'a> {
    forwarder: &'a dyn Forwarder,
}

impl<'a> WeakForwarding<'a> {
    pub(crate) fn new(forwarder: &'a dyn Forwarder) -> Self {
        WeakForwarding { forwarder }
    }

    /// The current address of the live object `obj` (itself if it did not
    /// move). `obj` must be a weak referent the binding kept in
    /// [`Binding::process_weak_refs`](super::Binding::process_weak_refs) (live);
    /// a dead one is counted, keeps its page from being freed, and fails
    /// the collection with
    /// [`GcError::InconsistentBinding`](crate::GcError::InconsistentBinding).
    #[inline]
    pub fn forwarded(&self, obj: ObjectReference) -> ObjectReference {
        self.forwarder.forwarded(obj)
    }
}
