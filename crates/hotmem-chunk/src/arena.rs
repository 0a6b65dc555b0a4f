//! `Arena`: the metadata allocator of one class loader.

use crate::error::{AllocError, DeallocError};
use crate::freeblocks::FreeBlocks;
use crate::{ArenaKind, ChunkLevel, ChunkManager, ChunkRef, MetadataType};
use hotmem_os::Address;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Metadata is allocated in words.
pub const WORD: usize = 8;

#[derive(Copy, Clone, Debug)]
struct ArenaChunk {
    chunk: ChunkRef,
    /// One past the last byte handed out (for the current chunk: kept in
    /// `Arena::top` and written back when it retires).
    top: usize,
}

/// A per-loader allocator over one space. It bump-allocates words from its
/// current chunk (committing more of it as needed). When the chunk is full
/// it first reuses a deallocated block (or the committed remainder of a
/// retired chunk), then tries to enlarge the chunk in place into its free
/// buddy, and only then takes a new chunk sized by its [`ArenaKind`]'s growth
/// policy. Dropping it (the loader died) returns every chunk to the space.
///
/// ```
/// use hotmem_chunk::{Arena, ArenaKind, ChunkManager, MetadataType, SpaceConfig};
/// use hotmem_os::Memory;
///
/// let space = ChunkManager::new(&Memory::new(), MetadataType::Class, SpaceConfig::with_size(8 << 20))?;
/// let mut loader = Arena::new(&space, ArenaKind::Standard);
/// let klass = loader.allocate(480)?;
/// // SAFETY: the arena handed out 480 committed bytes at `klass`.
/// unsafe { klass.as_ptr::<u8>().write_bytes(0x5A, 480) };
/// assert_eq!(loader.statistics().live, 480);
/// drop(loader); // its chunk goes back and merges into a root chunk again
/// assert_eq!(space.statistics().in_use_chunks, 0);
/// space.verify()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Arena {
    manager: ChunkManager,
    kind: ArenaKind,
    chunks: Vec<ArenaChunk>,
    // The current chunk, as plain addresses for the bump fast path. With no
    // chunk all three are 0, so the fast path fails.
    chunk_start: usize,
    top: usize,
    committed_end: usize,
    /// First unit of the current chunk (index into the used table).
    unit: usize,
    /// Requests of 1..=max_fast bytes may take the fast path.
    max_fast: usize,
    free_blocks: FreeBlocks,
    live: usize,
    allocations: u64,
    enlargements: u64,
}

/// An arena's state, plain data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaStatistics {
    /// The loader kind.
    pub kind: ArenaKind,
    /// Class or non-class.
    pub metadata_type: MetadataType,
    /// Chunks held.
    pub chunks: usize,
    /// Bytes of those chunks.
    pub capacity: usize,
    /// Committed bytes of those chunks.
    pub committed: usize,
    /// Bytes handed out of them (live, deallocated or retired).
    pub used: usize,
    /// Bytes allocated and not deallocated.
    pub live: usize,
    /// Blocks on the free-block list.
    pub free_blocks: usize,
    /// Their bytes.
    pub free_block_bytes: usize,
    /// Allocations served.
    pub allocations: u64,
    /// In-place chunk enlargements.
    pub enlargements: u64,
    /// Level of each chunk, oldest first.
    pub levels: Vec<ChunkLevel>,
}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("kind", &self.kind)
            .field("space", &self.manager.metadata_type())
            .field("chunks", &self.chunks.len())
            .field("live", &self.live)
            .finish()
    }
}

#[inline]
const fn word_align(bytes: usize) -> usize {
    bytes.wrapping_add(WORD - 1) & !(WORD - 1)
}

impl Arena {
    /// An empty arena of `kind` over `manager`'s space. It takes its first
    /// chunk on its first allocation.
    pub fn new(manager: &ChunkManager, kind: ArenaKind) -> Arena {
        Arena {
            manager: manager.clone(),
            kind,
            chunks: Vec::new(),
            chunk_start: 0,
            top: 0,
            committed_end: 0,
            unit: 0,
            max_fast: manager.geometry().root_chunk_size(),
            free_blocks: FreeBlocks::default(),
            live: 0,
            allocations: 0,
            enlargements: 0,
        }
    }

    /// The loader kind.
    pub fn kind(&self) -> ArenaKind {
        self.kind
    }

    /// The space it allocates from.
    pub fn manager(&self) -> &ChunkManager {
        &self.manager
    }

