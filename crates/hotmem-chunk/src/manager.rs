//! `ChunkManager`: one space (class or non-class), shared by every arena
//! of a runtime behind one lock.

use crate::error::{ChunkError, CommitChunkError, EnlargeError, GetChunkError, PurgeError};
use crate::map::SpaceMap;
use crate::occupancy::UnitState;
use crate::space::{Refusal, SpaceState, Taken};
use crate::stats::SpaceStatistics;
use crate::sync::{Arc, AtomicU32, Mutex, MutexGuard, Ordering, next_space_id};
use crate::{ChunkLevel, ChunkRef, Geometry, MetadataType, SpaceConfig, SpaceError, VerifyError};
use hotmem_os::{Address, MemRange, Memory, Reservation};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A buddy chunk allocator over one reserved space: hands out chunks of
/// power-of-two sizes (levels), splits larger free chunks on demand, merges
/// returned chunks with their free buddies, enlarges chunks in place,
/// commits on demand and uncommits on [`purge`](ChunkManager::purge).
///
/// Cloning is cheap: clones share the space (the runtime's class loaders all
/// use the same manager through their [`Arena`](crate::Arena)s). Every
/// operation takes the manager's lock; arenas take it only when they need a
/// new chunk or more committed memory.
#[derive(Clone)]
pub struct ChunkManager {
    shared: Arc<Shared>,
}

struct Shared {
    id: u32,
    ty: MetadataType,
    config: SpaceConfig,
    geo: Geometry,
    reservation: Reservation,
    state: Mutex<SpaceState>,
    /// Bytes used of each in-use chunk, at the chunk's first unit. Written by
    /// the arena that owns the chunk without the lock, read by statistics.
    used: Box<[AtomicU32]>,
}

/// What a purge did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// Free chunks that had memory uncommitted.
    pub chunks: usize,
    /// Bytes returned to the OS.
    pub bytes: usize,
}

impl fmt::Debug for ChunkManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkManager")
            .field("id", &self.shared.id)
            .field("type", &self.shared.ty)
            .field("range", &self.range())
            .field("coalescing", &self.shared.config.coalescing)
            .finish()
    }
}

impl ChunkManager {
    /// Reserves a space of `config.size` bytes through `memory`, aligned to
    /// the root chunk size and tagged [`MetadataType::mem_tag`]. Nothing is
    /// committed until chunks need it.
    ///
    /// # Errors
    /// [`SpaceError::Config`] for an invalid configuration,
    /// [`SpaceError::Reserve`] if the reservation fails.
    pub fn new(
        memory: &Memory,
        ty: MetadataType,
        config: SpaceConfig,
    ) -> Result<ChunkManager, SpaceError> {
        let geo = config.validate().map_err(SpaceError::Config)?;
        let reservation = memory
            .reserve_aligned(config.size, config.root_chunk_size, ty.mem_tag())
            .map_err(SpaceError::Reserve)?;
        let state = SpaceState::new(geo, config.coalescing, config.size, config.commit_granule);
        let used = (0..state.units()).map(|_| AtomicU32::new(0)).collect();
        Ok(ChunkManager {
            shared: Arc::new(Shared {
                id: next_space_id(),
                ty,
                config,
                geo,
                reservation,
                state: Mutex::new(state),
                used,
            }),
        })
    }

