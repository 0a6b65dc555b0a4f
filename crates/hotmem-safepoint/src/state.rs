//! Thread states and the word that publishes them.
//!
//! The state word packs the kind of state with the id of the safepoint a
//! thread is blocked in, so one load is a stable snapshot of both: the
//! coordinator never pairs a state with an id from a different moment.
//! A thread seen `AtSafepoint` of an *earlier* id is still on its way out of
//! that safepoint; it counts as safe, because every way out of a safe state
//! publishes `Managed`, issues a `SeqCst` fence and then re-reads the poll
//! word (mirroring the coordinator's arm, fence, read), so it blocks again
//! before it can run a single instruction of managed code.

use crate::ids::SafepointId;
use crate::sync::{AtomicU64, CachePadded, Ordering};
use serde::{Deserialize, Serialize};

/// What a registered mutator thread is doing, as far as safepoints care.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ThreadState {
    /// Running managed code: it must poll, and a safepoint waits for it.
    Managed,
    /// Running native code that does not touch the managed heap: safe.
    Native,
    /// Blocked (on a lock, in I/O, sleeping): safe.
    Blocked,
    /// Stopped in a safepoint's slow path: safe.
    AtSafepoint,
    /// Unregistering (the handle is being dropped, maybe by a panic): safe.
    Exiting,
}

impl ThreadState {
    /// May a safepoint operation run while a thread is in this state?
    pub fn is_safe(self) -> bool {
        !matches!(self, ThreadState::Managed)
    }

    const fn code(self) -> u64 {
        match self {
            ThreadState::Managed => 0,
            ThreadState::Native => 1,
            ThreadState::Blocked => 2,
            ThreadState::AtSafepoint => 3,
            ThreadState::Exiting => 4,
        }
    }

    fn from_code(code: u64) -> Self {
        match code {
            0 => ThreadState::Managed,
            1 => ThreadState::Native,
            2 => ThreadState::Blocked,
            3 => ThreadState::AtSafepoint,
            _ => ThreadState::Exiting,
        }
    }
}

/// A state together with the safepoint it refers to (for `AtSafepoint`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct StateSnapshot {
    pub(crate) state: ThreadState,
    pub(crate) safepoint: Option<SafepointId>,
}

const KIND_BITS: u32 = 3;
const KIND_MASK: u64 = (1 << KIND_BITS) - 1;

/// The published state of one thread, on its own cache line.
#[derive(Debug)]
pub(crate) struct StateWord(CachePadded<AtomicU64>);

impl StateWord {
    pub(crate) fn new(state: ThreadState) -> Self {
        StateWord(CachePadded::new(AtomicU64::new(state.code())))
    }

    /// Publish a state. The caller follows it with a `SeqCst` fence before
    /// it reads its poll word: the thread's half of the Dekker pair.
    pub(crate) fn set(&self, state: ThreadState) {
        self.0.store(state.code(), Ordering::Release);
    }

    /// Publish "stopped in safepoint `id`".
    pub(crate) fn set_at_safepoint(&self, id: SafepointId) {
        let word = (id.get() << KIND_BITS) | ThreadState::AtSafepoint.code();
        self.0.store(word, Ordering::Release);
    }

    /// One stable read of state and safepoint id. Readers that rely on the
    /// Dekker pair (arm, `SeqCst` fence, read) fence before calling this.
    pub(crate) fn snapshot(&self) -> StateSnapshot {
        let word = self.0.load(Ordering::Acquire);
        let state = ThreadState::from_code(word & KIND_MASK);
        let safepoint = if state == ThreadState::AtSafepoint {
            SafepointId::from_counter(word >> KIND_BITS)
        } else {
            None
        };
        StateSnapshot { state, safepoint }
    }
}
