//! One operation at a time: a safepoint excludes handshakes and other
//! safepoints; handshakes run concurrently with each other.
//!
//! A safepoint that is waiting to start keeps new handshakes out, so a
//! stream of handshakes cannot starve it. A thread that owns the safepoint in
//! progress, or runs a handshake operation, and asks for another safepoint,
//! a handshake or a registration gets an error instead of waiting for
//! itself.

use crate::ids::SafepointId;
use crate::sync::{Condvar, Mutex, ThreadKey};

#[derive(Debug, Default)]
struct Operations {
    /// The thread that began the safepoint in progress, and its id once
    /// known.
    safepoint: Option<(ThreadKey, Option<SafepointId>)>,
    safepoints_waiting: usize,
    handshakes: usize,
    /// Threads running a handshake operation right now (the requester of
    /// a safe target, or a target at its poll): they hold a handshake
    /// ticket or a processing lock that the thing they would wait for needs.
    running_ops: Vec<ThreadKey>,
}

impl Operations {
    fn busy(&self, caller: ThreadKey) -> Result<(), Busy> {
        if let Some((owner, id)) = self.safepoint {
            if owner == caller {
                return Err(Busy::OwnsSafepoint(id));
            }
        }
        if self.running_ops.contains(&caller) {
            return Err(Busy::RunsHandshakeOp);
        }
        Ok(())
    }
}

/// Why the caller may not wait for the operation gate (or for anything
/// that waits for it): it holds what the wait needs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Busy {
    /// The caller owns the safepoint in progress (or is beginning it).
    OwnsSafepoint(Option<SafepointId>),
    /// The caller is running a handshake operation.
    RunsHandshakeOp,
}

/// Serializes safepoints against each other and against handshakes.
#[derive(Debug)]
pub(crate) struct OperationGate {
    state: Mutex<Operations>,
    changed: Condvar,
}

impl OperationGate {
    pub(crate) fn new() -> Self {
        OperationGate {
            state: Mutex::new(Operations::default()),
            changed: Condvar::new(),
        }
    }

    /// May `caller` wait for other operations to finish?
    pub(crate) fn check(&self, caller: ThreadKey) -> Result<(), Busy> {
        self.state.lock().busy(caller)
    }

    /// Wait until no safepoint and no handshake runs, then own the gate.
    pub(crate) fn start_safepoint(&self, caller: ThreadKey) -> Result<(), Busy> {
        let mut ops = self.state.lock();
        ops.busy(caller)?;
        ops.safepoints_waiting += 1;
        while ops.safepoint.is_some() || ops.handshakes > 0 {
            self.changed.wait(&mut ops);
        }
        ops.safepoints_waiting -= 1;
        ops.safepoint = Some((caller, None));
        Ok(())
    }

    /// Record the id of the safepoint the gate's owner began.
    pub(crate) fn publish_id(&self, id: SafepointId) {
        if let Some((_, slot)) = self.state.lock().safepoint.as_mut() {
            *slot = Some(id);
        }
    }

    /// The safepoint is over (or failed to start).
    pub(crate) fn finish_safepoint(&self) {
        let mut ops = self.state.lock();
        ops.safepoint = None;
        self.changed.notify_all();
    }

    /// Wait until no safepoint runs or waits, then count one handshake in.
    pub(crate) fn start_handshake(&self, caller: ThreadKey) -> Result<HandshakeTicket<'_>, Busy> {
        let mut ops = self.state.lock();
        ops.busy(caller)?;
        loop {
            match ops.safepoint {
                Some(_) => {}
                None if ops.safepoints_waiting == 0 => break,
                None => {}
            }
            self.changed.wait(&mut ops);
        }
        ops.handshakes += 1;
        Ok(HandshakeTicket { gate: self })
    }

    /// `caller` runs a handshake operation until the result is dropped
    /// (also by unwinding).
    pub(crate) fn running_op(&self, caller: ThreadKey) -> RunningOp<'_> {
        self.state.lock().running_ops.push(caller);
        RunningOp { gate: self, caller }
    }
}

/// A handshake operation running on thread `caller`.
#[derive(Debug)]
pub(crate) struct RunningOp<'a> {
    gate: &'a OperationGate,
    caller: ThreadKey,
}

impl Drop for RunningOp<'_> {
    fn drop(&mut self) {
        let mut ops = self.gate.state.lock();
        if let Some(i) = ops.running_ops.iter().position(|t| *t == self.caller) {
            ops.running_ops.swap_remove(i);
        }
    }
}

/// One handshake in flight; dropping it (also by unwinding) counts it out.
#[derive(Debug)]
pub(crate) struct HandshakeTicket<'a> {
    gate: &'a OperationGate,
}

impl Drop for HandshakeTicket<'_> {
    fn drop(&mut self) {
        let mut ops = self.gate.state.lock();
        ops.handshakes -= 1;
        if ops.handshakes == 0 {
            self.gate.changed.notify_all();
        }
    }
}
