//! `verify()`: every invariant of a space, checked from scratch.

use crate::VerifyError;
use crate::occupancy::UnitState;
use crate::space::SpaceState;
use crate::sync::{CounterU32, Ordering};

impl SpaceState {
    pub(crate) fn verify(&self, used: &[CounterU32]) -> Result<(), VerifyError> {
        let units = self.units();
        if self.carved > units {
            return Err(VerifyError::new(
                "carved space inside the space",
                format!("carved {} of {} units", self.carved, units),
            ));
        }
        // The side tables are accessible at least as far as the space is
        // carved, and never touched beyond what is accessible.
        let accessible = self.occ.accessible_units();
        if accessible < self.carved || (used.len() as u64) < u64::from(self.carved) {
            return Err(VerifyError::new(
                "side tables cover the carved space",
                format!(
                    "carved {} units, occupancy table {}, used table {}",
                    self.carved,
                    accessible,
                    used.len()
                ),
            ));
        }
        let levels = self.geo.levels();
        let mut free_per_level = vec![0u32; levels];
        let mut tiled: u64 = 0;
        let mut unit = 0u32;
        while unit < self.carved {
            let state = self.occ.state(unit);
            if state == UnitState::Inner {
                return Err(VerifyError::new(
                    "chunks tile the space",
                    format!("no chunk starts at unit {unit}"),
                ));
            }
            let level = self.occ.level(unit);
            if !self.geo.contains(level) {
                return Err(VerifyError::new(
                    "levels exist",
                    format!("unit {unit} has level {level}"),
                ));
            }
            let size = self.units_of(level);
            if unit % size != 0 {
                return Err(VerifyError::new(
                    "chunks aligned to their size",
                    format!("{level} chunk at unit {unit}"),
                ));
            }
            if unit + size > self.carved {
                return Err(VerifyError::new(
                    "chunks tile the space",
                    format!(
                        "{level} chunk at unit {unit} runs past carved end {}",
                        self.carved
                    ),
                ));
            }
            if let Some(inner) =
                (unit + 1..unit + size).find(|&u| self.occ.state(u) != UnitState::Inner)
            {
                return Err(VerifyError::new(
                    "chunks do not overlap",
                    format!("{level} chunk at unit {unit} contains a chunk start at {inner}"),
                ));
            }
            let used_bytes = used[unit as usize].load(Ordering::Relaxed) as usize;
            let committed = (self.committed_units(unit, level) as usize) << self.geo.min_shift();
            let bytes = self.geo.size_of(level);
            match state {
                UnitState::Free => {
                    free_per_level[level.index()] += 1;
                    if used_bytes != 0 {
                        return Err(VerifyError::new(
                            "free chunks are unused",
                            format!("free {level} chunk at unit {unit} has used {used_bytes}"),
                        ));
                    }
                    if self.coalescing.merges() {
                        if let Some(buddy) = self.buddy(unit, level) {
                            if self.occ.is_free_chunk(buddy, level) {
                                return Err(VerifyError::new(
                                    "free chunks are merged",
                                    format!(
                                        "free {level} chunks at units {unit} and {buddy} are buddies"
                                    ),
                                ));
                            }
                        }
                    }
                }
                UnitState::InUse => {
                    let prefix = self.committed_prefix(unit, level);
                    if used_bytes > prefix || prefix > committed || committed > bytes {
                        return Err(VerifyError::new(
                            "used <= committed <= size",
                            format!(
                                "{level} chunk at unit {unit}: used {used_bytes}, committed \
                                 prefix {prefix}, committed {committed}, size {bytes}"
                            ),
                        ));
                    }
                }
                UnitState::Inner => unreachable!("checked above"),
            }
            tiled += u64::from(size);
            unit += size;
        }
        if tiled != u64::from(self.carved) {
            return Err(VerifyError::new(
                "capacity is conserved",
                format!("chunks cover {tiled} units, carved {}", self.carved),
            ));
        }
        if let Some(u) = (self.carved..accessible).find(|&u| self.occ.state(u) != UnitState::Inner)
        {
            return Err(VerifyError::new(
                "no chunks in untouched space",
                format!("chunk header at unit {u} beyond carved end {}", self.carved),
            ));
        }
        if let Some(u) =
            (self.carved as usize..used.len()).find(|&u| used[u].load(Ordering::Relaxed) != 0)
        {
            return Err(VerifyError::new(
                "no use in untouched space",
                format!("unit {u} has used bytes"),
            ));
        }
        // Free lists hold exactly the free chunks, each on its level's list.
        for level in self.geo.all_levels() {
            let mut n = 0u32;
            let mut pred = None;
            for u in self.free.iter(&self.occ, level) {
                n += 1;
                if pred.is_some() && self.free.prev_of(&self.occ, level, u) != pred {
                    return Err(VerifyError::new(
                        "free lists link back",
                        format!("the {level} list: unit {u} does not link back to {pred:?}"),
                    ));
                }
                pred = Some(u);
                if n > units {
                    return Err(VerifyError::new(
                        "free lists are lists",
                        format!("the {level} list has a cycle"),
                    ));
                }
                if u >= self.carved || !self.occ.is_free_chunk(u, level) {
                    return Err(VerifyError::new(
                        "free lists hold free chunks of their level",
                        format!("the {level} list holds unit {u}"),
                    ));
                }
            }
            if (n > 0) != self.free.marked_nonempty(level) {
                return Err(VerifyError::new(
                    "the non-empty mask matches the free lists",
                    format!("{level}: {n} free chunks, mask bit {}", n == 0),
                ));
            }
            if n != free_per_level[level.index()] {
                return Err(VerifyError::new(
                    "free lists hold every free chunk once",
                    format!(
                        "{level}: list walk {n}, free chunks {}",
                        free_per_level[level.index()]
                    ),
                ));
            }
        }
        Ok(())
    }
}
