//! The worker threads: each waits for jobs on its own channel and runs them.

use super::handoff::PhaseTicket;
use super::payload::drop_payload;
use crate::binder::ThreadBinder;
use crate::error::BindError;
use crate::sync::channel::{Receiver, Sender};
use crate::{CpuSet, NodeId};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a worker thread owns.
pub(crate) struct WorkerState {
    pub(crate) index: usize,
    pub(crate) name: String,
    /// The node it starts each phase on.
    pub(crate) home: NodeId,
    pub(crate) binder: ThreadBinder,
    /// The mask the thread runs under when it is not bound for a phase,
    /// read when the thread starts (what "unbound" means for locality).
    pub(crate) unbound_mask: CpuSet,
}

/// A message to a worker.
pub(crate) enum Job {
    /// Run your part of a phase (dropping the ticket, run or not, tells
    /// the coordinator this worker is done with the phase).
    Phase(PhaseTicket<WorkerState>),
    /// Report your thread's current binding.
    ReadBinding(Sender<Result<CpuSet, BindError>>),
    /// Run a closure of the pool's user on this thread.
    Call(Box<dyn FnOnce() + Send>),
}

/// The body of a worker thread: runs jobs until the pool drops its sender.
pub(crate) fn worker_main(mut state: WorkerState, jobs: Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Phase(ticket) => {
                // `run` catches item panics itself; a panic out of it is a
                // bug of ours, and unwinding drops the ticket, which counts
                // the phase down all the same (the coordinator reports the
                // missing report). The worker lives on.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| ticket.run(&mut state))) {
                    drop_payload(payload);
                }
            }
            Job::ReadBinding(reply) => {
                // The pool may have stopped listening; nothing to do then.
                let _ = reply.send(state.binder.read());
            }
            Job::Call(f) => {
                // A panic drops the closure's reply sender, which tells the
                // caller; the worker itself lives on.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
                    drop_payload(payload);
                }
            }
        }
    }
}
