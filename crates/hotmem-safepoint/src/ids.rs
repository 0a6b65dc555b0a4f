//! Newtypes for the numbers the protocol passes around.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The bits a safepoint id may occupy: the poll word (`poll.rs`) keeps its
/// flags in the bits above them.
pub(crate) const ID_BITS: u64 = (1 << 61) - 1;

/// The id of one safepoint: the value of the safepoint counter while it is in
/// progress. The counter is odd while a safepoint is in progress and even
/// between safepoints (as in HotSpot), so an id is always odd and never zero.
///
/// An id names a safepoint; it cannot end one (that takes the
/// [`SafepointGuard`](crate::SafepointGuard) or
/// [`SafepointTicket`](crate::SafepointTicket) that `begin` returned), and
/// only the coordinator makes ids:
///
/// ```compile_fail,E0624
/// let id = hotmem_safepoint::SafepointId::from_counter(1);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SafepointId(u64);

impl SafepointId {
    /// Wraps a counter value; `None` unless it is odd (in progress) and fits
    /// below the poll word's flag bits. Crate-private: an id is
    /// information, never a capability, and only the coordinator makes them.
    pub(crate) fn from_counter(counter: u64) -> Option<Self> {
        (counter & 1 == 1 && counter & !ID_BITS == 0).then_some(SafepointId(counter))
    }

    /// The raw counter value.
    pub fn get(self) -> u64 {
        self.0
    }

    /// How many safepoints were begun up to and including this one.
    pub fn ordinal(self) -> u64 {
        self.0.div_ceil(2)
    }

    /// The 32-bit tag the wait barrier keys on (odd, hence never zero).
    pub(crate) fn barrier_tag(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Display for SafepointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.ordinal())
    }
}

/// The id of one registration of a mutator thread with a coordinator.
/// Unique for the coordinator's lifetime; never reused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MutatorId(pub(crate) u64);

impl MutatorId {
    /// The raw number (1 for the first registration, then 2, 3, ...).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for MutatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mutator-{}", self.0)
    }
}
