//! Handshakes: run an operation for one thread, or each thread, without
//! stopping the others. This file has the types and the queue; who runs
//! an operation, and the fences that decide it, are in `protocol.rs`.
//!
//! The requester queues the operation on the target's slot and arms the
//! target's poll word. Then exactly one of two things happens:
//!
//! * the target runs it itself, at its next poll or when it next enters a
//!   safe state ([`Executor::Target`]); or
//! * the target is safe (native, blocked, exiting), and the requester runs it
//!   on the target's behalf ([`Executor::Requester`]) while holding the
//!   target's processing lock, which the target must take before it can
//!   leave the safe state with the operation still queued.
//!
//! An operation is popped from the queue under the queue lock before it runs,
//! so it runs exactly once whoever gets to it.

use crate::ids::MutatorId;
use crate::poll::PollWord;
use crate::sync::{Arc, FutexWord, Mutex, Ordering};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Who ran a handshake operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Executor {
    /// The target thread, at a poll or while entering a safe state.
    Target,
    /// The requesting thread, on behalf of a target that was safe.
    Requester,
}

/// What a handshake operation is told when it runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HandshakeContext {
    target: MutatorId,
    executor: Executor,
}

impl HandshakeContext {
    /// The thread the operation is for.
    pub fn target(&self) -> MutatorId {
        self.target
    }

    /// Who is running it.
    pub fn executor(&self) -> Executor {
        self.executor
    }
}

/// The outcome of a handshake with one thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandshakeReport {
    /// The thread the operation was for.
    pub target: MutatorId,
    /// Who ran it.
    pub executed_by: Executor,
}

type Operation = Box<dyn FnOnce(HandshakeContext) + Send>;

const PENDING: u32 = 0;
const BY_TARGET: u32 = 1;
const BY_REQUESTER: u32 = 2;
const PANICKED: u32 = 4;

/// One queued operation for one target.
pub(crate) struct HandshakeOp {
    target: MutatorId,
    operation: Mutex<Option<Operation>>,
    outcome: FutexWord,
}

impl std::fmt::Debug for HandshakeOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeOp")
            .field("target", &self.target)
            .field("outcome", &self.outcome)
            .finish()
    }
}

/// Publishes the outcome even when the operation unwinds.
struct Finish<'a> {
    op: &'a HandshakeOp,
    code: u32,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let code = if std::thread::panicking() {
            self.code | PANICKED
        } else {
            self.code
        };
        self.op.outcome.word().store(code, Ordering::Release);
        self.op.outcome.wake_all();
    }
}

impl HandshakeOp {
    pub(crate) fn new(target: MutatorId, operation: Operation) -> Self {
        HandshakeOp {
            target,
            operation: Mutex::new(Some(operation)),
            outcome: FutexWord::new(PENDING),
        }
    }

    /// Run the operation (it has been popped from the queue: only one
    /// caller gets here; the `Option` makes a second run impossible anyway).
    pub(crate) fn run(&self, executor: Executor) {
        let Some(operation) = self.operation.lock().take() else {
            return;
        };
        let code = match executor {
            Executor::Target => BY_TARGET,
            Executor::Requester => BY_REQUESTER,
        };
        let finish = Finish { op: self, code };
        operation(HandshakeContext {
            target: self.target,
            executor,
        });
        drop(finish);
    }

    pub(crate) fn is_done(&self) -> bool {
        self.outcome.word().load(Ordering::Acquire) != PENDING
    }

    /// Sleep until the operation has run (may return early; re-check).
    pub(crate) fn wait_a_while(&self) {
        self.outcome.wait(PENDING);
    }

    /// Sleep until the operation has run or `timeout` passed (may return
    /// early; re-check).
    pub(crate) fn wait_at_most(&self, timeout: std::time::Duration) {
        self.outcome.wait_for(PENDING, timeout);
    }

    /// Who ran it, or `Err(target)` if it panicked. `None` while pending.
    pub(crate) fn outcome(&self) -> Option<Result<HandshakeReport, MutatorId>> {
        let code = self.outcome.word().load(Ordering::Acquire);
        if code == PENDING {
            return None;
        }
        if code & PANICKED != 0 {
            return Some(Err(self.target));
        }
        let executed_by = if code == BY_TARGET {
            Executor::Target
        } else {
            Executor::Requester
        };
        Some(Ok(HandshakeReport {
            target: self.target,
            executed_by,
        }))
    }
}

/// A thread's queue of pending operations and its processing lock.
#[derive(Debug)]
pub(crate) struct HandshakeQueue {
    queue: Mutex<VecDeque<Arc<HandshakeOp>>>,
    /// Held by whoever drains the queue (the target, or a requester for a
    /// safe target).
    pub(crate) processing: Mutex<()>,
}

impl HandshakeQueue {
    pub(crate) fn new() -> Self {
        HandshakeQueue {
            queue: Mutex::new(VecDeque::new()),
            processing: Mutex::new(()),
        }
    }

    /// Queue `op` and arm the owner's poll word.
    pub(crate) fn push(&self, poll: &PollWord, op: Arc<HandshakeOp>) {
        let mut queue = self.queue.lock();
        queue.push_back(op);
        poll.arm_handshake();
    }

    /// Pop the next operation; when the queue is empty, disarm the poll
    /// bit (under the queue lock, so a concurrent push re-arms after us)
    /// and return `None`. The caller holds `processing`.
    pub(crate) fn pop_or_disarm(&self, poll: &PollWord) -> Option<Arc<HandshakeOp>> {
        let mut queue = self.queue.lock();
        let next = queue.pop_front();
        if next.is_none() {
            poll.disarm_handshake();
        }
        next
    }
}
