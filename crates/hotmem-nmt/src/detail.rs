//! Regions, the detail report, baselines and the detail diff (by call site).
//! These allocate (region lists, resolved symbols); only the summary
//! reports are allocation-free.

use crate::region_state::RegionState;
use crate::scale::Scale;
use crate::stack::{CallStack, ResolvedFrame};
use crate::stack_id::StackId;
use crate::store::RegionStore;
use crate::summary::{Label, NameOf, Summary, SummaryDiffReport, SummaryReport, diff};
use crate::tracker::Tracker;
use hotmem_os::{Address, MemRange, MemTag};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A reserved region: a maximal run of address space with one tag and one
/// reserving stack (adjacent reservations that agree on both are merged,
/// as in HotSpot's tree), with its committed sub-ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The reserved range.
    pub range: MemRange,
    /// Its tag.
    pub tag: MemTag,
    /// The stack that reserved it.
    pub reserved_by: StackId,
    /// Committed sub-ranges, in address order; adjacent ones with the same
    /// committing stack are merged.
    pub committed: Vec<CommittedRange>,
}

impl Region {
    /// Committed bytes.
    pub fn committed_bytes(&self) -> usize {
        self.committed.iter().map(|c| c.range.len()).sum()
    }
}

/// A committed part of a [`Region`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CommittedRange {
    /// The committed range.
    pub range: MemRange,
    /// The stack that committed it.
    pub committed_by: StackId,
}

/// The whole address space but its last byte (which no mapping can use).
pub(crate) const EVERYTHING: MemRange =
    match MemRange::from_bounds(Address::NULL, Address::new(usize::MAX)) {
        Some(r) => r,
        None => unreachable!(),
    };

fn join(a: MemRange, b: MemRange) -> MemRange {
    MemRange::from_bounds(a.start(), b.end()).expect("ordered")
}

/// Groups the pieces of `range` into regions.
pub(crate) fn collect_regions<S: RegionStore>(store: &S, range: MemRange) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    store.for_each(range, &mut |piece: MemRange, st: RegionState| {
        let same = out.last().is_some_and(|r| {
            r.range.end() == piece.start() && r.tag == st.tag() && r.reserved_by == st.reserved_by()
        });
        if same {
            let r = out.last_mut().expect("checked");
            r.range = join(r.range, piece);
        } else {
            out.push(Region {
                range: piece,
                tag: st.tag(),
                reserved_by: st.reserved_by(),
                committed: Vec::new(),
            });
        }
        if st.is_committed() {
            let r = out.last_mut().expect("pushed");
            match r.committed.last_mut() {
                Some(c)
                    if c.range.end() == piece.start() && c.committed_by == st.committed_by() =>
                {
                    c.range = join(c.range, piece);
                }
                _ => r.committed.push(CommittedRange {
                    range: piece,
                    committed_by: st.committed_by(),
                }),
            }
        }
    });
    out
}

/// Whether a call site reserved or committed memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum SiteKind {
    /// The stack reserved it.
    Reserved,
    /// The stack committed it.
    Committed,
}

/// Where memory came from: a tag, whether it was reserved or committed
/// there, and the stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Site {
    /// The tag.
    pub tag: MemTag,
    /// Reserved or committed.
    pub kind: SiteKind,
    /// The stack.
    pub stack: StackId,
}

fn sites(regions: &[Region]) -> BTreeMap<Site, usize> {
    let mut out = BTreeMap::new();
    for r in regions {
        let site = |kind, stack| Site {
            tag: r.tag,
            kind,
            stack,
        };
        *out.entry(site(SiteKind::Reserved, r.reserved_by))
            .or_default() += r.range.len();
        for c in &r.committed {
            *out.entry(site(SiteKind::Committed, c.committed_by))
                .or_default() += c.range.len();
        }
    }
    out
}

/// What the tracker said at one moment, for later diffs: the summary and
/// the bytes per call site.
#[derive(Clone, Debug)]
pub struct Baseline {
    summary: Summary,
    sites: BTreeMap<Site, usize>,
}

impl Baseline {
    /// The summary numbers of the baseline.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Bytes per call site in the baseline.
    pub fn sites(&self) -> &BTreeMap<Site, usize> {
        &self.sites
    }
}

/// Resolves the stacks the given ids name (outside the lock).
fn resolve_all(stacks: HashMap<StackId, CallStack>) -> BTreeMap<StackId, Vec<ResolvedFrame>> {
    stacks
        .into_iter()
        .map(|(id, s)| (id, s.resolve()))
        .collect()
}

fn write_stack(
    f: &mut fmt::Formatter<'_>,
    frames: Option<&Vec<ResolvedFrame>>,
    indent: &str,
) -> fmt::Result {
    match frames {
        Some(frames) if !frames.is_empty() => {
            writeln!(f, " from")?;
            for fr in frames {
                writeln!(f, "{indent}{fr}")?;
            }
            Ok(())
        }
        _ => writeln!(f),
    }
}

