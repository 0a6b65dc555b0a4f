//! [`CpuSet`]: a set of logical CPUs (PUs) by operating-system index.
//!
//! Our own type, so that the API does not expose hwloc's bitmaps. Printed in
//! the Linux list format (`0-3,8,10-11`), the format of
//! `/sys/devices/system/node/node0/cpulist` and of `taskset -c`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A finite set of CPUs (processing units), by OS index.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CpuSet {
    /// Bit `i % 64` of word `i / 64` is CPU `i`. No trailing zero words.
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// The CPUs `start..end`.
    pub fn from_range(range: std::ops::Range<usize>) -> Self {
        range.collect()
    }

    /// Adds CPU `cpu`.
    pub fn insert(&mut self, cpu: usize) {
        let word = cpu / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (cpu % 64);
    }

    /// Removes CPU `cpu`.
    pub fn remove(&mut self, cpu: usize) {
        if let Some(w) = self.words.get_mut(cpu / 64) {
            *w &= !(1 << (cpu % 64));
            self.trim();
        }
    }

    /// Whether CPU `cpu` is in the set.
    #[inline]
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no CPU.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether every CPU of `self` is also in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(i * 64 + b)
            })
        })
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    pub(crate) fn from_hwloc(set: &hwlocality::cpu::cpuset::CpuSet) -> Self {
        set.iter_set().map(usize::from).collect()
    }

    pub(crate) fn to_hwloc(&self) -> hwlocality::cpu::cpuset::CpuSet {
        self.iter()
            .map(|cpu| {
                hwlocality::bitmap::BitmapIndex::try_from(cpu)
                    .expect("CPU indices come from hwloc and fit its index type")
            })
            .collect()
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

/// The list format: `0-3,8,10-11`; the empty set prints as `(none)`.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(none)");
        }
        let mut iter = self.iter().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().expect("peeked");
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_format_and_set_operations() {
        let mut s: CpuSet = [0, 1, 2, 3, 8, 10, 11, 64, 130].into_iter().collect();
        assert_eq!(s.to_string(), "0-3,8,10-11,64,130");
        assert_eq!(s.len(), 9);
        assert!(s.contains(130) && !s.contains(129) && !s.contains(1000));
        s.remove(130);
        s.remove(64);
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert_eq!(s, [0, 1, 2, 3, 8, 10, 11].into_iter().collect());
        let low = CpuSet::from_range(0..4);
        assert!(low.is_subset(&s) && !s.is_subset(&low));
        assert!(low.intersects(&s));
        assert!(!low.intersects(&CpuSet::from_range(4..8)));
        assert!(CpuSet::new().is_subset(&low));
        assert_eq!(CpuSet::new().to_string(), "(none)");
        assert_eq!(s.first(), Some(0));
    }

    #[test]
    #[cfg_attr(miri, ignore = "hwloc is C code (FFI): Miri cannot run it")]
    fn round_trips_through_hwloc() {
        let s: CpuSet = [1, 5, 6, 7, 70].into_iter().collect();
        assert_eq!(CpuSet::from_hwloc(&s.to_hwloc()), s);
    }

    #[test]
    fn serializes_as_data() {
        let s = CpuSet::from_range(2..5);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<CpuSet>(&json).unwrap(), s);
    }
}
