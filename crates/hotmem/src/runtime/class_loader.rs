//! `ClassLoader`: a loader's metadata arenas.

use hotmem_chunk::{LoaderMetaspace, MetadataType};
use hotmem_os::Address;

/// A class loader's metadata: class-space and non-class arenas that
/// bump-allocate from metaspace chunks. Dropping the loader (it died, with
/// all its classes) returns every chunk to the metaspaces, where they merge
/// with their free buddies and serve any later request, large or small.
#[derive(Debug)]
pub struct ClassLoader {
    arenas: LoaderMetaspace,
}

impl ClassLoader {
    pub(crate) fn new(arenas: LoaderMetaspace) -> ClassLoader {
        ClassLoader { arenas }
    }

    /// Allocates `bytes` of class metadata in the class space.
    ///
    /// # Errors
    /// The arena's error, e.g. when the class space is exhausted.
    pub fn alloc_class(&mut self, bytes: usize) -> Result<Address, hotmem_chunk::AllocError> {
        self.arenas.allocate(MetadataType::Class, bytes)
    }

    /// Allocates `bytes` of other metadata (methods, constant pools) in the
    /// non-class metaspace.
    ///
    /// # Errors
    /// The arena's error, e.g. when the metaspace is exhausted.
    pub fn alloc_metadata(&mut self, bytes: usize) -> Result<Address, hotmem_chunk::AllocError> {
        self.arenas.allocate(MetadataType::NonClass, bytes)
    }

    /// Gives back a block of metadata before the loader dies (it is reused by
    /// this loader's later allocations).
    ///
    /// # Errors
    /// The arena's error for a block it did not hand out.
    pub fn free_metadata(
        &mut self,
        ty: MetadataType,
        addr: Address,
        bytes: usize,
    ) -> Result<(), hotmem_chunk::DeallocError> {
        self.arenas.deallocate(ty, addr, bytes)
    }

    /// Bytes this loader has allocated (class, non-class).
    pub fn used_bytes(&self) -> (usize, usize) {
        let [class, non_class] = self.arenas.statistics();
        (class.live, non_class.live)
    }
}
