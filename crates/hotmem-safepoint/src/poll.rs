//! The thread-local poll word.
//!
//! Every mutator owns one word. Zero means "nothing to do": the poll is one
//! load and one never-taken branch. Non-zero means the thread must take the
//! slow path: the low bits hold the id of the safepoint in progress (odd, so
//! non-zero whenever armed), [`HANDSHAKE_BIT`] says that handshake
//! operations are queued for the thread, [`YIELD_BIT`] asks it to give
//! its CPU away while a handshake waits for a thread that is not running,
//! and [`REGION_BIT`] says that the thread entered a safe state that it
//! has not left.
//!
//! The safepoint bits are written only by the coordinator that owns the
//! current safepoint; the handshake bit only under the target's handshake
//! queue lock; the yield bit is set by handshake requesters and cleared by
//! the owner; the region bit only by the owner. All use read-modify-writes
//! so none can erase another.
//!
//! # The region bit
//! A live [`SafeRegion`](crate::SafeRegion) borrows the thread's handle, so
//! the thread cannot poll while it is in the region: a poll that finds the
//! bit set comes after a region that was leaked (`mem::forget`), whose
//! thread runs again while its published state still says it is safe. The
//! poll's slow path then leaves the safe state as the region's drop would
//! have. Setting and clearing the bit is the read of the poll word that
//! every transition makes after its fence, so it costs no extra access.

use crate::ids::{ID_BITS, SafepointId};
use crate::sync::{AtomicU64, CachePadded, Ordering};

/// Set while handshake operations are queued for the thread.
pub(crate) const HANDSHAKE_BIT: u64 = 1 << 63;
/// Set while a handshake asks the other threads to yield their CPU to its
/// target (advisory: the owner clears it once no handshake asks).
pub(crate) const YIELD_BIT: u64 = 1 << 62;
/// Set by the owner from entering a safe state until it leaves it (see the
/// module docs).
pub(crate) const REGION_BIT: u64 = 1 << 61;
/// Every bit that is not the safepoint id.
pub(crate) const FLAG_BITS: u64 = HANDSHAKE_BIT | YIELD_BIT | REGION_BIT;
const _: () = assert!(FLAG_BITS == !ID_BITS, "the flags sit right above the id");

/// What an armed poll word asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PollRequest {
    pub(crate) safepoint: Option<SafepointId>,
    pub(crate) handshake: bool,
    pub(crate) yield_cpu: bool,
    /// The owner is in a safe state it entered itself.
    pub(crate) region: bool,
}

impl PollRequest {
    fn decode(word: u64) -> Self {
        PollRequest {
            safepoint: SafepointId::from_counter(word & !FLAG_BITS),
            handshake: word & HANDSHAKE_BIT != 0,
            yield_cpu: word & YIELD_BIT != 0,
            region: word & REGION_BIT != 0,
        }
    }
}

/// One thread's poll word, on a cache line of its own: the coordinator
/// writes it while the owner reads it in its hottest loop.
#[derive(Debug)]
pub(crate) struct PollWord(CachePadded<AtomicU64>);

impl PollWord {
    pub(crate) fn new(armed_for: Option<SafepointId>) -> Self {
        PollWord(CachePadded::new(AtomicU64::new(
            armed_for.map_or(0, SafepointId::get),
        )))
    }

    /// The fast-path check: does the owner have to take the slow path?
    #[inline(always)]
    pub(crate) fn is_armed(&self) -> bool {
        self.0.load(Ordering::Acquire) != 0
    }

    /// Read what the word asks for. In a state transition the thread
    /// publishes its state, issues a `SeqCst` fence, then calls this: the
    /// thread's half of the Dekker pair with [`PollWord::arm_safepoint`].
    pub(crate) fn request(&self) -> PollRequest {
        PollRequest::decode(self.0.load(Ordering::Acquire))
    }

    /// The owner enters a safe state: set the region bit and read what the
    /// word asked for before (the read of the Dekker pair, as
    /// [`PollWord::request`]). `region` in the result says that the bit was
    /// set already: the thread was in a safe state that it never left.
    pub(crate) fn enter_region(&self) -> PollRequest {
        PollRequest::decode(self.0.fetch_or(REGION_BIT, Ordering::SeqCst))
    }

    /// The owner leaves the safe state: clear the region bit and read what
    /// the word asks for (the read of the Dekker pair).
    pub(crate) fn leave_region(&self) -> PollRequest {
        PollRequest::decode(self.0.fetch_and(!REGION_BIT, Ordering::SeqCst))
    }

    /// Whether the owner is in a safe state it entered itself (see the
    /// module docs: on the owner's poll, a leaked region).
    #[inline(always)]
    pub(crate) fn in_region(&self) -> bool {
        self.0.load(Ordering::Relaxed) & REGION_BIT != 0
    }

    /// Arm for safepoint `id` (coordinator only, with the id bits clear).
    pub(crate) fn arm_safepoint(&self, id: SafepointId) {
        let old = self.0.fetch_or(id.get(), Ordering::SeqCst);
        debug_assert_eq!(old & !FLAG_BITS, 0, "armed twice");
    }

    /// Clear the safepoint bits, keeping the flags.
    pub(crate) fn disarm_safepoint(&self) {
        self.0.fetch_and(FLAG_BITS, Ordering::SeqCst);
    }

    /// Ask the owner to yield its CPU at its next poll (a handshake
    /// requester, for another thread's sake).
    pub(crate) fn arm_yield(&self) {
        self.0.fetch_or(YIELD_BIT, Ordering::SeqCst);
    }

    /// The owner: no handshake asks for yields any more.
    pub(crate) fn disarm_yield(&self) {
        self.0.fetch_and(!YIELD_BIT, Ordering::SeqCst);
    }

    /// Ask the owner to process its handshake queue (queue lock held).
    pub(crate) fn arm_handshake(&self) {
        self.0.fetch_or(HANDSHAKE_BIT, Ordering::SeqCst);
    }

    /// The queue is empty again (queue lock held).
    pub(crate) fn disarm_handshake(&self) {
        self.0.fetch_and(!HANDSHAKE_BIT, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn flags_and_the_safepoint_id_never_erase_each_other() {
        let id = SafepointId::from_counter(7).unwrap();
        let poll = PollWord::new(None);
        assert!(!poll.is_armed());
        poll.arm_yield();
        assert!(poll.is_armed());
        assert!(!poll.enter_region().region);
        assert!(poll.in_region());
        poll.arm_safepoint(id);
        poll.arm_handshake();
        let request = poll.request();
        assert_eq!(request.safepoint, Some(id));
        assert!(request.handshake && request.yield_cpu && request.region);
        // Entering again without leaving: the bit was set already.
        assert!(poll.enter_region().region);
        poll.disarm_safepoint();
        let request = poll.leave_region();
        assert_eq!(request.safepoint, None);
        assert!(request.handshake && request.yield_cpu && request.region);
        assert!(!poll.in_region());
        poll.disarm_yield();
        poll.disarm_handshake();
        assert!(!poll.is_armed());
        // An id never reaches into the flag bits.
        assert_eq!(SafepointId::from_counter(YIELD_BIT | 1), None);
        assert_eq!(SafepointId::from_counter(HANDSHAKE_BIT | 1), None);
        assert_eq!(SafepointId::from_counter(REGION_BIT | 1), None);
    }
}
