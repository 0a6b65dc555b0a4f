//! Heap configuration: capacity, page sizes, partitions, binding hook.

use crate::error::ConfigError;
use crate::{NodeId, ObjectLayout, PageType};
use hotmem_os::MemRange;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The unit of physical memory and of address space: 2 MiB, one small page.
pub const GRANULE_SIZE: usize = 2 << 20;

/// How the per-age shared medium page is replaced when it fills up.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum MediumPageMode {
    /// One thread at a time allocates the next medium page, under a lock that
    /// only the slow path takes. Under the lock a thread first retries the
    /// page another thread may just have installed, and only allocates when
    /// that fails too, without waiting for memory while it holds the lock.
    /// No page is allocated in vain (ZGC since JDK-8339387).
    #[default]
    Synchronized,
    /// Every thread that finds the page full allocates a new one and tries to
    /// install it with a compare-and-swap; the losers undo their allocation.
    /// The behaviour before JDK-8339387, kept as the baseline.
    Racy,
}

impl fmt::Display for MediumPageMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MediumPageMode::Synchronized => "Synchronized",
            MediumPageMode::Racy => "Racy",
        })
    }
}

/// How a partition keeps its free, committed memory for reuse.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum CacheMode {
    /// The mapped cache (ZGC since JDK-8350441): freed memory is kept as
    /// ranges of the address space, by address, and a range merges with the
    /// cached ranges right below and above it. A page of any size is cut
    /// from the smallest range that fits (a small page from the bottom of
    /// the lowest such range, a medium or large page from the top of the
    /// highest), so that fragments are used first and large ranges stay
    /// whole; only when no single range fits are several ranges harvested
    /// (the largest first): their memory is remapped into one new range
    /// (counted as Page Cache Flush).
    #[default]
    Mapped,
    /// The page cache it replaced: freed pages kept whole, in lists by size
    /// class (small, medium, other), never merged; a page comes from its own
    /// class, else a larger cached page is split; when nothing fits, cached
    /// pages are flushed, least recently used first, and their memory
    /// remapped into the new page. Kept as the baseline.
    PageCache,
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheMode::Mapped => "Mapped",
            CacheMode::PageCache => "PageCache",
        })
    }
}

/// Page sizes and the object size limits that pick a page type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSizes {
    small_page: usize,
    medium_page: usize,
    small_object_max: usize,
    medium_object_max: usize,
    granule: usize,
}

impl PageSizes {
    /// ZGC's sizes for a heap of `max_capacity` bytes: small pages of one
    /// granule, medium pages of 3.125% of the heap rounded down to a power of
    /// two and clamped to 2..=16 granules (so 32 MiB from 1 GiB up), objects
    /// up to 1/8 of a page. (ZGC disables medium pages below 2 granules; here
    /// they always exist so that small heaps show the same behaviour.)
    pub fn for_heap(max_capacity: usize) -> PageSizes {
        let unclamped = max_capacity / 32;
        let clamped = unclamped.clamp(2 * GRANULE_SIZE, 16 * GRANULE_SIZE);
        let medium = 1usize << (usize::BITS - 1 - clamped.leading_zeros());
        Self::with_medium(medium).expect("a power of two of 2..=16 granules")
    }

    /// Small pages of one granule and medium pages of `medium_page` bytes.
    ///
    /// # Errors
    /// [`ConfigError::BadPageSize`] unless `medium_page` is a power of two of
    /// at least two granules.
    pub fn with_medium(medium_page: usize) -> Result<PageSizes, ConfigError> {
        if !medium_page.is_power_of_two() || medium_page < 2 * GRANULE_SIZE {
            return Err(ConfigError::BadPageSize { size: medium_page });
        }
        Ok(PageSizes {
            small_page: GRANULE_SIZE,
            medium_page,
            small_object_max: GRANULE_SIZE / 8,
            medium_object_max: medium_page / 8,
            granule: GRANULE_SIZE,
        })
    }

