//! Summary numbers and the summary report: copied out under the lock in
//! O(tags), printed afterwards without allocating.

use crate::delta::Totals;
use crate::scale::{Scale, put_amount, put_spaces};
use crate::tags::{MAX_TAGS, TagRegistry};
use hotmem_os::MemTag;
use serde::ser::{SerializeSeq, SerializeStruct};
use std::fmt::{self, Write as _};

/// Every tag's reserved and committed bytes at one moment. Plain data (a
/// fixed array, `Copy`): taking it copies the totals under the lock and
/// allocates nothing.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Summary {
    totals: [Totals; MAX_TAGS],
}

impl Summary {
    pub(crate) fn from_totals(totals: [Totals; MAX_TAGS]) -> Summary {
        Summary { totals }
    }

    /// The totals of `tag` (zero for a number at or above [`MAX_TAGS`]).
    pub fn of(&self, tag: MemTag) -> Totals {
        self.totals
            .get(usize::from(tag.raw()))
            .copied()
            .unwrap_or_default()
    }

    /// All tags together.
    pub fn total(&self) -> Totals {
        self.totals.iter().fold(Totals::ZERO, |a, t| Totals {
            reserved: a.reserved.wrapping_add(t.reserved),
            committed: a.committed.wrapping_add(t.committed),
        })
    }

    /// The tags that have memory, in tag order.
    pub fn iter(&self) -> impl Iterator<Item = (MemTag, Totals)> + '_ {
        self.totals
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_zero())
            .map(|(i, t)| (MemTag::from_raw(i as u16), *t))
    }
}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The summary report: `Display` writes text shaped like
/// `jcmd VM.native_memory summary` without allocating; `Serialize` gives
/// the same numbers (in bytes) as data for tools.
pub struct SummaryReport<'a> {
    pub(crate) summary: Summary,
    pub(crate) tags: &'a TagRegistry,
    pub(crate) scale: Scale,
}

impl SummaryReport<'_> {
    /// The numbers the report prints.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
}

/// A tag's name, right-aligned in the report's column, without allocating.
pub(crate) struct Label<'a>(pub(crate) &'a TagRegistry, pub(crate) MemTag);

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.name(self.1) {
            Some(n) => f.pad(n),
            None => write!(f, "{:>22} #{:<3}", "Tag", self.1.raw()),
        }
    }
}

/// `-<name right-aligned in 27> (reserved=..., committed=...)`, the
/// summary's line per tag, written without `core::fmt` arguments.
fn put_tag_line(
    f: &mut dyn fmt::Write,
    tags: &TagRegistry,
    tag: MemTag,
    t: Totals,
    scale: Scale,
) -> fmt::Result {
    f.write_str("-")?;
    match tags.name(tag) {
        Some(n) => {
            put_spaces(f, 27usize.saturating_sub(n.chars().count()))?;
            f.write_str(n)?;
        }
        None => write!(f, "{:>27}", Label(tags, tag))?,
    }
    f.write_str(" (reserved=")?;
    put_amount(f, t.reserved, scale)?;
    f.write_str(", committed=")?;
    put_amount(f, t.committed, scale)?;
    f.write_str(")\n")
}

/// A line assembled on the stack, so that the report makes one call into
/// the caller's writer per line instead of one per piece.
struct LineBuf {
    buf: [u8; 256],
    len: usize,
}

impl LineBuf {
    fn new() -> LineBuf {
        LineBuf {
            buf: [0; 256],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Writes one tag line through a [`LineBuf`] (directly if it does not fit).
fn write_tag_line(
    f: &mut fmt::Formatter<'_>,
    tags: &TagRegistry,
    tag: MemTag,
    t: Totals,
    scale: Scale,
) -> fmt::Result {
    let mut line = LineBuf::new();
    match put_tag_line(&mut line, tags, tag, t, scale) {
        Ok(()) => f.write_str(line.as_str()),
        Err(_) => put_tag_line(f, tags, tag, t, scale),
    }
}

impl fmt::Display for SummaryReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.scale;
        let total = self.summary.total();
        let mut head = LineBuf::new();
        head.write_str("Native Memory Tracking (virtual memory):\n\nTotal: reserved=")?;
        put_amount(&mut head, total.reserved, s)?;
        head.write_str(", committed=")?;
        put_amount(&mut head, total.committed, s)?;
        head.write_str("\n\n")?;
        f.write_str(head.as_str())?;
        for (tag, t) in self.summary.iter() {
            write_tag_line(f, self.tags, tag, t, s)?;
        }
        Ok(())
    }
}

/// One tag in the JSON form.
#[derive(serde::Serialize)]
struct TagEntry<'a> {
    tag: u16,
    name: NameOf<'a>,
    reserved: usize,
    committed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    reserved_change: Option<isize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    committed_change: Option<isize>,
}

