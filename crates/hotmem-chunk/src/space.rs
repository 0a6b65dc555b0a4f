//! The algorithm behind a [`ChunkManager`](crate::ChunkManager): getting a
//! chunk (free list, split, carve), returning one (merge with free buddies),
//! enlarging in place, committing on demand and purging. Runs under the
//! manager's lock; knows nothing about locking or handles.

use crate::counters::ChunkCounters;
use crate::freelist::{End, FreeLists};
use crate::granules::CommitMap;
use crate::occupancy::{Occupancy, SERIAL_BITS, UnitState};
use crate::sync::CounterU32;
use crate::table::LazyTable;
use crate::{ChunkLevel, Coalescing, Geometry};
use hotmem_os::{CommitError, Memory, Reservation, ReserveError};

/// The mutable state of one space.
pub(crate) struct SpaceState {
    pub(crate) geo: Geometry,
    pub(crate) coalescing: Coalescing,
    /// Bytes per commit granule.
    pub(crate) granule_bytes: usize,
    /// Units `[0, carved)` are tiled by chunks; the rest is untouched.
    pub(crate) carved: u32,
    pub(crate) occ: Occupancy,
    pub(crate) free: FreeLists,
    pub(crate) commit: CommitMap,
    pub(crate) counters: ChunkCounters,
    next_serial: u32,
}

/// Where a chunk for a request comes from, decided before anything changes.
#[derive(Copy, Clone, Debug)]
enum Source {
    /// The first chunk of a free list, split down if larger.
    FreeList { unit: u32, level: ChunkLevel },
    /// Untouched space: a maximal chunk (buddy) or an aligned chunk after
    /// alignment chunks (baseline), split down if larger.
    Carve { unit: u32, level: ChunkLevel },
}

/// A chunk taken from the space, not yet marked in use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    pub(crate) unit: u32,
    pub(crate) level: ChunkLevel,
    pub(crate) serial: u32,
}

impl SpaceState {
    /// The state of a fresh space of `size` bytes: its side tables are
    /// reserved through `memory` and nothing is committed.
    pub(crate) fn new(
        memory: &Memory,
        geo: Geometry,
        coalescing: Coalescing,
        size: usize,
        granule_bytes: usize,
    ) -> Result<SpaceState, ReserveError> {
        let units = size >> geo.min_shift();
        let units_shift = (granule_bytes >> geo.min_shift()).trailing_zeros();
        Ok(SpaceState {
            geo,
            coalescing,
            granule_bytes,
            carved: 0,
            occ: Occupancy::new(memory, units)?,
            free: FreeLists::new(geo.levels()),
            commit: CommitMap::new(memory, size / granule_bytes, units_shift)?,
            counters: ChunkCounters::default(),
            next_serial: 1,
        })
    }

    #[inline]
    pub(crate) fn units(&self) -> u32 {
        self.occ.units()
    }

    #[inline]
    pub(crate) fn units_of(&self, level: ChunkLevel) -> u32 {
        self.geo.units_of(level)
    }

    #[inline]
    pub(crate) fn committed_units(&self, unit: u32, level: ChunkLevel) -> u32 {
        self.commit.committed_units(unit, self.units_of(level))
    }

    /// Finds a chunk of level `preferred`, or failing that any level down to
    /// `max_level` (a smaller chunk), without changing anything.
    fn plan(&self, preferred: ChunkLevel, max_level: ChunkLevel) -> Option<Source> {
        // 1. A free chunk of exactly the preferred size.
        if let Some(unit) = self.free.first(preferred) {
            return Some(Source::FreeList {
                unit,
                level: preferred,
            });
        }
        self.plan_slow(preferred, max_level)
    }

