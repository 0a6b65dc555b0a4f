//! Introspection: read-only views of the live pages, usage, committed
//! memory, counters and the invariant check.

use super::PageAllocator;
use crate::partition::PartitionState;
use crate::sync::MutexGuard;
use crate::usage::HeapUsage;
use crate::{CounterSnapshot, PageInfo, PageRef};
use hotmem_os::{MemRange, OsError};

impl PageAllocator {
    /// Every live page, by address, as read-only views (see
    /// [`free_pages`](Self::free_pages) for what a collector does with them).
    pub fn pages(&self) -> Vec<PageRef> {
        let mut pages: Vec<PageRef> = Vec::new();
        for part in &self.partitions {
            pages.extend(part.state.lock().live_pages().cloned());
        }
        pages.sort_by_key(|p| p.range().start());
        pages
    }

    /// A snapshot of every live page as plain data, by address.
    pub fn page_infos(&self) -> Vec<PageInfo> {
        self.pages().iter().map(|p| p.info()).collect()
    }

    /// Capacity, used and cached memory, overall and per partition. The
    /// partitions are read one after the other (each under its own lock),
    /// so with allocation going on the totals are each partition's state at
    /// a slightly different moment.
    pub fn usage(&self) -> HeapUsage {
        let partitions: Vec<_> = self
            .partitions
            .iter()
            .map(|p| p.state.lock().usage())
            .collect();
        HeapUsage {
            max_capacity: partitions.iter().map(|p| p.max_capacity).sum(),
            capacity: partitions.iter().map(|p| p.capacity).sum(),
            used: partitions.iter().map(|p| p.used).sum(),
            cached: partitions.iter().map(|p| p.cached).sum(),
            partitions,
        }
    }

    /// Committed memory (in pages and in the cache): what NMT should see as
    /// committed under [`MemTag::JAVA_HEAP`](hotmem_os::MemTag::JAVA_HEAP)
    /// for this heap.
    pub fn committed_bytes(&self) -> usize {
        self.partitions
            .iter()
            .map(|p| p.state.lock().capacity())
            .sum()
    }

    /// Used memory (in allocated pages), without building a [`HeapUsage`].
    pub fn used_bytes(&self) -> usize {
        self.partitions.iter().map(|p| p.state.lock().used()).sum()
    }

    /// Physical memory the memfds hold as the kernel counts it (`fstat`),
    /// to check [`PageAllocator::committed_bytes`] against. Takes no lock.
    ///
    /// # Errors
    /// The OS error of `fstat`.
    pub fn physical_committed_bytes(&self) -> Result<usize, OsError> {
        self.partitions
            .iter()
            .map(|p| p.physical.committed_bytes())
            .sum()
    }

    /// The counters (totals since creation).
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// Checks every internal invariant, with every partition locked (in
    /// index order): capacity = used + cached per partition, used = the live
    /// pages (and pages in transit), pages and cached blocks disjoint and
    /// inside the partition's address space, address space accounted for.
    ///
    /// # Panics
    /// When an invariant does not hold (a bug).
    pub fn check_invariants(&self) {
        let guards: Vec<MutexGuard<'_, PartitionState>> =
            self.partitions.iter().map(|p| p.state.lock()).collect();
        for state in &guards {
            state.check();
        }
        // The partitions' address spaces tile the reservation.
        let mut spaces: Vec<MemRange> = guards.iter().map(|s| s.space()).collect();
        spaces.sort();
        assert_eq!(
            spaces.first().map(|r| r.start()),
            Some(self.reserved().start())
        );
        assert_eq!(spaces.last().map(|r| r.end()), Some(self.reserved().end()));
        for w in spaces.windows(2) {
            assert_eq!(w[0].end(), w[1].start(), "partition address spaces");
        }
    }
}