/// The detail report: the summary, then every region (address order) with
/// its stack and its committed sub-ranges with theirs. `Display` prints
/// text like `jcmd VM.native_memory detail`; `Serialize` gives data.
pub struct DetailReport<'a> {
    summary: SummaryReport<'a>,
    regions: Vec<Region>,
    stacks: BTreeMap<StackId, Vec<ResolvedFrame>>,
}

impl DetailReport<'_> {
    /// The regions, in address order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }
}

impl fmt::Display for DetailReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary.scale;
        write!(f, "{}", self.summary)?;
        writeln!(f)?;
        writeln!(f, "Virtual memory map:")?;
        for r in &self.regions {
            writeln!(f)?;
            write!(
                f,
                "[{:#018x} - {:#018x}] reserved {} for {}",
                r.range.start().get(),
                r.range.end().get(),
                s.amount(r.range.len()),
                Label(self.summary.tags, r.tag)
            )?;
            write_stack(f, self.stacks.get(&r.reserved_by), "        ")?;
            for c in &r.committed {
                write!(
                    f,
                    "    [{:#018x} - {:#018x}] committed {}",
                    c.range.start().get(),
                    c.range.end().get(),
                    s.amount(c.range.len())
                )?;
                write_stack(f, self.stacks.get(&c.committed_by), "            ")?;
            }
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct RangeData {
    start: usize,
    end: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    committed_by: Option<u32>,
}

#[derive(serde::Serialize)]
struct RegionData<'a> {
    start: usize,
    end: usize,
    tag: u16,
    name: NameOf<'a>,
    reserved_by: Option<u32>,
    committed: Vec<RangeData>,
}

fn stack_ref(id: StackId) -> Option<u32> {
    (id != StackId::NONE).then_some(id.get())
}

impl serde::Serialize for DetailReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let tags = self.summary.tags;
        let regions: Vec<RegionData<'_>> = self
            .regions
            .iter()
            .map(|r| RegionData {
                start: r.range.start().get(),
                end: r.range.end().get(),
                tag: r.tag.raw(),
                name: NameOf(tags, r.tag),
                reserved_by: stack_ref(r.reserved_by),
                committed: r
                    .committed
                    .iter()
                    .map(|c| RangeData {
                        start: c.range.start().get(),
                        end: c.range.end().get(),
                        committed_by: stack_ref(c.committed_by),
                    })
                    .collect(),
            })
            .collect();
        let stacks: BTreeMap<u32, &Vec<ResolvedFrame>> =
            self.stacks.iter().map(|(id, f)| (id.get(), f)).collect();
        let mut st = s.serialize_struct("DetailReport", 3)?;
        st.serialize_field("summary", &self.summary)?;
        st.serialize_field("regions", &regions)?;
        st.serialize_field("stacks", &stacks)?;
        st.end()
    }
}

/// The detail diff: the summary diff, then every call site whose bytes
/// changed since the baseline.
pub struct DetailDiffReport<'a> {
    summary: SummaryDiffReport<'a>,
    /// (site, bytes now, bytes in the baseline), sites that changed only.
    changes: Vec<(Site, usize, usize)>,
    stacks: BTreeMap<StackId, Vec<ResolvedFrame>>,
}

impl DetailDiffReport<'_> {
    /// Every call site that changed: (site, bytes now, bytes in baseline).
    pub fn changes(&self) -> &[(Site, usize, usize)] {
        &self.changes
    }
}

impl fmt::Display for DetailDiffReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary.scale;
        write!(f, "{}", self.summary)?;
        writeln!(f)?;
        writeln!(f, "Details (call sites that changed):")?;
        for &(site, now, before) in &self.changes {
            writeln!(f)?;
            let what = match site.kind {
                SiteKind::Reserved => "reserved",
                SiteKind::Committed => "committed",
            };
            write!(
                f,
                "{what}={} {} for {}",
                s.amount(now),
                s.change(diff(now, before)),
                Label(self.summary.tags, site.tag)
            )?;
            write_stack(f, self.stacks.get(&site.stack), "    ")?;
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct SiteData<'a> {
    tag: u16,
    name: NameOf<'a>,
    kind: SiteKind,
    stack: Option<u32>,
    bytes: usize,
    change: isize,
}

