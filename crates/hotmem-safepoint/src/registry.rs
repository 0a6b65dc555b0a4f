//! The registry of mutator threads and each thread's shared slot.
//!
//! A slot is what the coordinator and the handshake requesters know about a
//! thread: its poll word, its published state, which safepoint it was last
//! counted for, and its handshake queue. The thread's
//! [`MutatorHandle`](crate::MutatorHandle) and the registry share it through
//! an `Arc`, so a coordinator that took a snapshot may still look at a slot
//! whose thread has just unregistered.

use crate::handshake::HandshakeQueue;
use crate::ids::{MutatorId, SafepointId};
use crate::poll::PollWord;
use crate::state::{StateWord, ThreadState};
use crate::sync::thread::ThreadId;
use crate::sync::{Arc, AtomicU64, CachePadded, Ordering, UnmodelledMutex};

/// Everything shared about one registered thread.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) id: MutatorId,
    pub(crate) owner: ThreadId,
    pub(crate) poll: PollWord,
    pub(crate) state: StateWord,
    /// The newest safepoint this thread has been counted as safe for.
    accounted: CachePadded<AtomicU64>,
    pub(crate) handshakes: HandshakeQueue,
    /// The thread's registrations with every coordinator.
    pub(crate) thread: Arc<ThreadRecord>,
}

impl Slot {
    /// A new slot, starting `Blocked` (safe): the registering thread then
    /// leaves the safe state like any other, which blocks it if a safepoint
    /// is in progress. A slot created during safepoint `id` is armed for it
    /// and already counted (the coordinator's count did not include it).
    fn new(
        id: MutatorId,
        owner: ThreadId,
        thread: Arc<ThreadRecord>,
        in_progress: Option<SafepointId>,
    ) -> Self {
        Slot {
            thread,
            id,
            owner,
            poll: PollWord::new(in_progress),
            state: StateWord::new(ThreadState::Blocked),
            accounted: CachePadded::new(AtomicU64::new(in_progress.map_or(0, SafepointId::get))),
            handshakes: HandshakeQueue::new(),
        }
    }

    /// Count this thread as safe for `id`. Returns true for exactly one
    /// caller per (thread, safepoint): the thread itself and the coordinator
    /// may both try, and a stale try for an older id is ignored.
    pub(crate) fn claim_accounting(&self, id: SafepointId) -> bool {
        self.accounted.fetch_max(id.get(), Ordering::AcqRel) < id.get()
    }
}

/// One thread's registrations with every coordinator, shared by the
/// thread and its slots, so that a check on one coordinator can see the
/// thread's states on the others (`elsewhere.rs`). Changed only by its own
/// thread, when it registers and unregisters.
#[derive(Debug, Default)]
pub(crate) struct ThreadRecord {
    /// (the coordinator's key, the thread's slot there). The lock is held
    /// only to copy or change the list, never across a read of a state
    /// (it is not modelled: see `sync.rs`).
    pub(crate) slots: UnmodelledMutex<Vec<(usize, Arc<Slot>)>>,
}

impl ThreadRecord {
    /// A copy of the list.
    pub(crate) fn slots(&self) -> Vec<(usize, Arc<Slot>)> {
        self.slots.lock().clone()
    }
}

/// The identity of one safepoint's owner: created by `begin`, held by the
/// one guard or ticket it returns and by the registry while the safepoint
/// is in progress. Ending compares the two with `Arc::ptr_eq`.
#[derive(Debug)]
pub(crate) struct OwnerToken;

/// The registered threads and the safepoint in progress, under one lock so
/// that a thread registering concurrently with `begin` is either in the
/// coordinator's count or armed and counted at birth.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) slots: Vec<Arc<Slot>>,
    pub(crate) in_progress: Option<SafepointId>,
    /// The owner of the safepoint in progress.
    pub(crate) owner: Option<Arc<OwnerToken>>,
    /// The safepoint counter: odd while a safepoint is in progress.
    pub(crate) counter: u64,
    next_mutator: u64,
}

impl Registry {
    /// The slot owned by thread `who`, if it is registered.
    pub(crate) fn owned_by(&self, who: ThreadId) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|s| s.owner == who)
    }

    /// The slot of mutator `id`, if it is registered.
    pub(crate) fn find(&self, id: MutatorId) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|s| s.id == id)
    }

    /// Add a slot for thread `owner`, whose record is `thread`.
    pub(crate) fn insert(&mut self, owner: ThreadId, thread: Arc<ThreadRecord>) -> Arc<Slot> {
        self.next_mutator += 1;
        let slot = Arc::new(Slot::new(
            MutatorId(self.next_mutator),
            owner,
            thread,
            self.in_progress,
        ));
        self.slots.push(Arc::clone(&slot));
        slot
    }

    /// Remove `slot` (no-op if it is not registered).
    pub(crate) fn remove(&mut self, slot: &Arc<Slot>) {
        if let Some(i) = self.slots.iter().position(|s| Arc::ptr_eq(s, slot)) {
            self.slots.swap_remove(i);
        }
    }
}
