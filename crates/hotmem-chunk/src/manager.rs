//! `ChunkManager`: one space (class or non-class), shared by every arena
//! of a runtime behind one lock.

use crate::cache::{ArenaCache, ChunkCache, MAX_CACHED};
use crate::error::{
    ChunkError, CommitChunkError, EnlargeError, GetChunkError, PurgeError, ReturnChunkError,
};
use crate::lock::{SpinGuard, SpinLock};
use crate::map::SpaceMap;
use crate::occupancy::UnitState;
use crate::space::{Refusal, SpaceState, Taken};
use crate::stats::SpaceStatistics;
use crate::sync::{Arc, CounterU32, CounterU64, Ordering};
use crate::table::LazyTable;
use crate::{Chunk, ChunkLevel, Geometry, MetadataType, SpaceConfig, SpaceError, VerifyError};
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

/// A process-wide identity for each space, so that a chunk from one space
/// is recognised as foreign by another. 64 bits: never reused.
fn next_space_id() -> u64 {
    static NEXT: CounterU64 = CounterU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

struct Shared {
    id: u64,
    ty: MetadataType,
    config: SpaceConfig,
    geo: Geometry,
    reservation: Reservation,
    state: SpinLock<SpaceState>,
    /// Bytes used of each in-use chunk, at the chunk's first unit. Written by
    /// the arena that owns the chunk without the lock, read by statistics.
    /// Accessible as far as the space is carved (it grows under the lock).
    used: LazyTable<CounterU32>,
    /// Dropped arenas' small chunks ([`ArenaCache::Sharded`]).
    cache: Option<ChunkCache>,
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
    /// The space's per-unit side tables (chunk headers and free-list links,
    /// used bytes, committed granules) are reserved through `memory` too,
    /// tagged [`MemTag::INTERNAL`](hotmem_os::MemTag::INTERNAL), and committed
    /// only as far as the space is carved: creating a space costs the same
    /// whatever its size.
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
        let state = SpaceState::new(
            memory,
            geo,
            config.coalescing,
            config.size,
            config.commit_granule,
        )
        .map_err(SpaceError::Reserve)?;
        let used = LazyTable::new(memory, state.units() as usize).map_err(SpaceError::Reserve)?;
        Ok(ChunkManager {
            shared: Arc::new(Shared {
                id: next_space_id(),
                ty,
                config,
                geo,
                reservation,
                state: SpinLock::new(state),
                used,
                cache: match config.arena_cache {
                    ArenaCache::Off => None,
                    ArenaCache::Sharded => Some(ChunkCache::new()),
                },
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

    /// The side tables' reserved ranges (chunk headers, used bytes,
    /// committed granules): bookkeeping outside the space, tagged
    /// [`MemTag::INTERNAL`](hotmem_os::MemTag::INTERNAL).
    pub fn side_table_ranges(&self) -> [MemRange; 3] {
        let st = self.lock();
        [
            st.occ.table().range(),
            self.shared.used.range(),
            st.commit.table().range(),
        ]
    }

    /// Bytes of the side tables committed right now (they grow with the
    /// carved part of the space, never with its reserved size).
    pub fn side_table_committed_bytes(&self) -> usize {
        let st = self.lock();
        st.occ.table().committed_bytes()
            + self.shared.used.committed_bytes()
            + st.commit.table().committed_bytes()
    }

    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, SpaceState> {
        self.shared.state.lock()
    }

    /// Records the bytes used of the in-use chunk whose first unit is `unit`.
    ///
    /// # Panics
    /// If `unit` lies beyond the carved space (never for a chunk of ours).
    #[inline]
    pub(crate) fn set_used(&self, unit: u32, bytes: usize) {
        self.shared.used.as_slice()[unit as usize].store(bytes as u32, Ordering::Relaxed);
    }

    /// Resets the used bytes of a chunk being returned. Only arenas record
    /// use, so a chunk taken with `get_chunk` still reads 0: skip the store.
    #[inline]
    fn clear_used(&self, unit: u32) {
        let used = &self.shared.used.as_slice()[unit as usize];
        if used.load(Ordering::Relaxed) != 0 {
            used.store(0, Ordering::Relaxed);
        }
    }

    #[inline]
    fn handle(&self, t: &Taken) -> Chunk {
        let geo = &self.shared.geo;
        Chunk {
            space: self.shared.id,
            serial: t.serial,
            unit: t.unit,
            start: self.range().start() + ((t.unit as usize) << geo.min_shift()),
            level: t.level,
            size: geo.size_of(t.level),
        }
    }

    /// Checks a handle against the live entry and returns its first unit.
    ///
    /// The fast path accepts a handle of this space whose unit is carved and
    /// holds exactly the header issued with it (in use, same level, same
    /// serial). That is the whole check: the structure keeps every header at
    /// a unit aligned to its level, and every [`Chunk`] keeps its start and
    /// size consistent with its unit and level (see its fields), so the
    /// slow path, which classifies what is wrong, would accept it too.
    #[inline]
    fn resolve(&self, st: &SpaceState, chunk: &Chunk) -> Result<u32, ChunkError> {
        if chunk.space == self.shared.id
            && chunk.unit < st.carved
            && st.occ.is_in_use_as(chunk.unit, chunk.level, chunk.serial)
        {
            debug_assert_eq!(self.resolve_slow(st, chunk), Ok(chunk.unit));
            return Ok(chunk.unit);
        }
        self.resolve_slow(st, chunk)
    }

    /// [`resolve`](Self::resolve), checking every field of the handle in
    /// turn to say what is wrong with it.
    #[cold]
    #[inline(never)]
    fn resolve_slow(&self, st: &SpaceState, chunk: &Chunk) -> Result<u32, ChunkError> {
        let geo = self.shared.geo;
        let view = chunk.view();
        if chunk.space != self.shared.id || !self.contains(chunk.start) {
            return Err(ChunkError::Foreign { chunk: view });
        }
        if !geo.contains(chunk.level) {
            return Err(ChunkError::BadLevel { level: chunk.level });
        }
        let offset = chunk.start - self.range().start();
        let size = geo.size_of(chunk.level);
        let unit = chunk.unit;
        if chunk.size != size
            || offset & (size - 1) != 0
            || (offset >> geo.min_shift()) != unit as usize
            || unit >= st.carved
        {
            return Err(ChunkError::NoSuchChunk { chunk: view });
        }
        match st.occ.state(unit) {
            UnitState::Inner | UnitState::Free => Err(ChunkError::NotInUse { chunk: view }),
            UnitState::InUse if st.occ.serial(unit) != chunk.serial => {
                Err(ChunkError::Stale { chunk: view })
            }
            UnitState::InUse if st.occ.level(unit) != chunk.level => {
                Err(ChunkError::NoSuchChunk { chunk: view })
            }
            UnitState::InUse => Ok(unit),
        }
    }

    /// Checks that each of `chunks`, held by one owner, is the live entry
    /// it was handed out as (so no other owner was handed it since).
    pub(crate) fn check_owned<'a>(
        &self,
        chunks: impl Iterator<Item = &'a Chunk>,
    ) -> Result<(), VerifyError> {
        let st = self.lock();
        for chunk in chunks {
            if let Err(e) = self.resolve(&st, chunk) {
                return Err(VerifyError::new(
                    "a chunk has one owner",
                    format!("{chunk} held by this owner is not its live entry: {e}"),
                ));
            }
        }
        Ok(())
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
    ) -> Result<Chunk, GetChunkError> {
        // The common request (existing levels in order, nothing to commit)
        // served from the free lists is the whole of this function; every
        // other case goes to the general path, out of line, so that this
        // one stays small.
        let geo = &self.shared.geo;
        if min_committed == 0 && preferred <= max_level && geo.contains(max_level) {
            let taken = self.lock().take_free(preferred);
            if let Some(t) = taken {
                return Ok(self.handle(&t));
            }
        }
        self.get_chunk_general(preferred, max_level, min_committed)
    }

    /// [`get_chunk`](Self::get_chunk) in every case: checks, carving,
    /// committing, flushing the arena cache, errors. Out of line and
    /// marked cold (once a space is carved, most requests are served from
    /// its free lists), so that `get_chunk` itself needs few registers.
    #[cold]
    #[inline(never)]
    fn get_chunk_general(
        &self,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<Chunk, GetChunkError> {
        self.get_chunk_then(preferred, max_level, min_committed, |_, _| ())
            .map(|(chunk, ())| chunk)
    }

    /// [`get_chunk`](Self::get_chunk), also returning the committed prefix.
    pub(crate) fn get_chunk_committed(
        &self,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<(Chunk, usize), GetChunkError> {
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
    ) -> Result<(Chunk, R), GetChunkError> {
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
        let take = |st: &mut SpaceState| {
            st.take(
                &self.shared.reservation,
                &self.shared.used,
                preferred,
                max_level,
                min_committed,
            )
        };
        let mut st = self.lock();
        let mut taken = take(&mut st);
        if matches!(taken, Ok(None)) && self.shared.cache.is_some() {
            // Cached chunks are free memory in all but name: merge them back
            // and look again before saying the space is exhausted.
            drop(st);
            let flushed = self.flush_cache();
            st = self.lock();
            if flushed > 0 {
                taken = take(&mut st);
            }
        }
        match taken {
            Ok(Some(t)) => Ok((self.handle(&t), then(&st, &t))),
            Ok(None) => Err(GetChunkError::Exhausted {
                space: self.shared.ty,
                max_level,
            }),
            Err(e) => Err(GetChunkError::Commit(e)),
        }
    }

    /// Returns a chunk, consuming its handle: it merges with its buddy while
    /// the buddy is free and whole (buddy policy) and goes on the free list
    /// of the resulting level. Only the owner of a chunk can return it: the
    /// handle is unique, and introspection ([`Arena::chunks`](crate::Arena::chunks))
    /// shows [`ChunkView`](crate::ChunkView)s, which cannot be returned.
    ///
    /// # Errors
    /// [`ReturnChunkError`], handing the chunk back, for a chunk of another
    /// space (or a handle this space no longer honours). Nothing changes
    /// then.
    pub fn return_chunk(&self, chunk: Chunk) -> Result<(), ReturnChunkError> {
        let mut st = self.lock();
        let unit = match self.resolve(&st, &chunk) {
            Ok(unit) => unit,
            Err(reason) => return Err(ReturnChunkError { chunk, reason }),
        };
        self.clear_used(unit);
        st.give_back(unit, chunk.level);
        Ok(())
    }

    /// Returns several chunks under one lock (an arena's drop); no lock for
    /// none.
    pub(crate) fn return_all(&self, chunks: impl Iterator<Item = Chunk>) {
        let mut chunks = chunks.peekable();
        if chunks.peek().is_none() {
            return;
        }
        let mut st = self.lock();
        for chunk in chunks {
            match self.resolve(&st, &chunk) {
                Ok(unit) => {
                    self.clear_used(unit);
                    st.give_back(unit, chunk.level);
                }
                // Leaving a chunk in use is safe; returning a chunk that is
                // not ours would not be.
                Err(e) => debug_assert!(false, "arena returned a bad chunk: {e}"),
            }
        }
    }

    /// Grows a chunk in place into its free upper buddy, doubling it without
    /// moving it; the handle follows (same start, the next larger level).
    ///
    /// # Errors
    /// [`EnlargeError`] if the handle is not accepted, the space does not
    /// coalesce, the chunk is a root chunk or the upper buddy, or the buddy
    /// is not a free whole chunk. Nothing changes then, the handle included.
    pub fn enlarge_chunk(&self, chunk: &mut Chunk) -> Result<(), EnlargeError> {
        let mut st = self.lock();
        let unit = self.resolve(&st, chunk).map_err(EnlargeError::Chunk)?;
        let level = st.enlarge(unit, chunk.level).map_err(|r| match r {
            Refusal::Disabled => EnlargeError::Disabled,
            Refusal::Root => EnlargeError::Root,
            Refusal::NotLeader => EnlargeError::NotLeader,
            Refusal::BuddyNotFree => EnlargeError::BuddyNotFree,
        })?;
        chunk.level = level;
        chunk.size = self.shared.geo.size_of(level);
        Ok(())
    }

    /// Makes sure the first `bytes` of the chunk are committed (whole commit
    /// granules; for a chunk smaller than a granule, its granule). Returns
    /// how many bytes from the chunk's start are committed now.
    ///
    /// # Errors
    /// [`CommitChunkError::Chunk`] for a bad handle,
    /// [`CommitChunkError::BeyondChunk`] if `bytes` exceeds the chunk,
    /// [`CommitChunkError::Os`] if the OS refuses.
    pub fn commit_chunk(&self, chunk: &Chunk, bytes: usize) -> Result<usize, CommitChunkError> {
        let mut st = self.lock();
        let unit = self.resolve(&st, chunk).map_err(CommitChunkError::Chunk)?;
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
    pub fn committed_prefix(&self, chunk: &Chunk) -> Result<usize, ChunkError> {
        let st = self.lock();
        let unit = self.resolve(&st, chunk)?;
        Ok(st.committed_prefix(unit, chunk.level))
    }

    /// Uncommits the memory of every free chunk of at least a commit granule:
    /// it goes back to the OS (resident size drops, a later use reads zero).
    ///
    /// # Errors
    /// [`PurgeError`] if an uncommit fails; what was uncommitted before stays
    /// uncommitted and the structure stays consistent.
    ///
    /// Cached arena chunks ([`ArenaCache::Sharded`]) are flushed first, so
    /// they are purged too.
    pub fn purge(&self) -> Result<PurgeReport, PurgeError> {
        self.flush_cache();
        let mut st = self.lock();
        let (chunks, bytes) = st.purge(&self.shared.reservation).map_err(PurgeError)?;
        Ok(PurgeReport { chunks, bytes })
    }

    /// Statistics like `jcmd VM.metaspace`: per level, totals, counters.
    pub fn statistics(&self) -> SpaceStatistics {
        let cached = self.shared.cache.as_ref().map_or((0, 0), ChunkCache::held);
        let st = self.lock();
        let mut stats = SpaceStatistics::collect(
            self.shared.ty,
            &self.shared.config,
            &st,
            self.shared.used.as_slice(),
        );
        (stats.cached_chunks, stats.cached_bytes) = cached;
        stats
    }

    /// Returns every chunk that dropped arenas left in the arena cache
    /// ([`ArenaCache::Sharded`]) to the free lists, where they merge with
    /// their buddies; returns how many. The space does this itself before it
    /// reports exhaustion and before a purge; call it before reading
    /// statistics that should show the space as the arenas alone hold it.
    pub fn flush_cache(&self) -> usize {
        let Some(cache) = &self.shared.cache else {
            return 0;
        };
        let chunks = cache.drain();
        let n = chunks.len();
        self.return_all(chunks.into_iter());
        n
    }

    /// Keeps a dropping arena's chunk for the next arena, if the space has
    /// an arena cache, the chunk is small, the arena knew it to be committed
    /// whole (`committed` bytes from its start) and the calling thread's
    /// shard has room; otherwise hands it back.
    pub(crate) fn cache_put(&self, chunk: Chunk, committed: usize) -> Option<Chunk> {
        match &self.shared.cache {
            Some(cache) if chunk.size <= MAX_CACHED && committed >= chunk.size => {
                self.clear_used(chunk.unit);
                cache.put(chunk)
            }
            _ => Some(chunk),
        }
    }

    /// A cached chunk, committed whole, from the calling thread's shard:
    /// the smallest of `size` bytes up to two levels larger (an arena that
    /// filled a chunk of the size it now asks for grew it in place, so
    /// dropped arenas leave larger chunks than the ones new arenas ask for;
    /// an arena would grow into such a chunk too).
    pub(crate) fn cache_take(&self, size: usize) -> Option<Chunk> {
        self.shared
            .cache
            .as_ref()?
            .take(size, size.saturating_mul(4))
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

    /// An ASCII map with one character per `cell_bytes`, rounded up to a
    /// power of two of at least the smallest chunk, and up further if the
    /// map would have more than [`SpaceMap::MAX_CELLS`] characters.
    pub fn map_with_cell(&self, cell_bytes: usize) -> SpaceMap {
        let reserved = self.reserved_bytes();
        let max_cell = reserved.next_power_of_two();
        let floor = self.shared.geo.min_chunk_size().max(
            reserved
                .div_ceil(SpaceMap::MAX_CELLS)
                .checked_next_power_of_two()
                .unwrap_or(max_cell),
        );
        let cell = cell_bytes
            .max(floor)
            .checked_next_power_of_two()
            .unwrap_or(max_cell)
            .min(max_cell);
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
        st.verify(self.shared.used.as_slice())
    }
}
