//! What an embedder implements: the [`Binding`] that describes its objects
//! and roots, the [`Slot`]s that hold references, and the
//! [`ObjectReference`] that names an object.
//!
//! The embedder describes its objects; the runtime traces, moves and
//! updates them. A [`Binding`] says how big an object is
//! ([`Binding::object_size`]), which of its words hold references
//! ([`Binding::scan_object`], reporting each one as a [`Slot`] to a
//! [`SlotVisitor`]), and where the roots are ([`Binding::scan_global_roots`],
//! [`Binding::scan_mutator_roots`]). Everything on a per-object path is
//! generic (static dispatch): the runtime monomorphizes its collector for
//! the binding type once, in
//! [`RuntimeBuilder::binding`](crate::RuntimeBuilder::binding), and calls it
//! through one virtual call per collection.
//!
//! # What a collection does with the binding
//! A collection runs at a safepoint (every mutator stopped at a poll or in
//! native code):
//! 1. **roots**: the runtime visits the global roots, every attached
//!    mutator's roots, its own [`Handle`](crate::Handle)s and the pinned
//!    objects;
//! 2. **mark**: GC workers trace from the roots in parallel (work stealing),
//!    calling `object_size` and `scan_object` once for every reachable
//!    object, and record each object in its page's live map;
//! 3. **relocate**: sparse pages (live bytes below the fragmentation limit,
//!    no pinned object) are evacuated on workers bound to the page's NUMA
//!    node; each move is recorded in the page's forwarding table;
//! 4. **update**: the runtime visits the slots of every live object and
//!    every root again and stores the new address into each slot whose
//!    target moved ([`Slot::store`]);
//! 5. empty and evacuated pages are freed.
//!
//! # Where concurrency attaches
//! Today every phase runs with the mutators stopped, and the barriers
//! ([`Mutator::load_ref`](crate::Mutator::load_ref),
//! [`Mutator::store_ref`](crate::Mutator::store_ref)) are no-ops. ZGC-style
//! concurrent marking attaches to the store barrier (SATB: the overwritten
//! value is pushed to the marking queues while marking is active), and
//! concurrent relocation to the load barrier (a reference into a page being
//! evacuated is looked up in, or inserted into, the page's forwarding
//! table with the same compare-and-swap the workers use, then healed by
//! storing the new address back into the slot). Neither changes this trait:
//! the embedder keeps describing objects and slots.

mod binding;
mod object_reference;
mod slot;
mod weak;

pub use binding::Binding;
pub use object_reference::ObjectReference;
pub use slot::{SimpleSlot, Slot, SlotVisitor};
pub(crate) use weak::{Forwarder, WeakTracer};
pub use weak::{WeakForwarding, WeakPass, WeakRefs};
