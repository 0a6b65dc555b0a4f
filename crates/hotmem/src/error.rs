//! The runtime's errors.

use crate::binding::ObjectReference;
use crate::heapmap::BadReference;
use hotmem_os::Address;
use std::fmt;

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused.
///
/// The same variants exist with and without the `numa` feature (feature
/// unification must not change a public type): the NUMA failures carry a
/// [`NumaError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A setting is out of range; the message says which and why.
    Config(String),
    /// The heap could not be created.
    Heap(hotmem_page::HeapError),
    /// A metaspace could not be created.
    Metaspace(hotmem_chunk::SpaceError),
    /// The NUMA topology could not be built (an invalid synthetic
    /// description, or hwloc failed).
    Topology(NumaError),
    /// The GC worker pool could not be started.
    Workers(NumaError),
    /// A synthetic topology was asked for, but the crate was built without
    /// its `numa` feature.
    NumaDisabled,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(why) => write!(f, "bad runtime configuration: {why}"),
            BuildError::Heap(e) => write!(f, "cannot create the heap: {e}"),
            BuildError::Metaspace(e) => write!(f, "cannot create metaspace: {e}"),
            BuildError::Topology(e) => write!(f, "cannot build the NUMA topology: {e}"),
            BuildError::Workers(e) => write!(f, "cannot start the GC workers: {e}"),
            BuildError::NumaDisabled => f.write_str(
                "a NUMA topology was asked for, but hotmem was built without its `numa` feature",
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Heap(e) => Some(e),
            BuildError::Metaspace(e) => Some(e),
            BuildError::Topology(e) | BuildError::Workers(e) => Some(e),
            _ => None,
        }
    }
}

/// A failure of the NUMA side (`hotmem-numa`'s topology or worker pool
/// error, as its [`source`](std::error::Error::source)). A type of its own
/// so that [`BuildError`] is the same with and without the `numa` feature.
#[derive(Debug)]
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

impl fmt::Display for NumaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for NumaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Why [`Runtime::attach_mutator`](crate::Runtime::attach_mutator) refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttachError {
    /// The safepoint coordinator refused the registration (for example the
    /// thread is already attached, or it owns the safepoint in progress).
    Register(hotmem_safepoint::RegisterError),
    /// Called from a binding callback (or a `run_at_safepoint`
    /// operation) of this runtime: the new mutator would wait for the
    /// collection that is waiting for the callback.
    InsideCollection,
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::Register(e) => write!(f, "cannot attach the thread: {e}"),
            AttachError::InsideCollection => f.write_str(
                "cannot attach a mutator from inside a collection or safepoint operation of the same runtime",
            ),
        }
    }
}

impl std::error::Error for AttachError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AttachError::Register(e) => Some(e),
            AttachError::InsideCollection => None,
        }
    }
}

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// The size cannot be allocated at all (zero, or too large for any page).
    Layout(hotmem_page::LayoutError),
    /// The heap stayed full after a collection: the live set does not fit.
    /// The runtime stays usable; allocation succeeds again once enough
    /// objects have died.
    OutOfMemory {
        /// The size asked for.
        size: usize,
        /// Bytes in use after the collection.
        used: usize,
        /// The heap's maximum capacity.
        max_capacity: usize,
    },
    /// Any other failure of the page allocator.
    Heap(hotmem_page::AllocError),
    /// The heap is full and the allocation was made from a binding
    /// callback, inside a collection of the same runtime: it cannot collect
    /// to make room.
    InsideCollection,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::Layout(e) => write!(f, "cannot allocate: {e}"),
            AllocError::OutOfMemory {
                size,
                used,
                max_capacity,
            } => write!(
                f,
                "out of memory: {size} bytes requested, {used} of {max_capacity} heap bytes live after a collection"
            ),
            AllocError::Heap(e) => write!(f, "allocation failed: {e}"),
            AllocError::InsideCollection => f.write_str(
                "the heap is full and the allocation runs inside a collection, which cannot collect again",
            ),
        }
    }
}

impl std::error::Error for AllocError {}

/// Why a collection failed. The heap is left consistent: nothing was freed
/// that is still referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GcError {
    /// The runtime was built without a [`Binding`](crate::Binding), so it
    /// cannot tell live objects from dead ones.
    NoBinding,
    /// A root or a slot of a live object holds a value that is not a
    /// reference to an object. Found during marking: nothing was moved or
    /// freed.
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
    /// slots twice, or a handle was changed by a running thread. The pages
    /// they point into were kept, not freed.
    InconsistentBinding {
        /// How many such slots.
        slots: u64,
    },
    /// The safepoint could not begin (for example, the calling thread is
    /// already inside one).
    Safepoint(hotmem_safepoint::BeginError),
    /// A relocation task panicked (a bug in the object model); the message
    /// of the panic.
    WorkerPanicked(String),
    /// A [`Binding`](crate::Binding) callback panicked; the message of the
    /// panic. If it was during the update, the evacuated pages are kept
    /// (references may still point into them); the next collection frees
    /// them once nothing does.
    ObjectModelPanicked(String),
    /// Called from a [`Binding`](crate::Binding) callback or a
    /// `run_at_safepoint` operation of the same runtime, on the thread that
    /// holds its collection: it would wait for itself.
    InsideCollection,
    /// The heap refused to free pages the collection found (a bug in
    /// hotmem); the pages stay allocated and the heap consistent.
    Heap(hotmem_page::FreeError),
}

impl fmt::Display for GcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcError::NoBinding => f.write_str("no binding: the runtime cannot collect"),
            GcError::InvalidReference {
                value,
                slot,
                holder,
                reason,
            } => {
                write!(f, "invalid reference {value:#x} ")?;
                match slot {
                    Some(s) => write!(f, "in slot {s} ")?,
                    None => f.write_str("in a handle or pin ")?,
                }
                match holder {
                    Some(h) => write!(f, "of object {h}")?,
                    None => f.write_str("(a root)")?,
                }
                write!(f, ": it {reason}")
            }
            GcError::InvalidObjectSize { object, size, room } => write!(
                f,
                "object {object} reports a size of {size} bytes, but its page holds {room} bytes from it"
            ),
            GcError::OverlappingObjects {
                first,
                first_size,
                second,
            } => write!(
                f,
                "object {second} starts inside object {first} ({first_size} bytes): a reference into the middle of an object"
            ),
            GcError::InconsistentBinding { slots } => write!(
                f,
                "{slots} slot(s) found during the update were not seen by marking (scan_object must report the same slots each time); their pages were kept"
            ),
            GcError::Safepoint(e) => write!(f, "cannot stop the mutators: {e}"),
            GcError::WorkerPanicked(m) => write!(f, "a GC worker panicked: {m}"),
            GcError::ObjectModelPanicked(m) => write!(f, "the binding panicked: {m}"),
            GcError::InsideCollection => f.write_str(
                "called from inside a collection or safepoint operation of the same runtime",
            ),
            GcError::Heap(e) => write!(f, "the heap refused to free a page: {e}"),
        }
    }
}

impl std::error::Error for GcError {}
