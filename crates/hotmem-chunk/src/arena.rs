//! `Arena`: the metadata allocator of one class loader.

use crate::error::{AllocError, DeallocError};
use crate::freeblocks::FreeBlocks;
use crate::{ArenaKind, Chunk, ChunkLevel, ChunkManager, ChunkView, MetadataType, VerifyError};
use hotmem_os::Address;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Metadata is allocated in words.
pub const WORD: usize = 8;

#[derive(Debug)]
struct ArenaChunk {
    /// Owned: only the arena returns it (when it is dropped).
    chunk: Chunk,
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
    unit: u32,
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

/// `bytes` rounded up to words. Wraps for sizes within a word of
/// `usize::MAX`: every caller checks `bytes` against the root chunk size
/// first (the fast path before using the result).
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

    /// The chunks it holds, oldest first (the last one is current), as
    /// read-only views: the arena alone returns its chunks.
    pub fn chunks(&self) -> impl Iterator<Item = ChunkView> + '_ {
        self.chunks.iter().map(|c| c.chunk.view())
    }

    /// Checks the arena against its space: every chunk it holds is the live
    /// in-use entry it was handed out as (no other owner was handed it
    /// since), its chunks do not overlap, and its bump pointer and free
    /// blocks lie inside them.
    ///
    /// # Errors
    /// The first broken invariant found.
    pub fn verify(&self) -> Result<(), VerifyError> {
        self.manager
            .check_owned(self.chunks.iter().map(|c| &c.chunk))?;
        let mut ranges: Vec<(usize, usize)> = self
            .chunks
            .iter()
            .map(|c| (c.chunk.start().get(), c.chunk.end().get()))
            .collect();
        ranges.sort_unstable();
        if let Some(w) = ranges.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(VerifyError::new(
                "an arena's chunks are disjoint",
                format!(
                    "{:#x}..{:#x} overlaps {:#x}..{:#x}",
                    w[0].0, w[0].1, w[1].0, w[1].1
                ),
            ));
        }
        if let Some(c) = self.chunks.last() {
            let (start, end) = (c.chunk.start().get(), c.chunk.end().get());
            if self.chunk_start != start
                || !(start <= self.top
                    && self.top <= self.committed_end
                    && self.committed_end <= end)
            {
                return Err(VerifyError::new(
                    "start <= top <= committed <= end",
                    format!(
                        "current {} with top {:#x}, committed end {:#x}",
                        c.chunk, self.top, self.committed_end
                    ),
                ));
            }
        }
        if let Some((addr, size)) = self.free_blocks.iter().find(|&(a, s)| {
            !ranges
                .iter()
                .any(|&(start, end)| start <= a && a.checked_add(s).is_some_and(|e| e <= end))
        }) {
            return Err(VerifyError::new(
                "free blocks lie in the arena's chunks",
                format!("block {addr:#x} of {size} bytes"),
            ));
        }
        Ok(())
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

    fn current(&self) -> &Chunk {
        &self.chunks.last().expect("a current chunk").chunk
    }

    /// Whether `size` fits the current chunk, committing more of it if needed.
    fn fit_current(&mut self, size: usize) -> Result<bool, AllocError> {
        let chunk_end = self.current().end().get();
        let Some(end) = self.top.checked_add(size).filter(|&e| e <= chunk_end) else {
            return Ok(false);
        };
        if end > self.committed_end {
            let prefix = self
                .manager
                .commit_chunk(self.current(), end - self.chunk_start)
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
            // `size` is at most a root chunk (checked by the caller).
            let cap = (chunk.size() + next).max(size.next_power_of_two());
            if self.top + size <= chunk.end().get()
                || chunk.size() * 2 > cap
                || chunk.size() >= geo.root_chunk_size()
            {
                return grew;
            }
            let current = &mut self.chunks.last_mut().expect("current").chunk;
            match self.manager.enlarge_chunk(current) {
                Ok(()) => {
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
        // A chunk a dropped arena left in this thread's cache shard is
        // committed whole, and taking it needs no lock of the space.
        let (chunk, prefix) = match self.manager.cache_take(geo.size_of(preferred)) {
            Some(chunk) => {
                let size = chunk.size();
                (chunk, size)
            }
            None => self
                .manager
                .get_chunk_committed(preferred, need, size)
                .map_err(AllocError::Chunk)?,
        };
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
        self.unit = chunk.unit;
        self.chunks.push(ArenaChunk { chunk, top: start });
        self.chunk_start = start;
        self.top = start;
        self.committed_end = start + prefix;
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
                    (st.committed_units(c.chunk.unit, c.chunk.level()) as usize)
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
        // What the arena knows to be committed of each chunk: up to its
        // committed end for the current one; up to its top for a retired one
        // (retiring moved the top to the committed end).
        let last = self.chunks.len().wrapping_sub(1);
        let committed_end = self.committed_end;
        let manager = &self.manager;
        let rest = self.chunks.drain(..).enumerate().filter_map(|(i, c)| {
            let end = if i == last { committed_end } else { c.top };
            let committed = end.saturating_sub(c.chunk.start().get());
            manager.cache_put(c.chunk, committed)
        });
        // A `Vec` only if something is left: the common case caches all.
        let rest: Vec<Chunk> = rest.collect();
        manager.return_all(rest.into_iter());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SpaceConfig, VerifyError};
    use hotmem_os::Memory;

    /// Issue 12: through the old API, `Arena::chunks()` plus `return_chunk`
    /// freed a live arena's chunk and a second arena was handed the same
    /// memory, with `verify()` silent. The public API can no longer express
    /// that (views cannot be returned, see the compile_fail doctests on
    /// `ChunkView` and `Chunk`); here a crate-internal forged handle does it
    /// behind the arena's back, and `Arena::verify` reports the chunk that
    /// now has two owners.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri"
    )]
    fn a_chunk_handed_to_two_owners_is_reported() {
        let space = ChunkManager::new(
            &Memory::new(),
            MetadataType::Class,
            SpaceConfig::with_size(8 << 20),
        )
        .unwrap();
        let mut a = Arena::new(&space, ArenaKind::Reflection);
        a.allocate(64).unwrap();
        a.verify().unwrap();
        let view = a.chunks().next().unwrap();
        let forged = a.chunks[0].chunk.forge();
        space.return_chunk(forged).unwrap();
        let mut b = Arena::new(&space, ArenaKind::Reflection);
        b.allocate(64).unwrap();
        assert_eq!(b.chunks().next().unwrap(), view, "b got a's chunk");
        b.verify().unwrap();
        let e: VerifyError = a.verify().unwrap_err();
        assert_eq!(e.invariant, "a chunk has one owner", "{e}");
        // Keep a's drop from returning b's chunk (it refuses, and in debug
        // builds asserts): give a a fresh handle list.
        a.chunks.clear();
        drop(b);
        space.verify().unwrap();
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "reserves real memory (mmap PROT_NONE, mprotect): not supported by Miri"
    )]
    fn huge_requests_are_typed_errors() {
        let space = ChunkManager::new(
            &Memory::new(),
            MetadataType::NonClass,
            SpaceConfig::with_size(8 << 20),
        )
        .unwrap();
        let mut a = Arena::new(&space, ArenaKind::Standard);
        let before = a.statistics();
        for bytes in [
            usize::MAX,
            usize::MAX - 6,
            usize::MAX / 2 + 1,
            (4 << 20) + 1,
        ] {
            assert!(
                matches!(a.allocate(bytes), Err(AllocError::TooLarge { .. })),
                "{bytes}"
            );
            assert!(matches!(
                a.deallocate(Address::new(usize::MAX - 7), bytes),
                Err(DeallocError::NotOwned { .. })
            ));
        }
        a.allocate(8).unwrap();
        let p = Address::new(usize::MAX & !7);
        assert!(matches!(
            a.deallocate(p, 8),
            Err(DeallocError::NotOwned { .. })
        ));
        assert_eq!(a.statistics().allocations, before.allocations + 1);
        a.verify().unwrap();
        space.verify().unwrap();
    }

    #[test]
    fn arena_is_send() {
        fn send<T: Send>() {}
        send::<Arena>();
        send::<ChunkManager>();
        fn sync<T: Sync>() {}
        sync::<ChunkManager>();
    }
}
