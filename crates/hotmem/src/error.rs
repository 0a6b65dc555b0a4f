//! The runtime's errors, one enum per operation.

use crate::vm::ObjectReference;
use hotmem_os::Address;
use serde::Serialize;
use std::fmt;
use thiserror::Error;

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused.
///
/// The same variants exist with and without the `numa` feature (feature
/// unification must not change a public type): the NUMA failures carry a
/// [`NumaError`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A setting is out of range; the message says which and why.
    #[error("bad runtime configuration: {0}")]
    Config(String),
    /// The heap could not be created.
    #[error("cannot create the heap: {0}")]
    Heap(#[source] hotmem_page::HeapError),
    /// A metaspace could not be created.
    #[error("cannot create metaspace: {0}")]
    Metaspace(#[source] hotmem_chunk::SpaceError),
    /// The NUMA topology could not be built (an invalid synthetic
    /// description, or hwloc failed).
    #[error("cannot build the NUMA topology: {0}")]
    Topology(#[source] NumaError),
    /// The GC worker pool could not be started.
    #[error("cannot start the GC workers: {0}")]
    Workers(#[source] NumaError),
    /// A synthetic topology was asked for, but the crate was built without
    /// its `numa` feature.
    #[error("a NUMA topology was asked for, but hotmem was built without its `numa` feature")]
    NumaDisabled,
}

/// A failure of the NUMA side (`hotmem-numa`'s topology or worker pool
/// error, as its [`source`](std::error::Error::source)). A type of its own
/// so that [`BuildError`] is the same with and without the `numa` feature.
#[derive(Debug, Error)]
#[error("{source}")]
pub struct NumaError {
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl NumaError {
    #[cfg(feature = "numa")]
    pub(crate) fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        NumaError {
            source: Box::new(source),
        }
    }

    /// The underlying error, to downcast to `hotmem_numa::TopologyError`
    /// or `hotmem_numa::PoolError`.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

/// [`Runtime::barrier_set`](crate::Runtime::barrier_set) was asked for a
/// set the runtime's collector does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the collector takes the {needed:?} barriers, not the {asked:?} ones")]
pub struct BarrierSetError {
    /// The set asked for.
    pub asked: crate::BarrierKind,
    /// The set the runtime's collector needs.
    pub needed: crate::BarrierKind,
}

/// Why [`Runtime::attach_mutator`](crate::Runtime::attach_mutator) refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The safepoint coordinator refused the registration (for example the
    /// thread is already attached, or it owns the safepoint in progress).
    #[error("cannot attach the thread: {0}")]
    Register(#[source] hotmem_safepoint::RegisterError),
    /// Called from a binding callback (or a `run_at_safepoint`
    /// operation) of this runtime: the new mutator would wait for the
    /// collection that is waiting for the callback.
    #[error(
        "cannot attach a mutator from inside a collection or safepoint operation of the same runtime"
    )]
    InsideCollection,
}

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The size cannot be allocated at all (zero, or too large for any page).
    #[error("cannot allocate: {0}")]
    Layout(hotmem_page::LayoutError),
    /// The heap stayed full after a collection: the live set does not fit.
    /// The runtime stays usable; allocation succeeds again once enough
    /// objects have died.
    #[error(
        "out of memory: {size} bytes requested, {used} of {max_capacity} heap bytes live after a collection"
    )]
    OutOfMemory {
        /// The size asked for.
        size: usize,
        /// Bytes in use after the collection.
        used: usize,
        /// The heap's maximum capacity.
        max_capacity: usize,
    },
    /// Any other failure of the page allocator.
    #[error("allocation failed: {0}")]
    Heap(hotmem_page::AllocError),
    /// The heap is full and the allocation was made from a binding
    /// callback, inside a collection of the same runtime: it cannot collect
    /// to make room.
    #[error(
        "the heap is full and the allocation runs inside a collection, which cannot collect again"
    )]
    InsideCollection,
    /// The heap is full and no collection can make room: the runtime is
    /// poisoned ([`GcError::Poisoned`]), or waiting for one would close a
    /// deadlock through another runtime ([`GcError::Safepoint`] with
    /// `ManagedElsewhere`). Nothing was allocated.
    #[error("the heap is full and cannot be collected: {0}")]
    Collection(GcError),
}

/// Why a value the binding reported as a reference is not one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Error)]
#[non_exhaustive]
pub enum BadReference {
    /// Not word-aligned.
    #[error("is not word-aligned")]
    Misaligned,
    /// Outside the heap's address range.
    #[error("lies outside the heap")]
    OutsideHeap,
    /// Inside the heap's range but in no allocated page (freed memory).
    #[error("points into free heap memory (no allocated page)")]
    FreeMemory,
    /// In an allocated page, past the part of it that holds objects.
    #[error("points past the allocated part of its page")]
    PastTop,
    /// Inside a large page but not at its one object's start.
    #[error("points into the middle of a large object (not its start)")]
    NotAnObjectStart,
    /// Into a page the last concurrent cycle evacuated, at an object it did
    /// not relocate: one its marking did not find (a slot the binding did
    /// not report, or a reference kept where no root holds it).
    #[error("points at an object the last cycle found dead, in a page it evacuated")]
    NotRelocated,
}

