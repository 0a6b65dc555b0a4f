//! [`ObjectReference`]: the address of an object in the heap.

use hotmem_os::Address;
use std::fmt;
use std::num::NonZeroUsize;

/// A reference to an object in the heap: a non-null, word-aligned address,
/// distinct from [`Address`] so that a reference is never confused with an
/// arbitrary address (an interior pointer, a page boundary).
///
/// An `ObjectReference` is only a value: holding one does not keep the
/// object alive or in place. It stays valid until the next collection, which
/// may move or free the object (see [`Mutator::alloc`](crate::Mutator::alloc)).
///
/// The only way to make one is [`ObjectReference::from_address`], which
/// refuses null and misaligned addresses:
///
/// ```
/// # use hotmem::{Address, ObjectReference};
/// assert!(ObjectReference::from_address(Address::new(0x1000)).is_some());
/// assert!(ObjectReference::from_address(Address::new(0x1001)).is_none());
/// ```
///
/// ```compile_fail,E0423
/// # use hotmem::ObjectReference;
/// let r = ObjectReference(std::num::NonZeroUsize::new(0x1001).unwrap()); // private
/// ```
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectReference(NonZeroUsize);

impl ObjectReference {
    /// The alignment of every object reference (a heap word).
    pub const ALIGN: usize = 8;

    /// `addr` as a reference; `None` for null or an address that is not
    /// word-aligned.
    #[inline]
    pub fn from_address(addr: Address) -> Option<ObjectReference> {
        if addr.get() % Self::ALIGN != 0 {
            return None;
        }
        NonZeroUsize::new(addr.get()).map(ObjectReference)
    }

    /// The object's address.
    #[inline]
    pub fn to_address(self) -> Address {
        Address::new(self.0.get())
    }

    /// The address as an integer.
    #[inline]
    pub fn get(self) -> usize {
        self.0.get()
    }
}

impl fmt::Debug for ObjectReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectReference({:#x})", self.0)
    }
}

impl fmt::Display for ObjectReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl ObjectReference {
    /// A raw word as a reference, misaligned values included (the collector
    /// rejects those with an error naming the slot); `None` only for 0.
    #[inline]
    pub(crate) fn from_raw(raw: usize) -> Option<ObjectReference> {
        NonZeroUsize::new(raw).map(ObjectReference)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_non_null_and_aligned() {
        assert_eq!(ObjectReference::from_address(Address::NULL), None);
        assert_eq!(ObjectReference::from_address(Address::new(0x1004)), None);
        let r = ObjectReference::from_address(Address::new(0x1008)).unwrap();
        assert_eq!(r.to_address(), Address::new(0x1008));
        assert_eq!(std::mem::size_of::<Option<ObjectReference>>(), 8);
    }
}
