//! Statistics as plain, serializable data, and their `jcmd VM.metaspace`
//! shaped `Display`.

use crate::counters::ChunkCounters;
use crate::level::SizeLabel;
use crate::occupancy::UnitState;
use crate::space::SpaceState;
use crate::sync::{CounterU32, Ordering};
use crate::{ChunkLevel, Coalescing, MetadataType, SpaceConfig};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One level of a space.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelStatistics {
    /// The level.
    pub level: ChunkLevel,
    /// Bytes per chunk.
    pub chunk_size: usize,
    /// Chunks handed out.
    pub in_use_chunks: usize,
    /// Their bytes.
    pub in_use_capacity: usize,
    /// Their committed bytes.
    pub in_use_committed: usize,
    /// Their used bytes.
    pub used: usize,
    /// Free chunks (the length of the level's free list).
    pub free_chunks: usize,
    /// Their bytes.
    pub free_capacity: usize,
    /// Their committed bytes.
    pub free_committed: usize,
}

impl LevelStatistics {
    /// Bytes of in-use chunks not used yet ("free in chunks in use").
    pub fn unused(&self) -> usize {
        self.in_use_capacity - self.used
    }
}

/// The state of one space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceStatistics {
    /// Class or non-class.
    pub metadata_type: MetadataType,
    /// The policy.
    pub coalescing: Coalescing,
    /// Bytes reserved.
    pub reserved: usize,
    /// Bytes carved into chunks (the rest is untouched).
    pub carved: usize,
    /// Bytes committed.
    pub committed: usize,
    /// Bytes used in in-use chunks.
    pub used: usize,
    /// Bytes of in-use chunks.
    pub in_use_capacity: usize,
    /// Committed bytes of in-use chunks.
    pub in_use_committed: usize,
    /// Bytes of free chunks.
    pub free_capacity: usize,
    /// Committed bytes of free chunks.
    pub free_committed: usize,
    /// In-use chunks.
    pub in_use_chunks: usize,
    /// Free chunks.
    pub free_chunks: usize,
    /// Of the in-use chunks, those that dropped arenas left in the arena
    /// cache ([`ArenaCache::Sharded`](crate::ArenaCache::Sharded)); 0 without one.
    #[serde(default)]
    pub cached_chunks: usize,
    /// Bytes of those chunks (committed whole, used 0).
    #[serde(default)]
    pub cached_bytes: usize,
    /// Per level, root first.
    pub levels: Vec<LevelStatistics>,
    /// Counters.
    pub counters: ChunkCounters,
}

impl SpaceStatistics {
    pub(crate) fn collect(
        ty: MetadataType,
        config: &SpaceConfig,
        st: &SpaceState,
        used: &[CounterU32],
    ) -> SpaceStatistics {
        let geo = st.geo;
        let mut levels: Vec<LevelStatistics> = geo
            .all_levels()
            .map(|level| LevelStatistics {
                level,
                chunk_size: geo.size_of(level),
                ..LevelStatistics::default()
            })
            .collect();
        for (unit, level, state) in st.chunks() {
            if state == UnitState::Inner {
                continue;
            }
            let l = &mut levels[level.index()];
            let committed = (st.committed_units(unit, level) as usize) << geo.min_shift();
            match state {
                UnitState::InUse => {
                    l.in_use_chunks += 1;
                    l.in_use_capacity += l.chunk_size;
                    l.in_use_committed += committed;
                    l.used += used[unit as usize].load(Ordering::Relaxed) as usize;
                }
                _ => {
                    l.free_chunks += 1;
                    l.free_capacity += l.chunk_size;
                    l.free_committed += committed;
                }
            }
        }
        let sum = |f: fn(&LevelStatistics) -> usize| levels.iter().map(f).sum::<usize>();
        SpaceStatistics {
            metadata_type: ty,
            coalescing: config.coalescing,
            reserved: config.size,
            carved: (st.carved as usize) << geo.min_shift(),
            committed: st.commit.committed_granules() * config.commit_granule,
            used: sum(|l| l.used),
            in_use_capacity: sum(|l| l.in_use_capacity),
            in_use_committed: sum(|l| l.in_use_committed),
            free_capacity: sum(|l| l.free_capacity),
            free_committed: sum(|l| l.free_committed),
            in_use_chunks: sum(|l| l.in_use_chunks),
            free_chunks: sum(|l| l.free_chunks),
            cached_chunks: 0,
            cached_bytes: 0,
            levels,
            counters: st.counters,
        }
    }

