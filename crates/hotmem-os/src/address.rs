//! Addresses, ranges and alignment arithmetic.

use std::fmt;
use thiserror::Error;

/// A virtual address. A newtype so that addresses and sizes are not mixed up.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Address(usize);

impl Address {
    /// The null address.
    pub const NULL: Address = Address(0);

    /// An address from its numeric value.
    #[inline]
    pub const fn new(addr: usize) -> Self {
        Address(addr)
    }

    /// The address of a pointer.
    #[inline]
    pub fn from_ptr<T>(ptr: *const T) -> Self {
        Address(ptr as usize)
    }

    /// The numeric value.
    #[inline]
    pub const fn get(self) -> usize {
        self.0
    }

    /// This address as a raw pointer (creating it is safe, using it is not).
    #[inline]
    pub const fn as_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }

    /// `self + bytes`, or `None` on overflow.
    #[inline]
    pub const fn checked_add(self, bytes: usize) -> Option<Address> {
        match self.0.checked_add(bytes) {
            Some(a) => Some(Address(a)),
            None => None,
        }
    }

    /// Bytes from `base` up to `self`.
    ///
    /// # Panics
    /// If `base > self`.
    #[inline]
    pub const fn offset_from(self, base: Address) -> usize {
        assert!(base.0 <= self.0, "offset_from: base above address");
        self.0 - base.0
    }

    /// Whether the address is a multiple of `align` (a power of two).
    #[inline]
    pub const fn is_aligned(self, align: usize) -> bool {
        is_aligned(self.0, align)
    }

    /// Rounds down to a multiple of `align` (a power of two).
    #[inline]
    pub const fn align_down(self, align: usize) -> Address {
        Address(align_down(self.0, align))
    }

    /// Rounds up to a multiple of `align` (a power of two), `None` on overflow.
    #[inline]
    pub const fn align_up(self, align: usize) -> Option<Address> {
        match align_up(self.0, align) {
            Some(a) => Some(Address(a)),
            None => None,
        }
    }
}

impl std::ops::Add<usize> for Address {
    type Output = Address;
    /// # Panics
    /// On overflow.
    #[inline]
    fn add(self, rhs: usize) -> Address {
        self.checked_add(rhs).expect("address overflow")
    }
}

impl std::ops::Sub<Address> for Address {
    type Output = usize;
    #[inline]
    fn sub(self, rhs: Address) -> usize {
        self.offset_from(rhs)
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#014x}", self.0)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#014x}", self.0)
    }
}

impl fmt::LowerHex for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

/// A half-open range of addresses `[start, end)`. Never wraps around.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MemRange {
    start: Address,
    end: Address,
}

impl MemRange {
    /// The range of `len` bytes at `start`.
    ///
    /// # Errors
    /// [`RangeError::Wraps`] if `start + len` overflows.
    #[inline]
    pub const fn new(start: Address, len: usize) -> Result<MemRange, RangeError> {
        match start.checked_add(len) {
            Some(end) => Ok(MemRange { start, end }),
            None => Err(RangeError::Wraps { start, len }),
        }
    }

    /// The range between two addresses, `None` if `end < start`.
    #[inline]
    pub const fn from_bounds(start: Address, end: Address) -> Option<MemRange> {
        if end.0 < start.0 {
            None
        } else {
            Some(MemRange { start, end })
        }
    }

    /// The range of a slice-like region at a pointer.
    ///
    /// # Panics
    /// If the range wraps around the address space.
    pub fn from_ptr_len<T>(ptr: *const T, len: usize) -> MemRange {
        MemRange::new(Address::from_ptr(ptr), len).expect("range wraps")
    }

    /// First address.
    #[inline]
    pub const fn start(self) -> Address {
        self.start
    }

    /// One past the last address.
    #[inline]
    pub const fn end(self) -> Address {
        self.end
    }

    /// Length in bytes.
    #[inline]
    pub const fn len(self) -> usize {
        self.end.0 - self.start.0
    }

