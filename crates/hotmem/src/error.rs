//! The runtime's errors.

use hotmem_os::Address;
use std::fmt;

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused.
#[derive(Debug)]
pub enum BuildError {
    /// A setting is out of range; the message says which and why.
    Config(String),
    /// The heap could not be created.
    Heap(hotmem_page::HeapError),
    /// A metaspace could not be created.
    Metaspace(hotmem_chunk::SpaceError),
    /// The NUMA topology could not be built (an invalid synthetic
    /// description, or hwloc failed).
    #[cfg(feature = "numa")]
    Topology(hotmem_numa::TopologyError),
    /// The GC worker pool could not be started.
    #[cfg(feature = "numa")]
    Workers(hotmem_numa::PoolError),
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
            #[cfg(feature = "numa")]
            BuildError::Topology(e) => write!(f, "cannot build the NUMA topology: {e}"),
            #[cfg(feature = "numa")]
            BuildError::Workers(e) => write!(f, "cannot start the GC workers: {e}"),
            BuildError::NumaDisabled => f.write_str(
                "a NUMA topology was asked for, but hotmem was built without its `numa` feature",
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        }
    }
}

impl std::error::Error for AllocError {}

/// Why a collection failed. The heap is left consistent: nothing was freed
/// that is still referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcError {
    /// The runtime was built without an [`ObjectModel`](crate::ObjectModel),
    /// so it cannot tell live objects from dead ones.
    NoObjectModel,
    /// The object model reported an object that does not lie inside the
    /// used part of a heap page. Nothing was moved or freed.
    InvalidObject {
        /// The object's address.
        addr: Address,
        /// Its size as the model reported it.
        size: usize,
    },
    /// The safepoint could not begin (for example, the calling thread is
    /// already inside one).
    Safepoint(hotmem_safepoint::BeginError),
    /// A relocation task panicked (a bug in the object model); the message
    /// of the panic.
    WorkerPanicked(String),
}

impl fmt::Display for GcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcError::NoObjectModel => f.write_str("no object model: the runtime cannot collect"),
            GcError::InvalidObject { addr, size } => write!(
                f,
                "the object model reported an object at {addr} of {size} bytes outside any used heap page"
            ),
            GcError::Safepoint(e) => write!(f, "cannot stop the mutators: {e}"),
            GcError::WorkerPanicked(m) => write!(f, "a GC worker panicked: {m}"),
        }
    }
}

impl std::error::Error for GcError {}