    /// The chunks it holds, oldest first (the last one is current).
    pub fn chunks(&self) -> impl Iterator<Item = ChunkRef> + '_ {
        self.chunks.iter().map(|c| c.chunk)
    }

    /// Allocates `bytes` (rounded up to words) of committed, word-aligned
    /// metadata memory. Memory is not zeroed: a chunk reused without a purge
    /// in between keeps what its previous owner wrote.
    ///
    /// # Errors
    /// [`AllocError::ZeroSize`], [`AllocError::TooLarge`] (more than a root
    /// chunk), [`AllocError::Chunk`] when the space is exhausted (metaspace
    /// out of memory), [`AllocError::Commit`] when the OS refuses to commit.
    /// No memory is handed out then (the current chunk may have grown in
    /// place).
    #[inline]
    pub fn allocate(&mut self, bytes: usize) -> Result<Address, AllocError> {
        let size = word_align(bytes);
        if bytes.wrapping_sub(1) < self.max_fast && size <= self.committed_end - self.top {
            return Ok(self.bump(size));
        }
        self.allocate_slow(bytes)
    }

    #[cold]
    #[inline(never)]
    fn allocate_slow(&mut self, bytes: usize) -> Result<Address, AllocError> {
        if bytes == 0 {
            return Err(AllocError::ZeroSize);
        }
        if bytes > self.max_fast {
            return Err(AllocError::TooLarge {
                size: bytes,
                max: self.max_fast,
            });
        }
        let size = word_align(bytes);
        if !self.chunks.is_empty() && self.fit_current(size)? {
            return Ok(self.bump(size));
        }
        // The current chunk is full: reuse a free block before growing.
        if let Some(addr) = self.free_blocks.take(size) {
            self.live += size;
            self.allocations += 1;
            return Ok(Address::new(addr));
        }
        if !self.chunks.is_empty() && self.enlarge_current(size) && self.fit_current(size)? {
            return Ok(self.bump(size));
        }
        self.new_chunk(size)?;
        Ok(self.bump(size))
    }

    #[inline]
    fn bump(&mut self, size: usize) -> Address {
        debug_assert!(self.top + size <= self.committed_end);
        let at = self.top;
        self.top += size;
        self.live += size;
        self.allocations += 1;
        self.manager
            .set_used(self.unit, self.top - self.chunk_start);
        Address::new(at)
    }

    fn current(&self) -> ChunkRef {
        self.chunks.last().expect("a current chunk").chunk
    }

    /// Whether `size` fits the current chunk, committing more of it if needed.
    fn fit_current(&mut self, size: usize) -> Result<bool, AllocError> {
        let chunk = self.current();
        let end = self.top + size;
        if end > chunk.end().get() {
            return Ok(false);
        }
        if end > self.committed_end {
            let prefix = self
                .manager
                .commit_chunk(chunk, end - self.chunk_start)
                .map_err(AllocError::Commit)?;
            self.committed_end = self.chunk_start + prefix;
        }
        Ok(true)
    }

    /// The growth step the arena is at: every chunk taken and every
    /// enlargement is a step.
    fn growth_step(&self) -> usize {
        self.chunks.len() + self.enlargements as usize
    }

    /// Grows the current chunk into its free buddy while that makes room for
    /// `size` and the grown chunk is no larger than the current chunk plus
    /// the next one the policy would give (enlarging replaces taking it).
    fn enlarge_current(&mut self, size: usize) -> bool {
        let geo = self.manager.geometry();
        let mut grew = false;
        loop {
            let chunk = self.current();
            let next = self
                .kind
                .chunk_size(self.manager.metadata_type(), self.growth_step());
            let cap = (chunk.size() + next).max(size.next_power_of_two());
            if self.top + size <= chunk.end().get()
                || chunk.size() * 2 > cap
                || chunk.size() >= geo.root_chunk_size()
            {
                return grew;
            }
            match self.manager.enlarge_chunk(chunk) {
                Ok(bigger) => {
                    self.chunks.last_mut().expect("current").chunk = bigger;
                    self.enlargements += 1;
                    grew = true;
                }
                Err(_) => return grew,
            }
        }
    }

    /// Gets a new chunk for `size` and makes it current, retiring the old one
    /// (its committed remainder goes to the free-block list).
    fn new_chunk(&mut self, size: usize) -> Result<(), AllocError> {
        let geo = self.manager.geometry();
        let ty = self.manager.metadata_type();
        let need = geo
            .level_for(size)
            .expect("size checked against the root chunk");
        let growth = self.kind.chunk_size(ty, self.growth_step());
        let preferred = geo.level_for(growth.max(size)).unwrap_or(ChunkLevel::ROOT);
        let (chunk, prefix) = self
            .manager
            .get_chunk_committed(preferred, need, size)
            .map_err(AllocError::Chunk)?;
        if let Some(old) = self.chunks.last_mut() {
            if self.committed_end > self.top {
                self.free_blocks
                    .insert(self.top, self.committed_end - self.top);
                self.top = self.committed_end;
                self.manager
                    .set_used(self.unit, self.top - self.chunk_start);
            }
            old.top = self.top;
        }
        let start = chunk.start().get();
        self.chunks.push(ArenaChunk { chunk, top: start });
        self.chunk_start = start;
        self.top = start;
        self.committed_end = start + prefix;
        self.unit = self.manager.unit_of(&chunk);
        Ok(())
    }

    /// Gives back a block allocated here, for reuse by later allocations of
    /// this arena (metadata of a class whose loading failed, or redefined).
    ///
    /// # Errors
    /// [`DeallocError`] for a zero size, a misaligned block, a block not
    /// inside memory this arena handed out, or one overlapping a block
    /// already free. Nothing changes then.
    pub fn deallocate(&mut self, addr: Address, bytes: usize) -> Result<(), DeallocError> {
        if bytes == 0 {
            return Err(DeallocError::ZeroSize);
        }
        if bytes > self.max_fast {
            return Err(DeallocError::NotOwned { addr, size: bytes });
        }
        if !addr.is_aligned(WORD) {
            return Err(DeallocError::Misaligned { addr, size: bytes });
        }
        let size = word_align(bytes);
        let a = addr.get();
        let last = self.chunks.len().wrapping_sub(1);
        let owned = self.chunks.iter().enumerate().any(|(i, c)| {
            let top = if i == last { self.top } else { c.top };
            c.chunk.start().get() <= a && a.checked_add(size).is_some_and(|e| e <= top)
        });
        if !owned {
            return Err(DeallocError::NotOwned { addr, size: bytes });
        }
        if self.free_blocks.overlaps(a, size) {
            return Err(DeallocError::AlreadyFree { addr, size: bytes });
        }
        self.free_blocks.insert(a, size);
        self.live = self.live.saturating_sub(size);
        Ok(())
    }

    /// Whether `addr` lies in one of this arena's chunks.
    pub fn contains(&self, addr: Address) -> bool {
        self.chunks.iter().any(|c| c.chunk.range().contains(addr))
    }

    /// The free blocks, `(address, bytes)` in address order.
    pub fn free_blocks(&self) -> impl Iterator<Item = (Address, usize)> + '_ {
        self.free_blocks.iter().map(|(a, s)| (Address::new(a), s))
    }

    /// Statistics of this arena.
    pub fn statistics(&self) -> ArenaStatistics {
        let last = self.chunks.len().wrapping_sub(1);
        let committed = {
            let st = self.manager.lock();
            self.chunks
                .iter()
                .map(|c| {
                    let unit = self.manager.unit_of(&c.chunk) as u32;
                    (st.committed_units(unit, c.chunk.level()) as usize)
                        << self.manager.geometry().min_shift()
                })
                .sum()
        };
        ArenaStatistics {
            kind: self.kind,
            metadata_type: self.manager.metadata_type(),
            chunks: self.chunks.len(),
            capacity: self.chunks.iter().map(|c| c.chunk.size()).sum(),
            committed,
            used: self
                .chunks
                .iter()
                .enumerate()
                .map(|(i, c)| if i == last { self.top } else { c.top } - c.chunk.start().get())
                .sum(),
            live: self.live,
            free_blocks: self.free_blocks.len(),
            free_block_bytes: self.free_blocks.bytes(),
            allocations: self.allocations,
            enlargements: self.enlargements,
            levels: self.chunks.iter().map(|c| c.chunk.level()).collect(),
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let chunks: Vec<ChunkRef> = self.chunks.iter().map(|c| c.chunk).collect();
        self.manager.return_all(&chunks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_is_send() {
        fn send<T: Send>() {}
        send::<Arena>();
        send::<ChunkManager>();
        fn sync<T: Sync>() {}
        sync::<ChunkManager>();
    }
}