    #[inline]
    fn plan_slow(&self, preferred: ChunkLevel, max_level: ChunkLevel) -> Option<Source> {
        // 2. Buddy: the smallest larger free chunk, to be split.
        if self.coalescing.merges() {
            if let Some((unit, level)) = self.free.first_larger(preferred) {
                return Some(Source::FreeList { unit, level });
            }
        }
        // 3. Untouched space.
        if let Some(source) = self.plan_carve(preferred, max_level) {
            return Some(source);
        }
        // 4. A smaller free chunk the caller accepts (the largest of them).
        let (unit, level) = self.free.first_smaller(preferred, max_level)?;
        Some(Source::FreeList { unit, level })
    }

    fn plan_carve(&self, preferred: ChunkLevel, max_level: ChunkLevel) -> Option<Source> {
        let left = self.units() - self.carved;
        if self.coalescing.merges() {
            // The largest chunk at the watermark; it is aligned there because
            // the watermark only ever moves by maximal chunks.
            let level = self.geo.largest_fitting(self.carved, left)?;
            return (level <= max_level).then_some(Source::Carve {
                unit: self.carved,
                level,
            });
        }
        // Baseline: the requested size at the next boundary aligned to it.
        let mut level = preferred;
        loop {
            let units = self.units_of(level);
            let at = self.carved.next_multiple_of(units);
            if at.checked_add(units).is_some_and(|end| end <= self.units()) {
                return Some(Source::Carve { unit: at, level });
            }
            if level >= max_level {
                return None;
            }
            level = level.smaller();
        }
    }

    /// The unit and level a plan hands out.
    fn outcome(source: Source, preferred: ChunkLevel) -> (u32, ChunkLevel) {
        match source {
            Source::FreeList { unit, level } | Source::Carve { unit, level } => {
                (unit, level.max(preferred))
            }
        }
    }

