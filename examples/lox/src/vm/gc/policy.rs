//! When the VM asks for a collection, until the runtime sizes its heap
//! itself.
//!
//! The runtime collects only when an allocation finds the heap full, at
//! its maximum (256 MiB by default): an allocating Lox program would touch
//! all of it before its first collection, and its resident set would be
//! the heap's maximum. So the VM counts the bytes it allocates and runs a
//! young collection every [`YOUNG_BUDGET`] bytes (four small pages: young
//! collections free pages only when several young pages pack into fewer),
//! and a full one when what a young collection leaves in use exceeds twice
//! what the last full one left (at least [`FULL_MIN`]), as clox's
//! `nextGC` does. This file goes once the runtime's heap-sizing policy
//! lands; the counting costs one add and one compare per allocation.

use hotmem::{CollectStats, CollectionKind};

/// Bytes allocated between two collections.
pub(crate) const YOUNG_BUDGET: usize = 8 << 20;
/// Heap in use that never calls for a full collection.
pub(crate) const FULL_MIN: usize = 8 << 20;

/// The collection the policy asks for next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A young collection.
    Young,
    /// A full collection.
    Full,
}

/// The policy's state.
#[derive(Debug)]
pub(crate) struct Policy {
    /// Bytes allocated since the last collection.
    pub(crate) allocated: usize,
    /// In use after a young collection above this: the next is full.
    full_at: usize,
    next: Next,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allocated: 0,
            full_at: FULL_MIN,
            next: Next::Young,
        }
    }
}

impl Policy {
    /// Whether an allocation of `bytes` calls for a collection first.
    #[inline(always)]
    pub(crate) fn count(&mut self, bytes: usize) -> bool {
        self.allocated += bytes;
        self.allocated >= YOUNG_BUDGET
    }

    /// The collection to run now; the count starts again.
    pub(crate) fn next(&mut self) -> Next {
        self.allocated = 0;
        self.next
    }

    /// Learns from a collection's outcome.
    pub(crate) fn collected(&mut self, stats: &CollectStats) {
        if stats.kind == CollectionKind::Full {
            self.full_at = (2 * stats.used_after).max(FULL_MIN);
            self.next = Next::Young;
        } else if stats.used_after > self.full_at {
            self.next = Next::Full;
        }
    }
}