    /// Whether the range has no bytes.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.end.0 == self.start.0
    }

    /// Whether `addr` lies inside.
    #[inline]
    pub const fn contains(self, addr: Address) -> bool {
        self.start.0 <= addr.0 && addr.0 < self.end.0
    }

    /// Whether `other` lies entirely inside (an empty range lies inside if its
    /// start does, or at the end).
    #[inline]
    pub const fn contains_range(self, other: MemRange) -> bool {
        self.start.0 <= other.start.0 && other.end.0 <= self.end.0
    }

    /// Whether the two ranges share at least one byte.
    #[inline]
    pub const fn overlaps(self, other: MemRange) -> bool {
        self.start.0 < other.end.0 && other.start.0 < self.end.0
    }

    /// The bytes both ranges share, `None` if they share none.
    pub fn intersection(self, other: MemRange) -> Option<MemRange> {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end);
        (start < end).then_some(MemRange { start, end })
    }

    /// Whether start and length are both multiples of `align`.
    #[inline]
    pub const fn is_aligned(self, align: usize) -> bool {
        self.start.is_aligned(align) && is_aligned(self.len(), align)
    }

    /// The sub-range `[offset, offset + len)` relative to the start.
    ///
    /// # Errors
    /// [`RangeError::OutOfRange`] if it does not fit; [`RangeError::Wraps`] on overflow.
    pub fn subrange(self, offset: usize, len: usize) -> Result<MemRange, RangeError> {
        let start = self.start.checked_add(offset).ok_or(RangeError::Wraps {
            start: self.start,
            len: offset,
        })?;
        let r = MemRange::new(start, len)?;
        if self.contains_range(r) {
            Ok(r)
        } else {
            Err(RangeError::OutOfRange {
                range: r,
                within: self,
            })
        }
    }
}

impl fmt::Debug for MemRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:?}, {:?})", self.start, self.end)
    }
}

impl fmt::Display for MemRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}) {} bytes", self.start, self.end, self.len())
    }
}

/// A range argument that cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RangeError {
    /// The range has no bytes.
    #[error("empty range")]
    Empty,
    /// `start + len` overflows the address space.
    #[error("range of {len} bytes at {start} wraps around the address space")]
    Wraps {
        /// Requested start.
        start: Address,
        /// Requested length.
        len: usize,
    },
    /// Start or length is not a multiple of the required alignment.
    #[error("range {range} is not aligned to {align} bytes")]
    Misaligned {
        /// The range.
        range: MemRange,
        /// The alignment it needed.
        align: usize,
    },
    /// The range is not inside the range it must lie in.
    #[error("range {range} is outside {within}")]
    OutOfRange {
        /// The range.
        range: MemRange,
        /// Where it had to be.
        within: MemRange,
    },
}

/// Whether `x` is a multiple of `align`.
///
/// # Panics
/// In debug builds, if `align` is not a power of two.
#[inline]
pub const fn is_aligned(x: usize, align: usize) -> bool {
    debug_assert!(align.is_power_of_two());
    x & (align - 1) == 0
}

/// `x` rounded down to a multiple of `align` (a power of two).
#[inline]
pub const fn align_down(x: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    x & !(align - 1)
}

/// `x` rounded up to a multiple of `align` (a power of two), `None` on overflow.
#[inline]
pub const fn align_up(x: usize, align: usize) -> Option<usize> {
    debug_assert!(align.is_power_of_two());
    match x.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

/// The size of a virtual memory page on this system.
#[inline]
pub fn page_size() -> usize {
    rustix::param::page_size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_helpers() {
        assert_eq!(align_up(0, 4096), Some(0));
        assert_eq!(align_up(1, 4096), Some(4096));
        assert_eq!(align_up(usize::MAX, 4096), None);
        assert_eq!(align_down(8191, 4096), 4096);
        assert!(is_aligned(8192, 4096));
        assert!(!is_aligned(8193, 4096));
        assert!(page_size().is_power_of_two());
    }

    #[test]
    fn ranges() {
        let r = MemRange::new(Address::new(0x1000), 0x3000).unwrap();
        assert_eq!(r.end(), Address::new(0x4000));
        assert!(r.contains(Address::new(0x3fff)));
        assert!(!r.contains(Address::new(0x4000)));
        let s = r.subrange(0x1000, 0x1000).unwrap();
        assert!(r.contains_range(s));
        assert!(r.subrange(0x3000, 1).is_err());
        assert!(MemRange::new(Address::new(usize::MAX), 2).is_err());
        let t = MemRange::new(Address::new(0x3000), 0x2000).unwrap();
        assert_eq!(
            r.intersection(t),
            MemRange::from_bounds(Address::new(0x3000), Address::new(0x4000))
        );
        assert!(r.overlaps(t));
        assert!(!r.overlaps(MemRange::new(Address::new(0x4000), 1).unwrap()));
    }
}