impl serde::Serialize for DetailDiffReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let sites: Vec<SiteData<'_>> = self
            .changes
            .iter()
            .map(|&(site, now, before)| SiteData {
                tag: site.tag.raw(),
                name: NameOf(self.summary.tags, site.tag),
                kind: site.kind,
                stack: stack_ref(site.stack),
                bytes: now,
                change: diff(now, before),
            })
            .collect();
        let stacks: BTreeMap<u32, &Vec<ResolvedFrame>> =
            self.stacks.iter().map(|(id, f)| (id.get(), f)).collect();
        let mut st = s.serialize_struct("DetailDiffReport", 3)?;
        st.serialize_field("summary", &self.summary)?;
        st.serialize_field("sites", &sites)?;
        st.serialize_field("stacks", &stacks)?;
        st.end()
    }
}

impl<S: RegionStore> Tracker<S> {
    /// Every region, in address order.
    pub fn regions(&self) -> Vec<Region> {
        collect_regions(&self.lock().store, EVERYTHING)
    }

    /// The regions that overlap `range`, clipped to it.
    pub fn regions_in(&self, range: MemRange) -> Vec<Region> {
        collect_regions(&self.lock().store, range)
    }

    /// Remembers the current state for [`Tracker::summary_diff_report`] and
    /// [`Tracker::detail_diff_report`].
    pub fn baseline(&self) -> Baseline {
        let inner = self.lock();
        Baseline {
            summary: Summary::from_totals(inner.totals),
            sites: sites(&collect_regions(&inner.store, EVERYTHING)),
        }
    }

    /// Copies the stacks `ids` name, under the lock, for resolving outside it.
    fn stacks_of(
        &self,
        ids: impl Iterator<Item = StackId>,
    ) -> BTreeMap<StackId, Vec<ResolvedFrame>> {
        let inner = self.lock();
        let copies: HashMap<StackId, CallStack> = ids
            .filter_map(|id| inner.stacks.get(id).map(|s| (id, *s)))
            .collect();
        drop(inner);
        resolve_all(copies)
    }

    /// The detail report in `scale`. Regions are copied under the lock;
    /// symbols are resolved after it is released.
    pub fn detail_report(&self, scale: Scale) -> DetailReport<'_> {
        let (summary, regions) = {
            let inner = self.lock();
            (
                Summary::from_totals(inner.totals),
                collect_regions(&inner.store, EVERYTHING),
            )
        };
        let ids = regions.iter().flat_map(|r| {
            std::iter::once(r.reserved_by).chain(r.committed.iter().map(|c| c.committed_by))
        });
        let stacks = self.stacks_of(ids);
        DetailReport {
            summary: SummaryReport {
                summary,
                tags: &self.tags,
                scale,
            },
            regions,
            stacks,
        }
    }

    /// The detail diff against `baseline`, by call site.
    pub fn detail_diff_report<'a>(
        &'a self,
        baseline: &'a Baseline,
        scale: Scale,
    ) -> DetailDiffReport<'a> {
        let now = self.baseline();
        let mut changes: Vec<(Site, usize, usize)> = Vec::new();
        for (&site, &bytes) in &now.sites {
            let before = baseline.sites.get(&site).copied().unwrap_or(0);
            if bytes != before {
                changes.push((site, bytes, before));
            }
        }
        for (&site, &before) in &baseline.sites {
            if !now.sites.contains_key(&site) {
                changes.push((site, 0, before));
            }
        }
        changes.sort_by_key(|&(site, now, before)| {
            (std::cmp::Reverse(diff(now, before).unsigned_abs()), site)
        });
        let stacks = self.stacks_of(changes.iter().map(|c| c.0.stack));
        DetailDiffReport {
            summary: SummaryDiffReport {
                now: now.summary,
                before: &baseline.summary,
                tags: &self.tags,
                scale,
            },
            changes,
            stacks,
        }
    }

    /// Writes the detail report into `w`.
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_detail(&self, w: &mut dyn fmt::Write, scale: Scale) -> fmt::Result {
        write!(w, "{}", self.detail_report(scale))
    }

    /// Writes the detail diff against `baseline` into `w`.
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_detail_diff(
        &self,
        baseline: &Baseline,
        w: &mut dyn fmt::Write,
        scale: Scale,
    ) -> fmt::Result {
        write!(w, "{}", self.detail_diff_report(baseline, scale))
    }

    /// The summary diff report against `baseline` (taken by
    /// [`Tracker::baseline`]).
    pub fn summary_diff_report<'a>(
        &'a self,
        baseline: &'a Baseline,
        scale: Scale,
    ) -> SummaryDiffReport<'a> {
        SummaryDiffReport {
            now: self.summary(),
            before: baseline.summary(),
            tags: &self.tags,
            scale,
        }
    }

    /// Writes the summary diff against `baseline` into `w`, allocating
    /// nothing.
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_summary_diff(
        &self,
        baseline: &Baseline,
        w: &mut dyn fmt::Write,
        scale: Scale,
    ) -> fmt::Result {
        write!(w, "{}", self.summary_diff_report(baseline, scale))
    }
}

crate::summary::to_json!(DetailReport, DetailDiffReport);
