//! One operation at a time: a safepoint excludes handshakes and other
//! safepoints; handshakes run concurrently with each other.
//!
//! A safepoint that is waiting to start keeps new handshakes out, so a
//! stream of handshakes cannot starve it. A thread that owns the safepoint in
//! progress and asks for another safepoint or a handshake gets an error
//! instead of waiting for itself.

use crate::ids::SafepointId;
use crate::sync::{Condvar, Mutex, ThreadKey};

#[derive(Debug, Default)]
struct Operations {
    /// The thread that began the safepoint in progress, and its id once
    /// known.
    safepoint: Option<(ThreadKey, Option<SafepointId>)>,
    safepoints_waiting: usize,
    handshakes: usize,
}

/// Why the caller may not wait for the operation gate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct OwnsSafepoint(pub(crate) Option<SafepointId>);

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

    /// Wait until no safepoint and no handshake runs, then own the gate.
    pub(crate) fn start_safepoint(&self, caller: ThreadKey) -> Result<(), OwnsSafepoint> {
        let mut ops = self.state.lock();
        if let Some((owner, id)) = ops.safepoint {
            if owner == caller {
                return Err(OwnsSafepoint(id));
            }
        }
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
    pub(crate) fn start_handshake(
        &self,
        caller: ThreadKey,
    ) -> Result<HandshakeTicket<'_>, OwnsSafepoint> {
        let mut ops = self.state.lock();
        loop {
            match ops.safepoint {
                Some((owner, id)) if owner == caller => return Err(OwnsSafepoint(id)),
                Some(_) => {}
                None if ops.safepoints_waiting == 0 => break,
                None => {}
            }
            self.changed.wait(&mut ops);
        }
        ops.handshakes += 1;
        Ok(HandshakeTicket { gate: self })
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
