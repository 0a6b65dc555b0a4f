//! Per-tag totals and the change one operation makes to them.

use hotmem_os::MemTag;

/// Reserved and committed bytes of one tag (or of everything).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Totals {
    /// Bytes reserved (committed bytes included).
    pub reserved: usize,
    /// Bytes committed.
    pub committed: usize,
}

impl Totals {
    /// Both numbers zero.
    pub const ZERO: Totals = Totals {
        reserved: 0,
        committed: 0,
    };

    /// Whether both numbers are zero.
    #[inline]
    pub fn is_zero(self) -> bool {
        self == Totals::ZERO
    }

    #[inline]
    pub(crate) fn apply(&mut self, d: &TagDelta) {
        self.reserved = self.reserved.wrapping_add_signed(d.reserved);
        self.committed = self.committed.wrapping_add_signed(d.committed);
    }
}

/// How one operation changed one tag's totals.
///
/// The changes are two's complement modulo 2^64, like the totals: exact for
/// any change of at most `isize::MAX` bytes, that is for every operation on
/// a real address space (at most 2^57 bytes on current hardware). A change
/// of a range larger than that still adds up to the right totals.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TagDelta {
    /// The tag.
    #[serde(serialize_with = "serialize_tag")]
    pub tag: MemTag,
    /// Change of reserved bytes.
    pub reserved: isize,
    /// Change of committed bytes.
    pub committed: isize,
}

/// Serializes a tag as its number.
pub(crate) fn serialize_tag<S: serde::Serializer>(tag: &MemTag, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u16(tag.raw())
}

/// Entries kept inline before a [`Delta`] spills to the heap. An operation
/// touches one tag unless its range spans reservations of different tags.
const INLINE: usize = 4;

/// The per-tag change one operation caused, one entry per tag whose totals
/// moved. Allocation-free unless more than four tags changed at once.
#[derive(Clone, Debug, Default)]
pub struct Delta {
    inline: [Option<TagDelta>; INLINE],
    spill: Vec<TagDelta>,
}

impl Delta {
    /// Adds `bytes` of `kind` change to `tag`'s entry.
    #[inline]
    pub(crate) fn add(&mut self, tag: MemTag, reserved: isize, committed: isize) {
        if let Some(d) = self.entry(tag) {
            // Wrapping, like the totals: a change of more than isize::MAX
            // bytes (only a range above 2^63 can make one) is kept modulo
            // 2^64 instead of overflowing.
            d.reserved = d.reserved.wrapping_add(reserved);
            d.committed = d.committed.wrapping_add(committed);
            return;
        }
        let new = TagDelta {
            tag,
            reserved,
            committed,
        };
        match self.inline.iter_mut().find(|e| e.is_none()) {
            Some(slot) => *slot = Some(new),
            None => self.spill.push(new),
        }
    }

    fn entry(&mut self, tag: MemTag) -> Option<&mut TagDelta> {
        self.inline
            .iter_mut()
            .flatten()
            .chain(self.spill.iter_mut())
            .find(|d| d.tag == tag)
    }

    /// The entries, without those that cancelled out.
    pub fn iter(&self) -> impl Iterator<Item = &TagDelta> + '_ {
        self.inline
            .iter()
            .flatten()
            .chain(self.spill.iter())
            .filter(|d| d.reserved != 0 || d.committed != 0)
    }

    /// The change of one tag (zero if it did not change).
    pub fn of(&self, tag: MemTag) -> (isize, isize) {
        self.iter()
            .find(|d| d.tag == tag)
            .map_or((0, 0), |d| (d.reserved, d.committed))
    }

    /// Whether no tag changed.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_merges_per_tag_and_spills() {
        let mut d = Delta::default();
        assert!(d.is_empty());
        d.add(MemTag::CODE, 4096, 0);
        d.add(MemTag::CODE, 0, 4096);
        assert_eq!(d.of(MemTag::CODE), (4096, 4096));
        for raw in 0..6u16 {
            d.add(MemTag::from_raw(40 + raw), -1, -1);
        }
        assert_eq!(d.iter().count(), 7);
        d.add(MemTag::from_raw(45), 1, 1);
        assert_eq!(d.iter().count(), 6);
        assert_eq!(d.of(MemTag::from_raw(45)), (0, 0));
    }
}
