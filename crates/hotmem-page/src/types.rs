//! Small value types: node ids (re-exported from `hotmem-os`), object ages, page types, object layouts and the error of making one.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// A NUMA node, the one node number of every hotmem crate (see
/// [`hotmem_os::NodeId`]). This crate never interprets it, it only keys
/// partitions by it and hands it to the [`NodeBinder`](crate::NodeBinder).
/// Without NUMA everything is [`NodeId::ZERO`].
pub use hotmem_os::NodeId;

/// The age of the objects a page holds, as in generational ZGC: eden,
/// survivor ages 1 to 14, and old. Each age has its own shared medium page.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Age(u8);

impl Age {
    /// Newly allocated objects.
    pub const EDEN: Age = Age(0);
    /// Objects promoted to the old generation.
    pub const OLD: Age = Age(15);
    /// How many ages there are.
    pub const COUNT: usize = 16;

    /// Survivor age `n` (objects that survived `n` young collections).
    ///
    /// # Panics
    /// If `n` is not in `1..=14`.
    pub const fn survivor(n: u8) -> Age {
        assert!(n >= 1 && n <= 14, "survivor ages are 1..=14");
        Age(n)
    }

    /// The age with index `i` (`0` = eden, `15` = old), `None` beyond.
    pub const fn from_index(i: usize) -> Option<Age> {
        if i < Self::COUNT {
            Some(Age(i as u8))
        } else {
            None
        }
    }

    /// The index of this age, `0..Age::COUNT`.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Every age, eden first.
    pub fn all() -> impl Iterator<Item = Age> {
        (0..Self::COUNT as u8).map(Age)
    }
}

impl fmt::Display for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("eden"),
            15 => f.write_str("old"),
            n => write!(f, "survivor {n}"),
        }
    }
}

/// The three kinds of page. The object size decides which one an object
/// goes to (see [`PageSizes::page_type_for`](crate::PageSizes::page_type_for)).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageType {
    /// One granule (2 MiB); objects up to 1/8 of it. Per-CPU pages.
    Small,
    /// A power of two derived from the heap size; objects up to 1/8 of it.
    /// One shared page per age.
    Medium,
    /// One object, rounded up to whole granules.
    Large,
}

impl PageType {
    /// All three, smallest first.
    pub const ALL: [PageType; 3] = [PageType::Small, PageType::Medium, PageType::Large];

    /// `0`, `1`, `2`: an index for per-type arrays.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            PageType::Small => 0,
            PageType::Medium => 1,
            PageType::Large => 2,
        }
    }
}

impl fmt::Display for PageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageType::Small => "small",
            PageType::Medium => "medium",
            PageType::Large => "large",
        })
    }
}

/// Size and alignment of one object, checked once so that the allocation
/// paths need not check again.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectLayout {
    size: usize,
    align: usize,
}

impl ObjectLayout {
    /// Objects are aligned to at least this many bytes (a heap word).
    pub const MIN_ALIGN: usize = 8;
    /// The largest alignment an object may ask for (a virtual memory page).
    pub const MAX_ALIGN: usize = 4096;

    /// `size` bytes at the minimal alignment.
    ///
    /// # Errors
    /// As [`ObjectLayout::aligned`].
    #[inline]
    pub const fn new(size: usize) -> Result<ObjectLayout, LayoutError> {
        Self::aligned(size, Self::MIN_ALIGN)
    }

    /// `size` bytes aligned to `align`. The size is rounded up to a multiple
    /// of [`MIN_ALIGN`](Self::MIN_ALIGN) and the alignment raised to it.
    ///
    /// # Errors
    /// [`LayoutError::ZeroSize`], [`LayoutError::BadAlignment`] for an
    /// alignment that is not a power of two, [`LayoutError::AlignTooLarge`]
    /// above [`MAX_ALIGN`](Self::MAX_ALIGN), [`LayoutError::Overflow`] when
    /// rounding overflows.
    pub const fn aligned(size: usize, align: usize) -> Result<ObjectLayout, LayoutError> {
        if size == 0 {
            return Err(LayoutError::ZeroSize);
        }
        if !align.is_power_of_two() {
            return Err(LayoutError::BadAlignment { align });
        }
        if align > Self::MAX_ALIGN {
            return Err(LayoutError::AlignTooLarge { align });
        }
        let align = if align < Self::MIN_ALIGN {
            Self::MIN_ALIGN
        } else {
            align
        };
        // Leave room for alignment padding so that `size + align` never
        // overflows on the allocation paths either.
        match size.checked_add(Self::MIN_ALIGN - 1 + Self::MAX_ALIGN) {
            Some(_) => Ok(ObjectLayout {
                size: (size + Self::MIN_ALIGN - 1) & !(Self::MIN_ALIGN - 1),
                align,
            }),
            None => Err(LayoutError::Overflow { size }),
        }
    }

    /// The (rounded) size in bytes.
    #[inline]
    pub const fn size(self) -> usize {
        self.size
    }

    /// The alignment in bytes.
    #[inline]
    pub const fn align(self) -> usize {
        self.align
    }

    /// The most bytes this object can take in a page, padding included.
    #[inline]
    pub const fn footprint(self) -> usize {
        self.size + self.align - Self::MIN_ALIGN
    }
}

/// An object size or alignment that cannot be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// Zero bytes were asked for.
    #[error("object of zero bytes")]
    ZeroSize,
    /// The alignment is not a power of two.
    #[error("alignment {align} is not a power of two")]
    BadAlignment {
        /// The alignment asked for.
        align: usize,
    },
    /// The alignment is larger than [`ObjectLayout::MAX_ALIGN`](crate::ObjectLayout::MAX_ALIGN).
    #[error("alignment {align} is larger than a virtual memory page")]
    AlignTooLarge {
        /// The alignment asked for.
        align: usize,
    },
    /// Rounding the size up overflows.
    #[error("object size {size} overflows")]
    Overflow {
        /// The size asked for.
        size: usize,
    },
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_checked() {
        assert_eq!(ObjectLayout::new(0), Err(LayoutError::ZeroSize));
        assert_eq!(
            ObjectLayout::new(usize::MAX),
            Err(LayoutError::Overflow { size: usize::MAX })
        );
        assert_eq!(
            ObjectLayout::aligned(8, 3),
            Err(LayoutError::BadAlignment { align: 3 })
        );
        assert_eq!(
            ObjectLayout::aligned(8, 8192),
            Err(LayoutError::AlignTooLarge { align: 8192 })
        );
        let l = ObjectLayout::aligned(13, 2).unwrap();
        assert_eq!((l.size(), l.align(), l.footprint()), (16, 8, 16));
        let l = ObjectLayout::aligned(100, 64).unwrap();
        assert_eq!((l.size(), l.align(), l.footprint()), (104, 64, 160));
    }

    #[test]
    fn ages() {
        assert_eq!(Age::all().count(), Age::COUNT);
        assert_eq!(Age::survivor(3).index(), 3);
        assert_eq!(Age::from_index(15), Some(Age::OLD));
        assert_eq!(Age::from_index(16), None);
        assert_eq!(Age::OLD.to_string(), "old");
    }
}
