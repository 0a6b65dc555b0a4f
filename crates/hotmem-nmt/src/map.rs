//! The annotated OS memory map (what `jcmd System.map` prints): every
//! mapping of `/proc/self/smaps` with the tags the tracker has for it and
//! what the kernel says is resident, so that committed and resident memory
//! can be told apart.

use crate::delta::Totals;
use crate::error::MapError;
use crate::region_state::RegionState;
use crate::scale::Scale;
use crate::store::RegionStore;
use crate::summary::{Label, NameOf};
use crate::tags::{MAX_TAGS, TagRegistry};
use crate::tracker::Tracker;
use hotmem_os::procfs::{self, Mapping};
use hotmem_os::{MemRange, MemTag};
use std::fmt;

/// One mapping with what the tracker knows about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    /// The mapping as the kernel reports it.
    pub mapping: Mapping,
    /// Tracked bytes of the mapping per tag (reserved, and committed among
    /// them), in tag order; empty if nobody tracked it.
    pub tags: Vec<(MemTag, Totals)>,
}

impl MapEntry {
    /// Bytes of the mapping the tracker accounts for.
    pub fn tracked_bytes(&self) -> usize {
        self.tags.iter().map(|(_, t)| t.reserved).sum()
    }
}

/// Totals of an annotated map.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MapTotals {
    /// Bytes mapped in the process.
    pub mapped: usize,
    /// Bytes resident in the process.
    pub resident: usize,
    /// Bytes of mappings the tracker accounts for (reserved).
    pub tracked: usize,
    /// Of those, committed according to the tracker.
    pub tracked_committed: usize,
    /// Of those, resident according to the kernel (page by page).
    pub tracked_resident: usize,
    /// Resident bytes of mappings nobody tracked (libraries, malloc, stacks
    /// of threads not made through the tracked memory...).
    pub untracked_resident: usize,
}

/// Per-tag committed and resident bytes, as the kernel sees them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TagResidency {
    /// Committed according to the tracker.
    pub committed: usize,
    /// Resident according to `/proc/self/pagemap`.
    pub resident: usize,
}

/// The annotated map: `Display` prints it, `Serialize` gives it as data.
pub struct AnnotatedMap<'a> {
    entries: Vec<MapEntry>,
    totals: MapTotals,
    residency: Vec<(MemTag, TagResidency)>,
    tags: &'a TagRegistry,
    scale: Scale,
}

impl AnnotatedMap<'_> {
    /// Every mapping, in address order.
    pub fn entries(&self) -> &[MapEntry] {
        &self.entries
    }

    /// The totals line.
    pub fn totals(&self) -> MapTotals {
        self.totals
    }

    /// Committed and resident bytes of every tag that has committed memory.
    pub fn residency(&self) -> &[(MemTag, TagResidency)] {
        &self.residency
    }
}

/// The tags of an entry, comma separated.
struct TagNames<'a>(&'a TagRegistry, &'a MapEntry);

impl fmt::Display for TagNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1.tags.is_empty() {
            return f.write_str("-");
        }
        for (i, (tag, _)) in self.1.tags.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", Label(self.0, *tag))?;
        }
        if self.1.tracked_bytes() < self.1.mapping.range.len() {
            f.write_str(" (part)")?;
        }
        Ok(())
    }
}

impl fmt::Display for AnnotatedMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.scale;
        writeln!(
            f,
            "Memory map of this process (/proc/self/smaps), with NMT tags:"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<18} {:<18} {:>12} {:>12} {:<5} {:<24} file",
            "from", "to", "size", "rss", "prot", "nmt tags"
        )?;
        for e in &self.entries {
            let m = &e.mapping;
            writeln!(
                f,
                "{:#018x} {:#018x} {:>12} {:>12} {:<5} {:<24} {}",
                m.range.start().get(),
                m.range.end().get(),
                s.amount(m.range.len()).to_string(),
                s.amount(m.rss).to_string(),
                m.perms,
                TagNames(self.tags, e).to_string(),
                m.path
            )?;
        }
        let t = &self.totals;
        writeln!(f)?;
        writeln!(
            f,
            "Total: mapped={}, resident={}",
            s.amount(t.mapped),
            s.amount(t.resident)
        )?;
        writeln!(
            f,
            "Tracked by NMT: reserved={}, committed={}, resident={}",
            s.amount(t.tracked),
            s.amount(t.tracked_committed),
            s.amount(t.tracked_resident)
        )?;
        writeln!(
            f,
            "Not tracked: mapped={}, resident={}",
            s.amount(t.mapped - t.tracked.min(t.mapped)),
            s.amount(t.untracked_resident)
        )?;
        writeln!(f)?;
        writeln!(f, "Committed vs resident per tag:")?;
        for (tag, r) in &self.residency {
            writeln!(
                f,
                "-{:>27} (committed={}, resident={})",
                Label(self.tags, *tag),
                s.amount(r.committed),
                s.amount(r.resident)
            )?;
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct EntryData<'a> {
    start: usize,
    end: usize,
    perms: &'a str,
    path: &'a str,
    rss: usize,
    swap: usize,
    tags: Vec<TagData<'a>>,
}

