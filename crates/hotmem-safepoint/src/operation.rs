//! One operation at a time: a safepoint excludes handshakes and other
//! safepoints; handshakes run concurrently with each other.
//!
//! A safepoint that is waiting to start keeps new handshakes out, so a
//! stream of handshakes cannot starve it. A thread that owns the safepoint in
//! progress, or runs a handshake operation, and asks for another safepoint,
//! a handshake or a registration gets an error instead of waiting for
//! itself.

use crate::ids::SafepointId;
use crate::sync::thread::ThreadId;
use crate::sync::{Condvar, Mutex, MutexGuard, thread_local};
use std::cell::RefCell;

#[derive(Debug, Default)]
struct Operations {
    /// The thread that began the safepoint in progress, and its id once
    /// known.
    safepoint: Option<(ThreadId, Option<SafepointId>)>,
    safepoints_waiting: usize,
    handshakes: usize,
}

#[cfg(not(hotmem_loom))]
thread_local! {
    /// The gates (by address) whose handshake operations run on this
    /// thread right now, as the requester of a safe target or as the target
    /// at its poll: such a thread holds a handshake ticket or a processing
    /// lock that whatever it would wait for needs. Thread-local, so that
    /// running an operation takes no shared lock; an entry lives only while
    /// its operation runs, when the gate is alive.
    static RUNNING_OPS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

// loom's macro takes no `const` block.
#[cfg(hotmem_loom)]
thread_local! {
    static RUNNING_OPS: RefCell<Vec<usize>> = RefCell::new(Vec::new());
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

    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn busy(&self, ops: &MutexGuard<'_, Operations>, caller: ThreadId) -> Result<(), Busy> {
        if let Some((owner, id)) = ops.safepoint {
            if owner == caller {
                return Err(Busy::OwnsSafepoint(id));
            }
        }
        // Unreadable only while the thread is being torn down.
        let key = self.key();
        let running = RUNNING_OPS
            .try_with(|r| r.borrow().contains(&key))
            .unwrap_or(false);
        if running {
            return Err(Busy::RunsHandshakeOp);
        }
        Ok(())
    }

    /// May `caller` wait for other operations to finish?
    pub(crate) fn check(&self, caller: ThreadId) -> Result<(), Busy> {
        let ops = self.state.lock();
        self.busy(&ops, caller)
    }

    /// Wait until no safepoint and no handshake runs, then own the gate.
    pub(crate) fn start_safepoint(&self, caller: ThreadId) -> Result<(), Busy> {
        let mut ops = self.state.lock();
        self.busy(&ops, caller)?;
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
    pub(crate) fn start_handshake(&self, caller: ThreadId) -> Result<HandshakeTicket<'_>, Busy> {
        let mut ops = self.state.lock();
        self.busy(&ops, caller)?;
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

    /// The calling thread runs a handshake operation until the result is
    /// dropped (also by unwinding).
    pub(crate) fn running_op(&self) -> RunningOp<'_> {
        let key = self.key();
        let _ = RUNNING_OPS.try_with(|r| r.borrow_mut().push(key));
        RunningOp { gate: self }
    }
}

/// A handshake operation running on the calling thread.
#[derive(Debug)]
pub(crate) struct RunningOp<'a> {
    gate: &'a OperationGate,
}

impl Drop for RunningOp<'_> {
    fn drop(&mut self) {
        let key = self.gate.key();
        let _ = RUNNING_OPS.try_with(|r| {
            let mut running = r.borrow_mut();
            if let Some(i) = running.iter().rposition(|k| *k == key) {
                running.swap_remove(i);
            }
        });
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