    /// Arbitrary sizes for page sources that are not backed by real memory
    /// (models and tests): `granule` is the unit large pages round up to.
    ///
    /// # Errors
    /// [`ConfigError::BadPageSize`] unless all are powers of two with
    /// `granule <= small_page < medium_page`, and the object limits are
    /// between [`ObjectLayout::MIN_ALIGN`] and their page size.
    pub fn custom(
        granule: usize,
        small_page: usize,
        medium_page: usize,
        small_object_max: usize,
        medium_object_max: usize,
    ) -> Result<PageSizes, ConfigError> {
        for size in [granule, small_page, medium_page] {
            if !size.is_power_of_two() {
                return Err(ConfigError::BadPageSize { size });
            }
        }
        if granule > small_page || small_page >= medium_page {
            return Err(ConfigError::BadPageSize { size: medium_page });
        }
        if small_object_max < ObjectLayout::MIN_ALIGN
            || small_object_max > small_page
            || medium_object_max <= small_object_max
            || medium_object_max > medium_page
        {
            return Err(ConfigError::BadPageSize {
                size: medium_object_max,
            });
        }
        Ok(PageSizes {
            small_page,
            medium_page,
            small_object_max,
            medium_object_max,
            granule,
        })
    }

    /// Bytes in a small page.
    #[inline]
    pub const fn small_page(&self) -> usize {
        self.small_page
    }

    /// Bytes in a medium page.
    #[inline]
    pub const fn medium_page(&self) -> usize {
        self.medium_page
    }

    /// The largest object (footprint) that goes to a small page.
    #[inline]
    pub const fn small_object_max(&self) -> usize {
        self.small_object_max
    }

    /// The largest object (footprint) that goes to a medium page.
    #[inline]
    pub const fn medium_object_max(&self) -> usize {
        self.medium_object_max
    }

    /// The unit sizes are multiples of.
    #[inline]
    pub const fn granule(&self) -> usize {
        self.granule
    }

    /// The page type an object of `layout` goes to.
    #[inline]
    pub const fn page_type_for(&self, layout: ObjectLayout) -> PageType {
        let size = layout.footprint();
        if size <= self.small_object_max {
            PageType::Small
        } else if size <= self.medium_object_max {
            PageType::Medium
        } else {
            PageType::Large
        }
    }

    /// The size of a page of `page_type` for an object of `layout` (for
    /// large pages: the object rounded up to granules), `None` on overflow.
    pub const fn page_size_for(&self, page_type: PageType, layout: ObjectLayout) -> Option<usize> {
        match page_type {
            PageType::Small => Some(self.small_page),
            PageType::Medium => Some(self.medium_page),
            PageType::Large => match layout.footprint().checked_add(self.granule - 1) {
                Some(v) => Some(v & !(self.granule - 1)),
                None => None,
            },
        }
    }
}

/// The hook through which a heap binds the memory of a partition to its
/// NUMA node. It is called with the address range of freshly committed
/// memory of a partition, after it is mapped and before it is committed, so
/// that a memory policy set on the range decides where the memory goes.
///
/// Any `Fn(MemRange, NodeId) + Send + Sync` is a binder. `hotmem-page` does
/// not depend on a NUMA library; the facade passes one in.
pub trait NodeBinder: Send + Sync {
    /// Binds `range` to `node`. Failures are the binder's to report; the
    /// heap carries on (the memory is then merely not node-local).
    fn bind(&self, range: MemRange, node: NodeId);
}

impl<F: Fn(MemRange, NodeId) + Send + Sync> NodeBinder for F {
    fn bind(&self, range: MemRange, node: NodeId) {
        self(range, node)
    }
}

