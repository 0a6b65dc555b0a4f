//! The worker threads: each waits for jobs on its own channel and runs them.

use super::phase::PhaseTask;
use crate::binder::ThreadBinder;
use crate::error::BindError;
use crate::latch::Latch;
use crate::sync::{Arc, Receiver, Sender};
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

/// A borrowed phase with its lifetime erased.
///
/// The coordinator ([`super::WorkerPool::run_phase`]) creates it from a phase
/// on its stack and does not return (nor unwind) before every worker it was
/// sent to has counted the phase's latch down, after its last use of it.
pub(crate) struct TaskRef(*const (dyn PhaseTask + 'static));

// SAFETY: the pointee is `Sync` (`PhaseTask: Sync`) and stays alive while any
// worker holds the pointer (the coordinator's wait, see `TaskRef`), so sending
// the pointer to a worker thread is sending a shared reference to it.
unsafe impl Send for TaskRef {}

impl TaskRef {
    /// Erases the lifetime of `task`.
    ///
    /// # Safety
    /// `task` must stay alive until every worker this `TaskRef` is sent to
    /// has finished [`PhaseTask::run`] (counted the latch down).
    pub(crate) unsafe fn new<'a>(task: &'a (dyn PhaseTask + 'a)) -> TaskRef {
        let ptr: *const (dyn PhaseTask + 'a) = task;
        // SAFETY: only the trait object's lifetime bound changes (same
        // layout); the caller keeps the pointee alive for every use.
        TaskRef(unsafe {
            std::mem::transmute::<*const (dyn PhaseTask + 'a), *const (dyn PhaseTask + 'static)>(
                ptr,
            )
        })
    }
}

/// A message to a worker.
pub(crate) enum Job {
    /// Run your part of a phase, then count `done` down.
    Phase { task: TaskRef, done: Arc<Latch> },
    /// Report your thread's current binding.
    ReadBinding(Sender<Result<CpuSet, BindError>>),
    /// Run a closure of the pool's user on this thread.
    Call(Box<dyn FnOnce() + Send>),
}

/// The body of a worker thread: runs jobs until the pool drops its sender.
pub(crate) fn worker_main(mut state: WorkerState, jobs: Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Phase { task, done } => {
                // SAFETY: `TaskRef`'s contract: the coordinator keeps the
                // phase alive until `done` reaches zero, and `run` counts it
                // down as its very last use of the phase.
                let task = unsafe { &*task.0 };
                let ran = catch_unwind(AssertUnwindSafe(|| task.run(&mut state, &done)));
                if ran.is_err() {
                    // A bug of ours, not an item's panic (those are caught
                    // per item): `run` unwound before handing in its report.
                    // Count down for it so the coordinator is not left
                    // waiting; it reports the missing worker.
                    done.count_down();
                }
            }
            Job::ReadBinding(reply) => {
                // The pool may have stopped listening; nothing to do then.
                let _ = reply.send(state.binder.read());
            }
            Job::Call(f) => {
                // A panic drops the closure's reply sender, which tells the
                // caller; the worker itself lives on.
                let _ = catch_unwind(AssertUnwindSafe(f));
            }
        }
    }
}