    /// Takes a chunk: plan, commit its first `min_committed` bytes, then
    /// change the lists. `None` when the space is exhausted; an error when
    /// the commit fails, in which case the chunk structure is unchanged.
    #[inline(always)]
    pub(crate) fn take(
        &mut self,
        reservation: &Reservation,
        used: &LazyTable<CounterU32>,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<Option<Taken>, CommitError> {
        // Fast paths with nothing to commit: a free chunk of exactly the
        // preferred level, or (buddy) the smallest larger one, split. The
        // same steps as `take_planned` takes for the plan's first two
        // sources, without the plan.
        if min_committed == 0 {
            if let Some(taken) = self.take_free(preferred) {
                return Ok(Some(taken));
            }
        }
        self.take_planned(reservation, used, preferred, max_level, min_committed)
    }

    /// The fast paths of [`take`](Self::take), which need nothing
    /// committed: a free chunk of exactly the preferred level, or (buddy)
    /// the smallest larger one, split. `None` if neither exists (the
    /// general path then carves or takes a smaller chunk).
    #[inline(always)]
    pub(crate) fn take_free(&mut self, preferred: ChunkLevel) -> Option<Taken> {
        if let Some(unit) = self.free.first(preferred) {
            self.free.remove(&mut self.occ, preferred, unit);
            return Some(self.hand_out(unit, preferred));
        }
        if self.coalescing.merges() {
            if let Some((unit, from)) = self.free.first_larger(preferred) {
                self.free.remove(&mut self.occ, from, unit);
                self.split(unit, from, preferred);
                return Some(self.hand_out(unit, preferred));
            }
        }
        None
    }

    /// [`take`](Self::take) in general: plan, commit, then change the lists.
    #[inline(never)]
    fn take_planned(
        &mut self,
        reservation: &Reservation,
        used: &LazyTable<CounterU32>,
        preferred: ChunkLevel,
        max_level: ChunkLevel,
        min_committed: usize,
    ) -> Result<Option<Taken>, CommitError> {
        let Some(source) = self.plan(preferred, max_level) else {
            return Ok(None);
        };
        let (unit, level) = Self::outcome(source, preferred);
        if let Source::Carve { unit, level: from } = source {
            // The side tables follow the carved part: make the entries of
            // the new chunks accessible first (zero reads "untouched", so
            // nothing else changes if a later step fails).
            let end = unit + self.units_of(from);
            self.occ.grow(end)?;
            self.commit.grow(end)?;
            used.grow(end as usize)?;
        }
        if min_committed > 0 {
            self.commit_prefix(reservation, unit, level, min_committed)?;
        }
        match source {
            Source::FreeList { unit, level: from } => {
                self.free.remove(&mut self.occ, from, unit);
                self.split(unit, from, level);
            }
            Source::Carve { unit, level: from } => {
                self.carve_alignment_chunks(unit);
                self.carved = unit + self.units_of(from);
                self.counters.carved += 1;
                self.split(unit, from, level);
            }
        }
        Ok(Some(self.hand_out(unit, level)))
    }

    /// Marks the chunk at `unit`, off every list, in use under the next
    /// hand-out serial.
    #[inline]
    fn hand_out(&mut self, unit: u32, level: ChunkLevel) -> Taken {
        let serial = self.next_serial;
        self.next_serial = (self.next_serial + 1) & ((1 << SERIAL_BITS) - 1);
        self.next_serial = self.next_serial.max(1);
        self.occ.set_in_use(unit, level, serial);
        self.counters.gets += 1;
        Taken {
            unit,
            level,
            serial,
        }
    }

    /// Baseline carving: tiles `[carved, to)` with the largest aligned chunks
    /// and puts them on the free lists.
    fn carve_alignment_chunks(&mut self, to: u32) {
        while self.carved < to {
            let level = self
                .geo
                .largest_fitting(self.carved, to - self.carved)
                .expect("room left");
            self.add_free(self.carved, level);
            self.counters.alignment_chunks += 1;
            self.carved += self.units_of(level);
        }
    }

    /// Splits the chunk at `unit` from level `from` down to `to`, keeping the
    /// lower half each time and putting every upper half on its free list.
    fn split(&mut self, unit: u32, from: ChunkLevel, to: ChunkLevel) {
        let (mut level, mut units) = (from, self.units_of(from));
        while level < to {
            level = level.smaller();
            units >>= 1;
            self.add_free(unit + units, level);
        }
        self.counters.splits += u64::from(to.raw().saturating_sub(from.raw()));
    }

    /// Marks the chunk at `unit` free and puts it on its list, committed
    /// chunks to the front.
    #[inline(always)]
    fn add_free(&mut self, unit: u32, level: ChunkLevel) {
        self.occ.set_free(unit, level);
        let end = if self.commit.starts_committed(unit) {
            End::Front
        } else {
            End::Back
        };
        self.free.push(&mut self.occ, level, unit, end);
    }

    /// The buddy of the chunk at `unit`, if it lies in carved space.
    #[inline]
    pub(crate) fn buddy(&self, unit: u32, level: ChunkLevel) -> Option<u32> {
        level.larger()?;
        let units = self.units_of(level);
        let buddy = unit ^ units;
        (buddy + units <= self.carved).then_some(buddy)
    }

    /// Gives back the in-use chunk at `unit`: merges it with its free buddy
    /// as long as there is one (buddy policy), then lists it.
    pub(crate) fn give_back(&mut self, mut unit: u32, mut level: ChunkLevel) {
        debug_assert_eq!(self.occ.state(unit), UnitState::InUse);
        self.counters.returns += 1;
        if self.coalescing.merges() {
            // `buddy` step by step, with the loop's invariants in locals.
            let (carved, mut units, mut merges) = (self.carved, self.units_of(level), 0);
            while let Some(larger) = level.larger() {
                let buddy = unit ^ units;
                if buddy + units > carved || !self.occ.is_free_chunk(buddy, level) {
                    break;
                }
                self.free.remove(&mut self.occ, level, buddy);
                self.occ.clear(unit.max(buddy));
                unit = unit.min(buddy);
                level = larger;
                units <<= 1;
                merges += 1;
            }
            self.counters.merges += merges;
        }
        self.add_free(unit, level);
    }

    /// Grows the in-use chunk at `unit` into its free upper buddy.
    pub(crate) fn enlarge(&mut self, unit: u32, level: ChunkLevel) -> Result<ChunkLevel, Refusal> {
        if !self.coalescing.merges() {
            return Err(Refusal::Disabled);
        }
        let larger = level.larger().ok_or(Refusal::Root)?;
        let units = self.units_of(level);
        if unit & units != 0 {
            return Err(Refusal::NotLeader);
        }
        let buddy = unit + units;
        if buddy + units > self.carved || !self.occ.is_free_chunk(buddy, level) {
            return Err(Refusal::BuddyNotFree);
        }
        self.free.remove(&mut self.occ, level, buddy);
        self.occ.clear(buddy);
        self.occ.set_level(unit, larger);
        self.counters.enlargements += 1;
        Ok(larger)
    }

    /// Commits the granules holding the first `bytes` of the chunk (the whole
    /// granule for a chunk smaller than one).
    pub(crate) fn commit_prefix(
        &mut self,
        reservation: &Reservation,
        unit: u32,
        level: ChunkLevel,
        bytes: usize,
    ) -> Result<(), CommitError> {
        let units = self.units_of(level);
        let want = (bytes.div_ceil(self.geo.min_chunk_size()) as u32).clamp(1, units);
        let granules = self.commit.granules_of(unit, want);
        let changed = self
            .commit
            .commit(reservation, self.granule_bytes, granules)?;
        self.counters.commits += changed.calls;
        self.counters.committed_bytes += (changed.granules * self.granule_bytes) as u64;
        Ok(())
    }

    /// Bytes from the chunk's start that are committed without a gap.
    pub(crate) fn committed_prefix(&self, unit: u32, level: ChunkLevel) -> usize {
        let units = self.units_of(level);
        let per = 1u32 << self.commit.units_shift();
        if units <= per {
            return if self.commit.starts_committed(unit) {
                self.geo.size_of(level)
            } else {
                0
            };
        }
        let n = self
            .commit
            .granules_of(unit, units)
            .take_while(|&g| self.commit.is_committed(g))
            .count();
        n * self.granule_bytes
    }

    /// Uncommits every granule inside a free chunk of at least a granule.
    /// Returns (chunks purged, bytes uncommitted).
    pub(crate) fn purge(
        &mut self,
        reservation: &Reservation,
    ) -> Result<(usize, usize), CommitError> {
        let mut chunks = 0;
        let mut bytes = 0;
        let per = 1u32 << self.commit.units_shift();
        for level in self.geo.all_levels() {
            if self.units_of(level) < per {
                break;
            }
            let units: Vec<u32> = self.free.iter(&self.occ, level).collect();
            for unit in units {
                let granules = self.commit.granules_of(unit, self.units_of(level));
                let changed = self
                    .commit
                    .uncommit(reservation, self.granule_bytes, granules)?;
                if changed.granules > 0 {
                    chunks += 1;
                    bytes += changed.granules * self.granule_bytes;
                    self.counters.uncommits += changed.calls;
                    self.counters.uncommitted_bytes +=
                        (changed.granules * self.granule_bytes) as u64;
                    // Uncommitted chunks belong at the back of their list.
                    self.free.remove(&mut self.occ, level, unit);
                    self.free.push(&mut self.occ, level, unit, End::Back);
                }
            }
        }
        self.counters.purges += 1;
        Ok((chunks, bytes))
    }

    /// Visits every carved chunk in address order: (unit, level, state).
    pub(crate) fn chunks(&self) -> impl Iterator<Item = (u32, ChunkLevel, UnitState)> + '_ {
        let mut unit = 0;
        std::iter::from_fn(move || {
            if unit >= self.carved {
                return None;
            }
            let u = unit;
            let state = self.occ.state(u);
            let level = self.occ.level(u);
            if state == UnitState::Inner {
                // Corrupt tiling; verify() reports it. Step one unit so that
                // the walk still ends.
                unit += 1;
            } else {
                unit += self.units_of(level);
            }
            Some((u, level, state))
        })
    }
}

/// Why the space refused to enlarge a chunk (mapped to `EnlargeError`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    Disabled,
    Root,
    NotLeader,
    BuddyNotFree,
}