/// How to build a [`PageAllocator`](crate::PageAllocator).
///
/// ```
/// use hotmem_page::{HeapConfig, NodeId};
/// use std::time::Duration;
/// let config = HeapConfig::new(256 << 20)
///     .partitions(&[NodeId::ZERO, NodeId::new(1)])
///     .uncommit_delay(Duration::from_secs(300));
/// assert_eq!(config.max_capacity(), 256 << 20);
/// ```
#[derive(Clone)]
pub struct HeapConfig {
    pub(crate) max_capacity: usize,
    pub(crate) partitions: Vec<NodeId>,
    pub(crate) binder: Option<Arc<dyn NodeBinder>>,
    pub(crate) uncommit_delay: Duration,
    pub(crate) address_space_ratio: usize,
    pub(crate) medium_page: Option<usize>,
    pub(crate) cache_mode: CacheMode,
}

impl fmt::Debug for HeapConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapConfig")
            .field("max_capacity", &self.max_capacity)
            .field("partitions", &self.partitions)
            .field("binder", &self.binder.is_some())
            .field("uncommit_delay", &self.uncommit_delay)
            .field("address_space_ratio", &self.address_space_ratio)
            .field("medium_page", &self.medium_page)
            .field("cache_mode", &self.cache_mode)
            .finish()
    }
}

impl HeapConfig {
    /// A heap of at most `max_capacity` bytes of memory, one partition
    /// (node 0), no binding, a 300 s uncommit delay (ZGC's default), four
    /// times as much address space as memory, ZGC's page sizes, the mapped
    /// cache.
    pub fn new(max_capacity: usize) -> HeapConfig {
        HeapConfig {
            max_capacity,
            partitions: vec![NodeId::ZERO],
            binder: None,
            uncommit_delay: Duration::from_secs(300),
            address_space_ratio: 4,
            medium_page: None,
            cache_mode: CacheMode::Mapped,
        }
    }

    /// Splits the capacity evenly over one partition per node.
    pub fn partitions(mut self, nodes: &[NodeId]) -> HeapConfig {
        self.partitions = nodes.to_vec();
        self
    }

    /// Binds each partition's memory to its node through `binder`.
    pub fn binder(mut self, binder: Arc<dyn NodeBinder>) -> HeapConfig {
        self.binder = Some(binder);
        self
    }

    /// Cached pages unused for this long are uncommitted by
    /// [`PageAllocator::uncommit`](crate::PageAllocator::uncommit).
    pub fn uncommit_delay(mut self, delay: Duration) -> HeapConfig {
        self.uncommit_delay = delay;
        self
    }

    /// Reserves `ratio` times the capacity as address space (at least 2),
    /// the room that flushing and defragmenting work in.
    pub fn address_space_ratio(mut self, ratio: usize) -> HeapConfig {
        self.address_space_ratio = ratio;
        self
    }

    /// Uses medium pages of `bytes` (a power of two of at least two
    /// granules) instead of the size derived from the capacity.
    pub fn medium_page_size(mut self, bytes: usize) -> HeapConfig {
        self.medium_page = Some(bytes);
        self
    }

    /// Keeps free memory in the cache `mode` says (the mapped cache unless
    /// told otherwise).
    pub fn cache_mode(mut self, mode: CacheMode) -> HeapConfig {
        self.cache_mode = mode;
        self
    }

    /// The maximum capacity.
    pub fn max_capacity(&self) -> usize {
        self.max_capacity
    }

    /// The page sizes this configuration gives.
    ///
    /// # Errors
    /// [`ConfigError::BadPageSize`] for a bad medium page size.
    pub fn page_sizes(&self) -> Result<PageSizes, ConfigError> {
        match self.medium_page {
            Some(m) => PageSizes::with_medium(m),
            None => Ok(PageSizes::for_heap(self.max_capacity)),
        }
    }