#[derive(serde::Serialize)]
struct TagData<'a> {
    tag: u16,
    name: NameOf<'a>,
    reserved: usize,
    committed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    resident: Option<usize>,
}

impl serde::Serialize for AnnotatedMap<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let tags = self.tags;
        let entries: Vec<EntryData<'_>> = self
            .entries
            .iter()
            .map(|e| EntryData {
                start: e.mapping.range.start().get(),
                end: e.mapping.range.end().get(),
                perms: &e.mapping.perms,
                path: &e.mapping.path,
                rss: e.mapping.rss,
                swap: e.mapping.swap,
                tags: e
                    .tags
                    .iter()
                    .map(|(tag, t)| TagData {
                        tag: tag.raw(),
                        name: NameOf(tags, *tag),
                        reserved: t.reserved,
                        committed: t.committed,
                        resident: None,
                    })
                    .collect(),
            })
            .collect();
        let per_tag: Vec<TagData<'_>> = self
            .residency
            .iter()
            .map(|(tag, r)| TagData {
                tag: tag.raw(),
                name: NameOf(tags, *tag),
                reserved: 0,
                committed: r.committed,
                resident: Some(r.resident),
            })
            .collect();
        let mut st = s.serialize_struct("AnnotatedMap", 3)?;
        st.serialize_field("mappings", &entries)?;
        st.serialize_field("totals", &self.totals)?;
        st.serialize_field("residency", &per_tag)?;
        st.end()
    }
}

impl<S: RegionStore> Tracker<S> {
    /// Reads `/proc/self/smaps` and annotates every mapping with the tags
    /// the tracker has for it; counts resident bytes of committed tracked
    /// memory page by page (`/proc/self/pagemap`). The tracker's lock is
    /// held only to copy the tracked pieces, not during the reads.
    ///
    /// # Errors
    /// If `/proc/self/smaps` or `/proc/self/pagemap` cannot be read.
    pub fn annotated_map(&self, scale: Scale) -> std::io::Result<AnnotatedMap<'_>> {
        let mappings = procfs::smaps()?;
        // The tracked pieces of every mapping, copied under the lock.
        let mut pieces: Vec<(usize, MemRange, RegionState)> = Vec::new();
        {
            let inner = self.lock();
            for (i, m) in mappings.iter().enumerate() {
                inner
                    .store
                    .for_each(m.range, &mut |r, st| pieces.push((i, r, st)));
            }
        }
        let mut entries: Vec<MapEntry> = mappings
            .into_iter()
            .map(|mapping| MapEntry {
                mapping,
                tags: Vec::new(),
            })
            .collect();
        let mut residency = vec![TagResidency::default(); MAX_TAGS];
        let mut totals = MapTotals::default();
        for &(i, r, st) in &pieces {
            let tags = &mut entries[i].tags;
            let at = match tags.iter().position(|(t, _)| *t == st.tag()) {
                Some(at) => at,
                None => {
                    tags.push((st.tag(), Totals::ZERO));
                    tags.len() - 1
                }
            };
            tags[at].1.reserved += r.len();
            totals.tracked += r.len();
            if st.is_committed() {
                tags[at].1.committed += r.len();
                totals.tracked_committed += r.len();
                let resident = procfs::resident_bytes(r)?;
                let slot = &mut residency[usize::from(st.tag().raw())];
                slot.committed += r.len();
                slot.resident += resident;
                totals.tracked_resident += resident;
            }
        }
        for e in &mut entries {
            e.tags.sort_by_key(|(t, _)| *t);
            totals.mapped += e.mapping.range.len();
            totals.resident += e.mapping.rss;
            if e.tags.is_empty() {
                totals.untracked_resident += e.mapping.rss;
            }
        }
        let residency = residency
            .into_iter()
            .enumerate()
            .filter(|(_, r)| r.committed > 0)
            .map(|(i, r)| (MemTag::from_raw(i as u16), r))
            .collect();
        Ok(AnnotatedMap {
            entries,
            totals,
            residency,
            tags: &self.tags,
            scale,
        })
    }

    /// Writes the annotated map into `w` and returns its totals.
    ///
    /// # Errors
    /// [`MapError::Io`] if `/proc` cannot be read, [`MapError::Fmt`] if `w`
    /// fails.
    pub fn write_annotated_map(
        &self,
        w: &mut dyn fmt::Write,
        scale: Scale,
    ) -> Result<MapTotals, MapError> {
        let map = self.annotated_map(scale)?;
        write!(w, "{map}")?;
        Ok(map.totals)
    }
}

crate::summary::to_json!(AnnotatedMap);