/// Why a collection failed. Nothing that is still referenced is freed; the
/// heap is left consistent, or, for a failure half-way through rewriting
/// references, the runtime is poisoned ([`GcError::Poisoned`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GcError {
    /// The runtime was built without a [`Binding`](crate::Binding), so it
    /// cannot tell live objects from dead ones.
    #[error("no binding: the runtime cannot collect")]
    NoBinding,
    /// A root or a slot of a live object holds a value that is not a
    /// reference to an object. Found during marking: nothing was moved or
    /// freed.
    #[error("invalid reference {value:#x} {}: it {reason}", SlotOf { slot: *slot, holder: *holder })]
    InvalidReference {
        /// The value the slot holds.
        value: usize,
        /// Where the slot is (`None` for a [`Handle`](crate::Handle) or a pin).
        slot: Option<Address>,
        /// The object the slot belongs to (`None` for a root).
        holder: Option<ObjectReference>,
        /// What is wrong with it.
        reason: BadReference,
    },
    /// [`Binding::object_size`](crate::Binding::object_size) gave a size of
    /// 0, or one that runs past the used part of the object's page. Found
    /// during marking: nothing was moved or freed.
    #[error(
        "object {object} reports a size of {size} bytes, but its page holds {room} bytes from it"
    )]
    InvalidObjectSize {
        /// The object.
        object: ObjectReference,
        /// The size the binding gave.
        size: usize,
        /// Bytes from the object to the end of its page's used part.
        room: usize,
    },
    /// Two marked objects overlap: a reference points into the middle of
    /// another live object (or a size is too large). Found before any
    /// reference was updated: nothing was moved or freed.
    #[error(
        "object {second} starts inside object {first} ({first_size} bytes): a reference into the middle of an object"
    )]
    OverlappingObjects {
        /// The first object.
        first: ObjectReference,
        /// Its size.
        first_size: usize,
        /// The second one, starting inside the first.
        second: ObjectReference,
    },
    /// During the update, the binding reported slots (or a handle held
    /// values) that marking had not seen, pointing into evacuated pages
    /// without a forwarding entry: `scan_object` did not report the same
    /// slots twice, or a handle was set to a reference that was not
    /// current. The pages they point into were kept, not freed.
    #[error(
        "{slots} slot(s) found during the update were not seen by marking (scan_object must report the same slots each time); their pages were kept"
    )]
    InconsistentBinding {
        /// How many such slots.
        slots: u64,
    },
    /// The safepoint could not begin (for example, the calling thread is
    /// already inside one).
    #[error("cannot stop the mutators: {0}")]
    Safepoint(hotmem_safepoint::BeginError),
    /// A relocation task panicked (a bug in the object model); the message
    /// of the panic.
    #[error("a GC worker panicked: {0}")]
    WorkerPanicked(String),
    /// A [`Binding`](crate::Binding) callback panicked; the message of the
    /// panic. Before anything moved, the heap is as it was; if it was
    /// while references were rewritten (the update, Pause Relocate
    /// Start), the runtime is poisoned ([`GcError::Poisoned`]) and both
    /// copies of every moved object are kept.
    #[error("the binding panicked: {0}")]
    ObjectModelPanicked(String),
    /// Called from a [`Binding`](crate::Binding) callback or a
    /// `run_at_safepoint` operation of the same runtime, on the thread that
    /// holds its collection: it would wait for itself.
    #[error("called from inside a collection or safepoint operation of the same runtime")]
    InsideCollection,
    /// The heap refused to free pages the collection found (a bug in
    /// hotmem); the pages stay allocated and the heap consistent.
    #[error("the heap refused to free a page: {0}")]
    Heap(hotmem_page::FreeError),
    /// [`Binding::process_weak_refs`](crate::Binding::process_weak_refs)
    /// asked for another pass this many times without finishing (a binding
    /// bug). Found before anything moved: nothing was moved or freed.
    #[error("the binding's weak-reference hook asked for {passes} passes without finishing")]
    WeakRefsDidNotConverge {
        /// Calls made.
        passes: u32,
    },
    /// A mutator has a [`ShadowStack`](crate::ShadowStack), but the
    /// binding cannot decode its words
    /// ([`Binding::slot_at`](crate::Binding::slot_at) answered `None`).
    /// Found before anything moved.
    #[error("a shadow stack's words cannot be scanned: the binding's slot_at gives no slot")]
    ShadowStackWithoutSlotAt,
    /// A [`RootTable`](crate::RootTable) the binding reports is in a
    /// concurrent cycle of another runtime (one table reported by the
    /// bindings of two runtimes). Found in Pause Mark Start, before
    /// anything was marked.
    #[error("a root table is in another runtime's concurrent cycle")]
    RootTableInUse,
    /// [`Binding::slot_at`](crate::Binding::slot_at) rebuilt one
    /// remembered slot and answered `None` for another: a binding must
    /// rebuild every slot or none. A concurrent young cycle asks for one
    /// in its pause (a binding that answers `None` gets full cycles) and
    /// for the rest after it; it fails before anything moved.
    #[error("the binding's slot_at rebuilt some remembered slots and not others")]
    SlotAtPartial,
    /// An earlier collection failed after it had begun to rewrite
    /// references to moved objects (a binding callback panicked while
    /// roots or slots were updated): some name an object's new copy and
    /// some its old one. The runtime is poisoned, as a `std::sync::Mutex`
    /// whose holder panicked: no collection runs again and no page is
    /// freed, so both copies stay valid memory; `cause` is that failure.
    #[error(
        "the runtime is poisoned: an earlier collection failed while it updated references ({cause}); no collection runs again"
    )]
    Poisoned {
        /// The failure that poisoned the runtime.
        cause: Box<GcError>,
    },
}