    /// Checks everything; returns the page sizes and the capacity per partition.
    pub(crate) fn validate(&self) -> Result<(PageSizes, usize), ConfigError> {
        let sizes = self.page_sizes()?;
        let n = self.partitions.len();
        let mut sorted = self.partitions.clone();
        sorted.sort();
        sorted.dedup();
        if n == 0 || sorted.len() != n {
            return Err(ConfigError::BadPartitions);
        }
        let multiple = GRANULE_SIZE
            .checked_mul(n)
            .ok_or(ConfigError::BadPartitions)?;
        if self.max_capacity % multiple != 0 {
            return Err(ConfigError::CapacityMisaligned {
                capacity: self.max_capacity,
                multiple,
            });
        }
        let per_partition = self.max_capacity / n;
        if per_partition < sizes.medium_page() {
            return Err(ConfigError::CapacityTooSmall {
                per_partition,
                minimum: sizes.medium_page(),
            });
        }
        let ratio = self.address_space_ratio;
        if ratio < 2 || self.max_capacity.checked_mul(ratio).is_none() {
            return Err(ConfigError::BadAddressSpaceRatio { ratio });
        }
        Ok((sizes, per_partition))
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn medium_page_size_follows_the_heap() {
        assert_eq!(PageSizes::for_heap(1 << 30).medium_page(), 32 << 20);
        assert_eq!(PageSizes::for_heap(16 << 30).medium_page(), 32 << 20);
        assert_eq!(PageSizes::for_heap(512 << 20).medium_page(), 16 << 20);
        assert_eq!(PageSizes::for_heap(64 << 20).medium_page(), 4 << 20);
        let s = PageSizes::for_heap(1 << 30);
        assert_eq!(s.small_object_max(), 256 << 10);
        assert_eq!(s.medium_object_max(), 4 << 20);
        let l = |n| ObjectLayout::new(n).unwrap();
        assert_eq!(s.page_type_for(l(256 << 10)), PageType::Small);
        assert_eq!(s.page_type_for(l((256 << 10) + 1)), PageType::Medium);
        assert_eq!(s.page_type_for(l(4 << 20)), PageType::Medium);
        assert_eq!(s.page_type_for(l((4 << 20) + 8)), PageType::Large);
        assert_eq!(
            s.page_size_for(PageType::Large, l((4 << 20) + 8)),
            Some(6 << 20)
        );
    }

    #[test]
    fn bad_configs_are_rejected() {
        assert!(PageSizes::with_medium(3 << 20).is_err());
        assert!(PageSizes::with_medium(GRANULE_SIZE).is_err());
        assert_eq!(
            HeapConfig::new(0).validate(),
            Err(ConfigError::CapacityTooSmall {
                per_partition: 0,
                minimum: 4 << 20
            })
        );
        assert!(matches!(
            HeapConfig::new(3 << 20).validate(),
            Err(ConfigError::CapacityMisaligned { .. })
        ));
        assert_eq!(
            HeapConfig::new(64 << 20).partitions(&[]).validate(),
            Err(ConfigError::BadPartitions)
        );
        assert_eq!(
            HeapConfig::new(64 << 20)
                .partitions(&[NodeId::new(1), NodeId::new(1)])
                .validate(),
            Err(ConfigError::BadPartitions)
        );
        assert!(
            HeapConfig::new(64 << 20)
                .address_space_ratio(1)
                .validate()
                .is_err()
        );
        assert!(HeapConfig::new(64 << 20).validate().is_ok());
    }

    /// Issue 12: capacities near the top of `usize` are errors, never an
    /// overflow.
    #[test]
    fn huge_capacities_are_rejected() {
        let top = usize::MAX - usize::MAX % GRANULE_SIZE;
        assert_eq!(
            HeapConfig::new(top).validate(),
            Err(ConfigError::BadAddressSpaceRatio { ratio: 4 })
        );
        let half = (isize::MAX as usize) - (isize::MAX as usize) % GRANULE_SIZE;
        assert_eq!(
            HeapConfig::new(half).validate(),
            Err(ConfigError::BadAddressSpaceRatio { ratio: 4 })
        );
        assert_eq!(
            HeapConfig::new(64 << 20)
                .address_space_ratio(usize::MAX)
                .validate(),
            Err(ConfigError::BadAddressSpaceRatio { ratio: usize::MAX })
        );
        assert_eq!(
            HeapConfig::new(64 << 20)
                .medium_page_size(usize::MAX)
                .validate(),
            Err(ConfigError::BadPageSize { size: usize::MAX })
        );
    }
}
