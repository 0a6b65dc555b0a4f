//! [`TagSet`]: what a log line is about, as HotSpot's unified logging
//! names it (`gc`, `gc,phases`, ...).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The tag sets the runtime logs under. A line carries exactly one; a
/// selector picks tag sets by their tags (see the [module docs](crate::log)).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TagSet {
    /// `gc`: one line per collection, its cause, heap before and after, pause.
    Gc,
    /// `gc,phases`: the phases of a collection and their times.
    GcPhases,
    /// `gc,heap`: pages examined, freed and evacuated; committed memory.
    GcHeap,
    /// `gc,stats`: the page allocator's statistics table (ZGC's `ZStat`).
    GcStats,
    /// `gc,metaspace`: class and non-class metaspace use at a collection.
    GcMetaspace,
    /// `gc,ref`: reference processing (weak handles, ephemerons,
    /// finalizers, the binding's hook) at a collection.
    GcRef,
    /// `gc,age`: what a concurrent young cycle found live in the young
    /// generation, its tenuring threshold, the pages it promoted and aged.
    GcAge,
    /// `safepoint`: one line per safepoint, HotSpot's `-Xlog:safepoint`.
    Safepoint,
}

impl TagSet {
    /// How many tag sets there are.
    pub const COUNT: usize = 8;

    /// Every tag set.
    pub const ALL: [TagSet; TagSet::COUNT] = [
        TagSet::Gc,
        TagSet::GcPhases,
        TagSet::GcHeap,
        TagSet::GcStats,
        TagSet::GcMetaspace,
        TagSet::GcRef,
        TagSet::GcAge,
        TagSet::Safepoint,
    ];

    /// The tags, in the order the decoration writes them.
    pub fn tags(self) -> &'static [&'static str] {
        match self {
            TagSet::Gc => &["gc"],
            TagSet::GcPhases => &["gc", "phases"],
            TagSet::GcHeap => &["gc", "heap"],
            TagSet::GcStats => &["gc", "stats"],
            TagSet::GcMetaspace => &["gc", "metaspace"],
            TagSet::GcRef => &["gc", "ref"],
            TagSet::GcAge => &["gc", "age"],
            TagSet::Safepoint => &["safepoint"],
        }
    }

    /// Every tag any tag set has.
    pub fn known_tags() -> impl Iterator<Item = &'static str> {
        [
            "gc",
            "phases",
            "heap",
            "stats",
            "metaspace",
            "ref",
            "age",
            "safepoint",
        ]
        .into_iter()
    }

    /// The tag set's position in [`TagSet::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for TagSet {
    /// The decoration: tags joined by commas (`gc,phases`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tags().join(","))
    }
}