/// A tag's name as a JSON string, written without allocating.
pub(crate) struct NameOf<'a>(pub(crate) &'a TagRegistry, pub(crate) MemTag);

impl serde::Serialize for NameOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.name(self.1) {
            Some(n) => s.serialize_str(n),
            None => s.collect_str(&self.1),
        }
    }
}

/// The tags of a summary (or a diff) as a JSON array.
struct TagList<'a> {
    now: &'a Summary,
    before: Option<&'a Summary>,
    tags: &'a TagRegistry,
}

impl serde::Serialize for TagList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for i in 0..MAX_TAGS {
            let tag = MemTag::from_raw(i as u16);
            let now = self.now.of(tag);
            let before = self.before.map(|b| b.of(tag));
            if now.is_zero() && before.is_none_or(Totals::is_zero) {
                continue;
            }
            seq.serialize_element(&TagEntry {
                tag: tag.raw(),
                name: NameOf(self.tags, tag),
                reserved: now.reserved,
                committed: now.committed,
                reserved_change: before.map(|b| diff(now.reserved, b.reserved)),
                committed_change: before.map(|b| diff(now.committed, b.committed)),
            })?;
        }
        seq.end()
    }
}

#[inline]
pub(crate) fn diff(now: usize, before: usize) -> isize {
    now.wrapping_sub(before) as isize
}

impl serde::Serialize for SummaryReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SummaryReport", 2)?;
        st.serialize_field("total", &self.summary.total())?;
        st.serialize_field(
            "tags",
            &TagList {
                now: &self.summary,
                before: None,
                tags: self.tags,
            },
        )?;
        st.end()
    }
}

/// The summary diff report: now against a [`Baseline`](crate::Baseline).
/// Allocation-free like [`SummaryReport`].
pub struct SummaryDiffReport<'a> {
    pub(crate) now: Summary,
    pub(crate) before: &'a Summary,
    pub(crate) tags: &'a TagRegistry,
    pub(crate) scale: Scale,
}

/// ` +64KB` after an amount, or nothing if it did not change.
struct ChangeSuffix(isize, Scale);

impl fmt::Display for ChangeSuffix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            Ok(())
        } else {
            write!(f, " {}", self.1.change(self.0))
        }
    }
}

impl fmt::Display for SummaryDiffReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.scale;
        let line = |f: &mut fmt::Formatter<'_>, now: Totals, before: Totals| {
            write!(
                f,
                "reserved={}{}, committed={}{}",
                s.amount(now.reserved),
                ChangeSuffix(diff(now.reserved, before.reserved), s),
                s.amount(now.committed),
                ChangeSuffix(diff(now.committed, before.committed), s),
            )
        };
        writeln!(
            f,
            "Native Memory Tracking (virtual memory, diff against baseline):"
        )?;
        writeln!(f)?;
        f.write_str("Total: ")?;
        line(f, self.now.total(), self.before.total())?;
        writeln!(f)?;
        writeln!(f)?;
        for i in 0..MAX_TAGS {
            let tag = MemTag::from_raw(i as u16);
            let (now, before) = (self.now.of(tag), self.before.of(tag));
            if now.is_zero() && before.is_zero() {
                continue;
            }
            write!(f, "-{:>27} (", Label(self.tags, tag))?;
            line(f, now, before)?;
            writeln!(f, ")")?;
        }
        Ok(())
    }
}

impl serde::Serialize for SummaryDiffReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (now, before) = (self.now.total(), self.before.total());
        let mut st = s.serialize_struct("SummaryDiffReport", 4)?;
        st.serialize_field("total", &now)?;
        st.serialize_field("reserved_change", &diff(now.reserved, before.reserved))?;
        st.serialize_field("committed_change", &diff(now.committed, before.committed))?;
        st.serialize_field(
            "tags",
            &TagList {
                now: &self.now,
                before: Some(self.before),
                tags: self.tags,
            },
        )?;
        st.end()
    }
}

/// `to_json` for the reports: they serialize plain numbers and strings, so
/// `serde_json` cannot fail on them.
macro_rules! to_json {
    ($($ty:ident),*) => {$(
        impl $ty<'_> {
            /// The report as compact JSON (amounts in bytes).
            pub fn to_json(&self) -> String {
                serde_json::to_string(self).expect("reports serialize to JSON")
            }
        }
    )*};
}

to_json!(SummaryReport, SummaryDiffReport);
pub(crate) use to_json;