    /// Used bytes over reserved bytes, 0.0 to 1.0.
    pub fn use_ratio(&self) -> f64 {
        self.used as f64 / self.reserved as f64
    }
}

/// Bytes the way jcmd prints them: `1.50 MB`, `60.12 KB`, `12 bytes`.
pub struct Bytes(pub usize);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let text = if self.0 >= 1 << 30 {
            format!("{:.2} GB", b / (1u64 << 30) as f64)
        } else if self.0 >= 1 << 20 {
            format!("{:.2} MB", b / (1u64 << 20) as f64)
        } else if self.0 >= 1 << 10 {
            format!("{:.2} KB", b / 1024.0)
        } else {
            format!("{} bytes", self.0)
        };
        f.pad(&text)
    }
}

/// A percentage of a total, `( 12%)`, `( <1%)` as jcmd prints it.
struct Percent(usize, usize);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 0 {
            return f.write_str("(  0%)");
        }
        let p = self.0 as f64 * 100.0 / self.1 as f64;
        if self.0 > 0 && p < 1.0 {
            f.write_str("( <1%)")
        } else {
            write!(f, "({:>3.0}%)", p)
        }
    }
}

impl fmt::Display for SpaceStatistics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ty = self.metadata_type;
        writeln!(f, "{ty} ({}):", self.coalescing)?;
        writeln!(
            f,
            "  Virtual space: {:>10} reserved, {:>10} {} committed, {:>10} carved into chunks",
            Bytes(self.reserved),
            Bytes(self.committed),
            Percent(self.committed, self.reserved),
            Bytes(self.carved),
        )?;
        writeln!(
            f,
            "  Usage:         {:>10} capacity in {} chunks, {:>10} {} used",
            Bytes(self.in_use_capacity),
            self.in_use_chunks,
            Bytes(self.used),
            Percent(self.used, self.in_use_capacity),
        )?;
        writeln!(f, "  Chunks in use:")?;
        for l in self.levels.iter().filter(|l| l.in_use_chunks > 0) {
            writeln!(
                f,
                "  {:>5}: {:>6}, capacity={:>10}, committed={:>10}, used={:>10}, free={:>10}",
                SizeLabel(l.chunk_size),
                l.in_use_chunks,
                Bytes(l.in_use_capacity),
                Bytes(l.in_use_committed),
                Bytes(l.used),
                Bytes(l.unused()),
            )?;
        }
        writeln!(f, "  Chunk freelists:")?;
        for l in &self.levels {
            if l.free_chunks == 0 {
                writeln!(f, "  {:>5}: (none)", SizeLabel(l.chunk_size))?;
            } else {
                writeln!(
                    f,
                    "  {:>5}: {:>6}, capacity={:>10}, committed={:>10} {}",
                    SizeLabel(l.chunk_size),
                    l.free_chunks,
                    Bytes(l.free_capacity),
                    Bytes(l.free_committed),
                    Percent(l.free_committed, l.free_capacity),
                )?;
            }
        }
        writeln!(
            f,
            "  Total: {} free chunks, capacity={}, committed={}",
            self.free_chunks,
            Bytes(self.free_capacity),
            Bytes(self.free_committed)
        )?;
        let unused_committed = self.in_use_committed.saturating_sub(self.used);
        writeln!(
            f,
            "  Waste (unused committed space, percentages of {} committed):",
            Bytes(self.committed)
        )?;
        writeln!(
            f,
            "     Free in chunks in use: {:>10} {}",
            Bytes(unused_committed),
            Percent(unused_committed, self.committed)
        )?;
        writeln!(
            f,
            "            In free chunks: {:>10} {}",
            Bytes(self.free_committed),
            Percent(self.free_committed, self.committed)
        )?;
        let c = &self.counters;
        write!(
            f,
            "  Counters: gets={} returns={} splits={} merges={} enlargements={} carved={} \
             alignment={} commits={} ({}) uncommits={} ({}) purges={}",
            c.gets,
            c.returns,
            c.splits,
            c.merges,
            c.enlargements,
            c.carved,
            c.alignment_chunks,
            c.commits,
            Bytes(c.committed_bytes as usize),
            c.uncommits,
            Bytes(c.uncommitted_bytes as usize),
            c.purges,
        )
    }
}
