//! Uncommitting cached pages unused for the configured delay: claimed under
//! each partition's lock, unmapped and punched out with no lock held.

use super::PageAllocator;
use crate::block::Block;
use crate::error::MemoryError;
use std::time::Instant;

/// What [`PageAllocator::uncommit`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UncommitStats {
    /// Cached blocks uncommitted.
    pub blocks: usize,
    /// Bytes uncommitted.
    pub bytes: usize,
}

impl PageAllocator {
    /// Uncommits cached pages that have not been used for the configured
    /// delay (as of `now`): their address space is unmapped and their
    /// physical memory returned to the OS (punched out of the memfd).
    ///
    /// # Errors
    /// The first OS error; pages uncommitted before it stay uncommitted,
    /// the failing one stays cached.
    pub fn uncommit(&self, now: Instant) -> Result<UncommitStats, MemoryError> {
        match now.checked_sub(self.uncommit_delay) {
            Some(cutoff) => self.uncommit_older_than(cutoff),
            // The clock has not run for the delay yet (a young process or
            // machine): nothing can have been unused that long.
            None => Ok(UncommitStats::default()),
        }
    }

    /// Uncommits every cached page freed at or before `cutoff`.
    ///
    /// The blocks leave the cache and the capacity under their partition's
    /// lock; the unmapping and punching run with no lock held, and the
    /// granules become uncommitted (committable again) afterwards. An
    /// allocation that needs them meanwhile waits for them, without a lock.
    ///
    /// # Errors
    /// As [`PageAllocator::uncommit`].
    pub fn uncommit_older_than(&self, cutoff: Instant) -> Result<UncommitStats, MemoryError> {
        let mut stats = UncommitStats::default();
        for (p, part) in self.partitions.iter().enumerate() {
            let blocks = part.state.lock().claim_unused(cutoff);
            let mut blocks = blocks.into_iter();
            while let Some(block) = blocks.next() {
                if let Err(e) = self.uncommit_block(p, &block) {
                    // Keep it (and the rest) cached.
                    let mut state = part.state.lock();
                    state.uncommit_failed(block);
                    for b in blocks {
                        state.uncommit_failed(b);
                    }
                    return Err(e);
                }
                part.state.lock().uncommitted(&block);
                self.counters.uncommitted(block.len());
                stats.blocks += 1;
                stats.bytes += block.len();
            }
        }
        Ok(stats)
    }

    /// Unmaps a claimed block and punches its memory out; on failure maps
    /// it again (in case the unmap went through).
    fn uncommit_block(&self, p: usize, block: &Block) -> Result<(), MemoryError> {
        let physical = &self.partitions[p].physical;
        let result = self
            .reservation
            .unmap(block.range)
            .map_err(MemoryError::Unmap)
            .and_then(|()| {
                block
                    .segments
                    .iter()
                    .try_for_each(|s| physical.uncommit(s.offset, s.len))
                    .map_err(MemoryError::Physical)
            });
        if result.is_err() {
            let mut at = block.range.start();
            for s in &block.segments {
                let _ = self.reservation.map(at, physical, s.offset, s.len);
                at = at + s.len;
            }
        }
        result
    }
}