    /// Class or non-class.
    pub fn metadata_type(&self) -> MetadataType {
        self.shared.ty
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &SpaceConfig {
        &self.shared.config
    }

    /// Its chunk sizes.
    pub fn geometry(&self) -> Geometry {
        self.shared.geo
    }

    /// The reserved range.
    pub fn range(&self) -> MemRange {
        self.shared.reservation.range()
    }

    /// Whether `addr` lies in this space.
    pub fn contains(&self, addr: Address) -> bool {
        self.range().contains(addr)
    }

    /// Bytes reserved.
    pub fn reserved_bytes(&self) -> usize {
        self.shared.reservation.len()
    }

    /// Bytes committed right now (what NMT should see committed for this
    /// reservation).
    pub fn committed_bytes(&self) -> usize {
        self.lock().commit.committed_granules() * self.shared.config.commit_granule
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SpaceState> {
        self.shared.state.lock()
    }

    #[inline]
    pub(crate) fn unit_of(&self, chunk: &ChunkRef) -> usize {
        (chunk.start - self.range().start()) >> self.shared.geo.min_shift()
    }

    #[inline]
    pub(crate) fn set_used(&self, unit: usize, bytes: usize) {
        self.shared.used[unit].store(bytes as u32, Ordering::Relaxed);
    }

    fn handle(&self, unit: u32, level: ChunkLevel, serial: u32) -> ChunkRef {
        let geo = self.shared.geo;
        ChunkRef {
            space: self.shared.id,
            serial,
            start: self.range().start() + ((unit as usize) << geo.min_shift()),
            level,
            size: geo.size_of(level),
        }
    }

    /// Checks a handle and returns its first unit.
    fn resolve(&self, st: &SpaceState, chunk: &ChunkRef) -> Result<u32, ChunkError> {
        let geo = self.shared.geo;
        if chunk.space != self.shared.id || !self.contains(chunk.start) {
            return Err(ChunkError::Foreign { chunk: *chunk });
        }
        if !geo.contains(chunk.level) {
            return Err(ChunkError::BadLevel { level: chunk.level });
        }
        let offset = chunk.start - self.range().start();
        let size = geo.size_of(chunk.level);
        if chunk.size != size || offset & (size - 1) != 0 {
            return Err(ChunkError::NoSuchChunk { chunk: *chunk });
        }
        let unit = (offset >> geo.min_shift()) as u32;
        if unit >= st.carved {
            return Err(ChunkError::NoSuchChunk { chunk: *chunk });
        }
        match st.occ.state(unit) {
            UnitState::Inner | UnitState::Free => Err(ChunkError::NotInUse { chunk: *chunk }),
            UnitState::InUse if st.occ.serial(unit) != chunk.serial => {
                Err(ChunkError::Stale { chunk: *chunk })
            }
            UnitState::InUse if st.occ.level(unit) != chunk.level => {
                Err(ChunkError::NoSuchChunk { chunk: *chunk })
            }
            UnitState::InUse => Ok(unit),
        }
    }

    /// Gets a chunk of level `preferred`, or, if none can be had, a smaller
    /// one down to level `max_level` (`preferred <= max_level`; a higher
    /// level is a smaller chunk), with its first `min_committed` bytes
    /// committed.
    ///
    /// In order: a free chunk of the preferred level; (buddy policy) the
    /// smallest larger free chunk, split, the splinters going to the free
    /// lists; a new chunk carved from untouched space; a smaller free chunk.
    ///
    /// # Errors
    /// [`GetChunkError::BadLevel`] / [`GetChunkError::BadRequest`] for
    /// arguments out of range, [`GetChunkError::Exhausted`] when the space
    /// has no acceptable chunk, [`GetChunkError::Commit`] when the OS refuses
    /// the commit. The chunk structure is unchanged in every case.
    pub fn get_chunk(
        &self,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<ChunkRef, GetChunkError> {
        self.get_chunk_then(preferred, max_level, min_committed, |_, _| ())
            .map(|(chunk, ())| chunk)
    }

    /// [`get_chunk`](Self::get_chunk), also returning the committed prefix.
    pub(crate) fn get_chunk_committed(
        &self,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<(ChunkRef, usize), GetChunkError> {
        self.get_chunk_then(preferred, max_level, min_committed, |st, t| {
            st.committed_prefix(t.unit, t.level)
        })
    }

    /// Gets a chunk and runs `then` on it under the same lock.
    fn get_chunk_then<R>(
        &self,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
        then: impl FnOnce(&SpaceState, &Taken) -> R,
    ) -> Result<(ChunkRef, R), GetChunkError> {
        let geo = self.shared.geo;
        for level in [preferred, max_level] {
            if !geo.contains(level) {
                return Err(GetChunkError::BadLevel { level });
            }
        }
        if preferred > max_level || min_committed > geo.size_of(max_level) {
            return Err(GetChunkError::BadRequest {
                preferred,
                max_level,
                min_committed,
            });
        }
        let mut st = self.lock();
        match st.take(
            &self.shared.reservation,
            preferred,
            max_level,
            min_committed,
        ) {
            Ok(Some(t)) => Ok((self.handle(t.unit, t.level, t.serial), then(&st, &t))),
            Ok(None) => Err(GetChunkError::Exhausted {
                space: self.shared.ty,
                max_level,
            }),
            Err(e) => Err(GetChunkError::Commit(e)),
        }
    }

    /// Returns a chunk: it merges with its buddy while the buddy is free and
    /// whole (buddy policy) and goes on the free list of the resulting level.
    ///
    /// # Errors
    /// [`ChunkError`] for a handle from another space, a level that does not
    /// exist, no such chunk, a chunk that is already free (double return) or
    /// a stale handle. Nothing changes then.
    pub fn return_chunk(&self, chunk: ChunkRef) -> Result<(), ChunkError> {
        let mut st = self.lock();
        let unit = self.resolve(&st, &chunk)?;
        self.set_used(unit as usize, 0);
        st.give_back(unit, chunk.level);
        Ok(())
    }

    /// Returns several chunks under one lock (an arena's drop).
    pub(crate) fn return_all(&self, chunks: &[ChunkRef]) {
        let mut st = self.lock();
        for chunk in chunks {
            match self.resolve(&st, chunk) {
                Ok(unit) => {
                    self.set_used(unit as usize, 0);
                    st.give_back(unit, chunk.level);
                }
                Err(e) => debug_assert!(false, "arena returned a bad chunk: {e}"),
            }
        }
    }

    /// Grows a chunk in place into its free upper buddy, doubling it without
    /// moving it. Returns the new handle (the old one no longer matches).
    ///
    /// # Errors
    /// [`EnlargeError`] if the handle is bad, the space does not coalesce,
    /// the chunk is a root chunk or the upper buddy, or the buddy is not a
    /// free whole chunk. Nothing changes then.
    pub fn enlarge_chunk(&self, chunk: ChunkRef) -> Result<ChunkRef, EnlargeError> {
        let mut st = self.lock();
        let unit = self.resolve(&st, &chunk).map_err(EnlargeError::Chunk)?;
        let level = st.enlarge(unit, chunk.level).map_err(|r| match r {
            Refusal::Disabled => EnlargeError::Disabled,
            Refusal::Root => EnlargeError::Root,
            Refusal::NotLeader => EnlargeError::NotLeader,
            Refusal::BuddyNotFree => EnlargeError::BuddyNotFree,
        })?;
        Ok(self.handle(unit, level, chunk.serial))
    }

    /// Makes sure the first `bytes` of the chunk are committed (whole commit
    /// granules; for a chunk smaller than a granule, its granule). Returns
    /// how many bytes from the chunk's start are committed now.
    ///
    /// # Errors
    /// [`CommitChunkError::Chunk`] for a bad handle,
    /// [`CommitChunkError::BeyondChunk`] if `bytes` exceeds the chunk,
    /// [`CommitChunkError::Os`] if the OS refuses.
    pub fn commit_chunk(&self, chunk: ChunkRef, bytes: usize) -> Result<usize, CommitChunkError> {
        let mut st = self.lock();
        let unit = self.resolve(&st, &chunk).map_err(CommitChunkError::Chunk)?;
        if bytes > chunk.size {
            return Err(CommitChunkError::BeyondChunk {
                bytes,
                size: chunk.size,
            });
        }
        if bytes > 0 {
            st.commit_prefix(&self.shared.reservation, unit, chunk.level, bytes)
                .map_err(CommitChunkError::Os)?;
        }
        Ok(st.committed_prefix(unit, chunk.level))
    }

    /// Bytes from the chunk's start committed without a gap.
    ///
    /// # Errors
    /// [`ChunkError`] for a bad handle.
    pub fn committed_prefix(&self, chunk: ChunkRef) -> Result<usize, ChunkError> {
        let st = self.lock();
        let unit = self.resolve(&st, &chunk)?;
        Ok(st.committed_prefix(unit, chunk.level))
    }

    /// Uncommits the memory of every free chunk of at least a commit granule:
    /// it goes back to the OS (resident size drops, a later use reads zero).
    ///
    /// # Errors
    /// [`PurgeError`] if an uncommit fails; what was uncommitted before stays
    /// uncommitted and the structure stays consistent.
    pub fn purge(&self) -> Result<PurgeReport, PurgeError> {
        let mut st = self.lock();
        let (chunks, bytes) = st.purge(&self.shared.reservation).map_err(PurgeError)?;
        Ok(PurgeReport { chunks, bytes })
    }

    /// Statistics like `jcmd VM.metaspace`: per level, totals, counters.
    pub fn statistics(&self) -> SpaceStatistics {
        let st = self.lock();
        SpaceStatistics::collect(self.shared.ty, &self.shared.config, &st, &self.shared.used)
    }

    /// An ASCII map of the space, at most 64 lines of 64 characters.
    pub fn map(&self) -> SpaceMap {
        let geo = self.shared.geo;
        let mut cell = geo.min_chunk_size();
        while self.reserved_bytes() / cell > 64 * 64 {
            cell *= 2;
        }
        self.map_with_cell(cell)
    }

    /// An ASCII map with one character per `cell_bytes` (rounded up to a
    /// power of two of at least the smallest chunk).
    pub fn map_with_cell(&self, cell_bytes: usize) -> SpaceMap {
        let cell = cell_bytes
            .max(self.shared.geo.min_chunk_size())
            .next_power_of_two();
        let st = self.lock();
        SpaceMap::draw(self.shared.ty, self.range(), &st, cell)
    }

    /// Checks every invariant: chunks tile the carved space exactly, each
    /// aligned to its size; free chunks have used 0 and sit on the list of
    /// their level, and every list entry is such a chunk; used <= committed
    /// <= size; (buddy policy) no free chunk has a free buddy of its level;
    /// capacity is conserved.
    ///
    /// # Errors
    /// The first broken invariant found.
    pub fn verify(&self) -> Result<(), VerifyError> {
        let st = self.lock();
        st.verify(&self.shared.used)
    }
}
