//! The state of one interval of address space, packed into 8 bytes.

use crate::stack_id::StackId;
use hotmem_os::MemTag;
use std::fmt;

/// What the OS would say about an interval of address space.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Kind {
    /// Not tracked: never reserved, or released.
    Released,
    /// Reserved, not committed.
    Reserved,
    /// Reserved and committed.
    Committed,
}

/// The state of an interval: kind, tag, and the stacks that reserved and
/// committed it. Packed into one `u64` so that a boundary point of the tree
/// is an 8-byte address plus an 8-byte state:
///
/// | bits  | field |
/// |-------|-------|
/// | 0–1   | [`Kind`] |
/// | 2–17  | tag number |
/// | 18–40 | reserving [`StackId`] (23 bits) |
/// | 41–63 | committing [`StackId`] (23 bits) |
///
/// A released interval is always the all-zero state, so that equal intervals
/// compare equal and merge.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct RegionState(u64);

const KIND_BITS: u32 = 2;
const TAG_SHIFT: u32 = KIND_BITS;
const TAG_BITS: u32 = 16;
const RSTACK_SHIFT: u32 = TAG_SHIFT + TAG_BITS;
const STACK_BITS: u32 = 23;
const CSTACK_SHIFT: u32 = RSTACK_SHIFT + STACK_BITS;
const STACK_MASK: u64 = (1 << STACK_BITS) - 1;

/// The largest stack id a state can hold.
pub(crate) const MAX_STACK_ID: u32 = STACK_MASK as u32;

impl RegionState {
    /// Address space nobody tracks.
    pub const RELEASED: RegionState = RegionState(0);

    /// Reserved with `tag` by `stack`, not committed.
    #[inline]
    pub fn reserved(tag: MemTag, stack: StackId) -> RegionState {
        RegionState::pack(Kind::Reserved, tag, stack, StackId::NONE)
    }

    /// Reserved with `tag` by `reserved_by`, committed by `committed_by`.
    #[inline]
    pub fn committed(tag: MemTag, reserved_by: StackId, committed_by: StackId) -> RegionState {
        RegionState::pack(Kind::Committed, tag, reserved_by, committed_by)
    }

    #[inline]
    fn pack(kind: Kind, tag: MemTag, rstack: StackId, cstack: StackId) -> RegionState {
        debug_assert!(rstack.get() <= MAX_STACK_ID && cstack.get() <= MAX_STACK_ID);
        let kind = match kind {
            Kind::Released => return RegionState::RELEASED,
            Kind::Reserved => 1,
            Kind::Committed => 2,
        };
        RegionState(
            kind | u64::from(tag.raw()) << TAG_SHIFT
                | u64::from(rstack.get()) << RSTACK_SHIFT
                | u64::from(cstack.get()) << CSTACK_SHIFT,
        )
    }

    /// Released, reserved or committed.
    #[inline]
    pub fn kind(self) -> Kind {
        match self.0 & ((1 << KIND_BITS) - 1) {
            0 => Kind::Released,
            1 => Kind::Reserved,
            _ => Kind::Committed,
        }
    }

    /// Whether the interval is reserved (committed or not).
    #[inline]
    pub fn is_reserved(self) -> bool {
        self.0 != 0
    }

    /// Whether the interval is committed.
    #[inline]
    pub fn is_committed(self) -> bool {
        self.kind() == Kind::Committed
    }

    /// The tag (meaningless for a released interval, where it reads `OTHER`).
    #[inline]
    pub fn tag(self) -> MemTag {
        MemTag::from_raw((self.0 >> TAG_SHIFT) as u16)
    }

    /// The stack that reserved the interval.
    #[inline]
    pub fn reserved_by(self) -> StackId {
        StackId::new(((self.0 >> RSTACK_SHIFT) & STACK_MASK) as u32)
    }

    /// The stack that committed the interval ([`StackId::NONE`] unless committed).
    #[inline]
    pub fn committed_by(self) -> StackId {
        StackId::new(((self.0 >> CSTACK_SHIFT) & STACK_MASK) as u32)
    }

    /// The same interval with another tag.
    #[inline]
    pub fn with_tag(self, tag: MemTag) -> RegionState {
        RegionState::pack(self.kind(), tag, self.reserved_by(), self.committed_by())
    }

    /// The same interval, uncommitted.
    #[inline]
    pub fn uncommitted(self) -> RegionState {
        match self.kind() {
            Kind::Released => self,
            _ => RegionState::reserved(self.tag(), self.reserved_by()),
        }
    }

    /// The same reservation, committed by `stack`.
    #[inline]
    pub fn committed_now(self, stack: StackId) -> RegionState {
        match self.kind() {
            Kind::Released => self,
            _ => RegionState::committed(self.tag(), self.reserved_by(), stack),
        }
    }

    /// Whether two intervals belong to the same reserved region: both
    /// reserved, with the same tag and reserving stack.
    #[inline]
    pub fn same_region(self, other: RegionState) -> bool {
        self.is_reserved()
            && other.is_reserved()
            && self.tag() == other.tag()
            && self.reserved_by() == other.reserved_by()
    }
}

impl fmt::Debug for RegionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Kind::Released => f.write_str("Released"),
            Kind::Reserved => write!(f, "Reserved({:?}, {:?})", self.tag(), self.reserved_by()),
            Kind::Committed => write!(
                f,
                "Committed({:?}, {:?}, {:?})",
                self.tag(),
                self.reserved_by(),
                self.committed_by()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips() {
        let tag = MemTag::from_raw(0xBEEF);
        let r = StackId::new(MAX_STACK_ID);
        let c = StackId::new(12345);
        let s = RegionState::committed(tag, r, c);
        assert_eq!(
            (s.kind(), s.tag(), s.reserved_by(), s.committed_by()),
            (Kind::Committed, tag, r, c)
        );
        let u = s.uncommitted();
        assert_eq!(u, RegionState::reserved(tag, r));
        assert_eq!(u.committed_by(), StackId::NONE);
        assert_eq!(u.with_tag(MemTag::CODE).tag(), MemTag::CODE);
        assert!(s.same_region(u));
        assert!(!RegionState::RELEASED.same_region(RegionState::RELEASED));
        assert_eq!(
            RegionState::RELEASED.committed_now(c),
            RegionState::RELEASED
        );
        assert_eq!(std::mem::size_of::<RegionState>(), 8);
    }
}
