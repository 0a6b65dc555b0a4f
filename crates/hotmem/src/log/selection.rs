//! [`LogSelection`]: which tag sets log at which level, parsed from
//! selectors like HotSpot's `-Xlog:gc*=info,safepoint=debug`.

use super::level::{LogLevel, UnknownLevel};
use super::tags::TagSet;
use std::fmt;
use std::str::FromStr;

/// A level per tag set. Made from selectors ([`LogSelection::parse`]) or
/// piece by piece ([`LogSelection::with`]).
///
/// ```
/// use hotmem::log::{LogLevel, LogSelection, TagSet};
/// let s: LogSelection = "gc*=info,safepoint=debug,gc+stats=off".parse()?;
/// assert!(s.enabled(TagSet::GcPhases, LogLevel::Info));
/// assert!(!s.enabled(TagSet::GcPhases, LogLevel::Debug));
/// assert!(s.enabled(TagSet::Safepoint, LogLevel::Debug));
/// assert_eq!(s.level(TagSet::GcStats), LogLevel::Off);
/// # Ok::<(), hotmem::log::SelectorError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSelection {
    levels: [LogLevel; TagSet::COUNT],
}

/// Why a selector string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectorError {
    /// A selector between commas is empty.
    Empty,
    /// A tag that no tag set has.
    UnknownTag(String),
    /// A level that does not exist.
    UnknownLevel(UnknownLevel),
    /// The selector is well formed but names no tag set of the runtime
    /// (`heap` alone, `safepoint+gc`).
    NoMatch(String),
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectorError::Empty => f.write_str("empty log selector"),
            SelectorError::UnknownTag(t) => {
                write!(f, "unknown log tag {t:?} (known: ")?;
                for (i, k) in TagSet::known_tags().enumerate() {
                    write!(f, "{}{k}", if i == 0 { "" } else { ", " })?;
                }
                f.write_str(")")
            }
            SelectorError::UnknownLevel(e) => write!(f, "{e}"),
            SelectorError::NoMatch(s) => write!(f, "log selector {s:?} matches no tag set"),
        }
    }
}

impl std::error::Error for SelectorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SelectorError::UnknownLevel(e) => Some(e),
            _ => None,
        }
    }
}

impl LogSelection {
    /// Nothing selected.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every tag set at `level`.
    pub fn all(level: LogLevel) -> Self {
        LogSelection {
            levels: [level; TagSet::COUNT],
        }
    }

    /// The same selection with `tags` at `level`.
    pub fn with(mut self, tags: TagSet, level: LogLevel) -> Self {
        self.levels[tags.index()] = level;
        self
    }

    /// The level `tags` is selected at ([`LogLevel::Off`] if not at all).
    pub fn level(&self, tags: TagSet) -> LogLevel {
        self.levels[tags.index()]
    }

    /// Whether a line of `tags` at `level` passes.
    #[inline]
    pub fn enabled(&self, tags: TagSet, level: LogLevel) -> bool {
        level != LogLevel::Off && self.levels[tags.index()] >= level
    }

    /// Whether nothing passes.
    pub fn is_none(&self) -> bool {
        self.levels.iter().all(|l| *l == LogLevel::Off)
    }

    /// For each tag set, the more detailed level of `self` and `other`.
    pub(crate) fn union(mut self, other: &LogSelection) -> Self {
        for (a, b) in self.levels.iter_mut().zip(other.levels) {
            *a = (*a).max(b);
        }
        self
    }

    /// Parses comma-separated selectors, applied left to right (a later one
    /// overrides an earlier one for the tag sets it matches). The grammar
    /// is in the [module docs](crate::log).
    ///
    /// # Errors
    /// [`SelectorError`] for the first selector that is empty, names an
    /// unknown tag or level, or matches no tag set.
    pub fn parse(spec: &str) -> Result<Self, SelectorError> {
        let mut s = LogSelection::none();
        for selector in spec.split(',') {
            let selector = selector.trim();
            if selector.is_empty() {
                return Err(SelectorError::Empty);
            }
            let (what, level) = match selector.split_once('=') {
                Some((w, l)) => (
                    w.trim(),
                    l.trim().parse().map_err(SelectorError::UnknownLevel)?,
                ),
                None => (selector, LogLevel::Info),
            };
            let mut matched = false;
            for tags in TagSet::ALL {
                if matches(what, tags)? {
                    s.levels[tags.index()] = level;
                    matched = true;
                }
            }
            if !matched {
                return Err(SelectorError::NoMatch(selector.to_string()));
            }
        }
        Ok(s)
    }
}

/// Whether selector `what` (`all`, `gc`, `gc*`, `gc+phases`, `gc+heap*`)
/// matches `tags`: the same tags, or with `*` at least those tags.
fn matches(what: &str, tags: TagSet) -> Result<bool, SelectorError> {
    if what == "all" {
        return Ok(true);
    }
    let (what, wildcard) = match what.strip_suffix('*') {
        Some(w) => (w, true),
        None => (what, false),
    };
    let mut count = 0;
    let mut all_in = true;
    for tag in what.split('+') {
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(SelectorError::Empty);
        }
        if !TagSet::known_tags().any(|k| k == tag) {
            return Err(SelectorError::UnknownTag(tag.to_string()));
        }
        all_in &= tags.tags().contains(&tag);
        count += 1;
    }
    if !all_in {
        return Ok(false);
    }
    Ok(wildcard || count == tags.tags().len())
}

impl FromStr for LogSelection {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LogSelection::parse(s)
    }
}

impl fmt::Display for LogSelection {
    /// Selectors that parse back to the same selection (`gc=info,...`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, tags) in TagSet::ALL.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}={}", tags.tags().join("+"), self.level(tags))?;
        }
        Ok(())
    }
}
