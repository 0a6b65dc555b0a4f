//! The thread-local poll word.
//!
//! Every mutator owns one word. Zero means "nothing to do": the poll is one
//! load and one never-taken branch. Non-zero means the thread must take the
//! slow path: the low bits hold the id of the safepoint in progress (odd, so
//! non-zero whenever armed), and [`HANDSHAKE_BIT`] says that handshake
//! operations are queued for the thread.
//!
//! The safepoint bits are written only by the coordinator that owns the
//! current safepoint; the handshake bit only under the target's handshake
//! queue lock. Both use read-modify-writes so neither can erase the other.

use crate::ids::SafepointId;
use crate::sync::{AtomicU64, CachePadded, Ordering};

/// Set while handshake operations are queued for the thread.
pub(crate) const HANDSHAKE_BIT: u64 = 1 << 63;

/// What an armed poll word asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PollRequest {
    pub(crate) safepoint: Option<SafepointId>,
    pub(crate) handshake: bool,
}

impl PollRequest {
    fn decode(word: u64) -> Self {
        PollRequest {
            safepoint: SafepointId::from_counter(word & !HANDSHAKE_BIT),
            handshake: word & HANDSHAKE_BIT != 0,
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

    /// Arm for safepoint `id` (coordinator only, with the id bits clear).
    pub(crate) fn arm_safepoint(&self, id: SafepointId) {
        let old = self.0.fetch_or(id.get(), Ordering::SeqCst);
        debug_assert_eq!(old & !HANDSHAKE_BIT, 0, "armed twice");
    }

    /// Clear the safepoint bits, keeping a pending handshake.
    pub(crate) fn disarm_safepoint(&self) {
        self.0.fetch_and(HANDSHAKE_BIT, Ordering::SeqCst);
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
