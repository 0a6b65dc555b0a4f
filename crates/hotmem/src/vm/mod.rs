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
//! # The barriers
//! The embedder's side of the collectors beyond this trait is the
//! mutator's barriers. With the stop-the-world collector the load barrier
//! ([`Mutator::load_ref`](crate::Mutator::load_ref)) is a plain load and
//! the store barrier ([`Mutator::store_ref`](crate::Mutator::store_ref))
//! feeds the young generation's remembered set. With the concurrent
//! collector ([`CollectorMode::Concurrent`](crate::CollectorMode)) the
//! store barrier also logs the overwritten reference while marking runs
//! (SATB), and the load barrier forwards a reference into a page being
//! evacuated (relocating the object if no worker has) and heals the slot
//! with a compare-and-swap. Neither changes this trait: the embedder keeps
//! describing objects and slots.

mod binding;
mod object_reference;
mod slot;
mod weak;

pub use binding::Binding;
pub use object_reference::ObjectReference;
pub use slot::{SimpleSlot, Slot, SlotVisitor};
pub(crate) use weak::{Forwarder, WeakTracer};
pub use weak::{WeakForwarding, WeakPass, WeakRefs};