/// Where an invalid reference was found, as [`GcError::InvalidReference`]
/// words it: "in slot 0x.. of object 0x..", "in a handle or pin (a root)".
struct SlotOf {
    slot: Option<Address>,
    holder: Option<ObjectReference>,
}

impl fmt::Display for SlotOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.slot {
            Some(s) => write!(f, "in slot {s} ")?,
            None => f.write_str("in a handle or pin ")?,
        }
        match self.holder {
            Some(h) => write!(f, "of object {h}"),
            None => f.write_str("(a root)"),
        }
    }
}

/// Why a safepoint or handshake requested through
/// [`Safepoints`](crate::Safepoints) was refused. Nothing was started.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SafepointRequestError {
    /// Requested from a binding callback (on the collecting thread or a GC
    /// worker) or a `run_at_safepoint` operation of this runtime: it would
    /// wait for the collection that is waiting for the caller.
    #[error("cannot request a safepoint or handshake from inside a collection of the same runtime")]
    InsideCollection,
    /// The coordinator refused to begin the safepoint.
    #[error("cannot begin the safepoint: {0}")]
    Begin(#[source] hotmem_safepoint::BeginError),
    /// The coordinator refused the handshake, or an operation panicked.
    #[error("handshake refused: {0}")]
    Handshake(#[source] hotmem_safepoint::HandshakeError),
}

/// Why [`Runtime::register_finalizer`](crate::Runtime::register_finalizer)
/// refused. Nothing was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FinalizerError {
    /// The address is not in the heap (or not word-aligned): it cannot be
    /// an object of this runtime.
    #[error("{0} is not in the heap: only heap objects can be registered for finalization")]
    NotInHeap(ObjectReference),
    /// The object is registered already and its finalizer has not run:
    /// each registration runs once.
    #[error("{0} is registered for finalization already")]
    AlreadyRegistered(ObjectReference),
}

/// Why a [`WeakSet`](crate::WeakSet) operation refused. Nothing was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WeakSetError {
    /// The address is not in the heap: it cannot be an object of this
    /// runtime.
    #[error("{0} is not in the heap: only heap objects can be put in a weak set")]
    NotInHeap(ObjectReference),
    /// Called from a binding callback, while a collection of the set's
    /// runtime decides what lives.
    #[error("a weak set cannot be used from inside a collection of its runtime")]
    InsideCollection,
    /// The mutator is another runtime's.
    #[error("the mutator is not one of the weak set's runtime")]
    OtherRuntime,
}

/// Why [`Mutator::new_shadow_stack`](crate::Mutator::new_shadow_stack),
/// [`Mutator::new_growing_shadow_stack`](crate::Mutator::new_growing_shadow_stack)
/// or [`ShadowStack::grow`](crate::ShadowStack::grow) refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ShadowStackError {
    /// Zero words, or more than the address space holds.
    #[error("a shadow stack of {0} words cannot be made")]
    Size(usize),
    /// The memory could not be reserved or committed.
    #[error("cannot map the shadow stack: {0}")]
    Memory(String),
    /// [`ShadowStack::grow`](crate::ShadowStack::grow) was asked for more
    /// words than the stack reserved.
    #[error("a shadow stack of at most {max} words cannot hold {words}")]
    Full {
        /// The words asked for.
        words: usize,
        /// The words reserved.
        max: usize,
    },
}
