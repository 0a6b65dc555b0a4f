//! Handing a borrowed phase to the worker threads: the crate's one lifetime
//! erasure, and the wait that makes it sound.
//!
//! [`run_on_workers`] gives each worker a [`PhaseTicket`]: a pointer to the
//! caller's phase with its lifetime erased, plus the phase's [`Latch`].
//! Creating a ticket counts the latch up; dropping it counts it down, and
//! that is the only way the count goes down. A worker dereferences the
//! pointer only inside [`PhaseTicket::run`], which consumes the ticket, so
//! the count-down comes after the worker's last use of the phase - on
//! return, while unwinding from a panic, or when a ticket is dropped unrun
//! (a send to a gone worker fails, a channel discards its messages).
//! `run_on_workers` does not return, and does not unwind, before the count is
//! zero: the wait is a guard local to it that safe code cannot forget.
//!
//! The loom models in `src/tests/loom_handoff.rs` check that no worker can
//! touch the phase after `run_on_workers` returned, also when a worker's run
//! panics or a ticket is dropped unrun, and that skipping the wait is caught.

use crate::latch::Latch;
use crate::sync::Arc;

/// One worker's part of a phase, type-erased for the workers. `W` is what
/// the worker thread owns (its binder, its index).
pub(crate) trait PhaseTask<W>: Sync {
    /// Runs the worker's part of the phase. May unwind; the ticket it came
    /// with counts down either way.
    fn run(&self, worker: &mut W);
}

/// A worker's share of a phase: the phase, borrowed with its lifetime
/// erased, and the latch that counts the shares still alive.
///
/// Only [`run_on_workers`] creates one, and it outlives no call of it.
pub(crate) struct PhaseTicket<W: 'static> {
    task: *const (dyn PhaseTask<W> + 'static),
    done: Arc<Latch>,
}

// SAFETY: the ticket is a shared reference to a `PhaseTask<W>`, which is
// `Sync`, so using it from another thread is sound; the pointee stays alive
// while the ticket does (see `run_on_workers`). `W` is never sent: the
// receiving thread brings its own.
unsafe impl<W: 'static> Send for PhaseTicket<W> {}

impl<W: 'static> PhaseTicket<W> {
    /// Erases the lifetime of `task` and counts `done` up.
    ///
    /// # Safety
    /// `task` must stay alive until the ticket is dropped (or consumed by
    /// [`PhaseTicket::run`]), and the caller must not hand `done` to
    /// anything that counts it down other than tickets.
    unsafe fn new<'a>(task: &'a (dyn PhaseTask<W> + 'a), done: &Arc<Latch>) -> Self {
        let ptr: *const (dyn PhaseTask<W> + 'a) = task;
        // SAFETY: only the trait object's lifetime bound changes (same
        // layout and vtable); the caller keeps the pointee alive for as long
        // as the ticket exists, and the ticket dereferences it only then.
        let task = unsafe {
            std::mem::transmute::<*const (dyn PhaseTask<W> + 'a), *const (dyn PhaseTask<W> + 'static)>(
                ptr,
            )
        };
        done.count_up();
        PhaseTicket {
            task,
            done: done.clone(),
        }
    }

    /// Runs the worker's part of the phase on `worker`, then (or while
    /// unwinding, if the run panics) drops the ticket, which counts the
    /// latch down: after the last use of the phase.
    pub(crate) fn run(self, worker: &mut W) {
        {
            // SAFETY: the ticket is alive (it is `self`), so by the contract
            // of `PhaseTicket::new` the phase is; the reference ends with
            // this block, before `self` is dropped and counts down.
            let task = unsafe { &*self.task };
            task.run(worker);
        }
        drop(self);
    }
}

impl<W: 'static> Drop for PhaseTicket<W> {
    fn drop(&mut self) {
        // The latch is the ticket's own (an `Arc`), not the phase's: it
        // outlives the count-down, and nothing else of the phase is touched.
        self.done.count_down();
    }
}

/// Whether [`run_on_workers_with`] waits for the tickets: always, except
/// in the loom model that shows a missing wait is caught.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Handoff {
    /// Wait until every ticket is gone (the only mode outside tests).
    Wait,
    /// Return at once: unsound, for the must-fail model only.
    #[cfg(all(test, hotmem_loom))]
    SkipWaitForTest,
}

/// Hands `task` to `workers` workers: calls `send(i, ticket)` for each,
/// which delivers the ticket to worker `i` or drops it (worker gone), and
/// returns, or unwinds out of `send`, only once every ticket has been run
/// or dropped. `task` may therefore borrow from the caller's stack.
pub(crate) fn run_on_workers<'a, W: 'static>(
    task: &'a (dyn PhaseTask<W> + 'a),
    workers: usize,
    send: impl FnMut(usize, PhaseTicket<W>),
) {
    run_on_workers_with(task, workers, send, Handoff::Wait);
}

/// [`run_on_workers`] with the test-only switch.
pub(crate) fn run_on_workers_with<'a, W: 'static>(
    task: &'a (dyn PhaseTask<W> + 'a),
    workers: usize,
    mut send: impl FnMut(usize, PhaseTicket<W>),
    handoff: Handoff,
) {
    let latch = Arc::new(Latch::new(0));
    // Declared before the first ticket exists, so that it runs on every way
    // out of this function, unwinding from `send` included; it never leaves
    // this frame, so no caller can forget it.
    let wait = WaitOnDrop(&latch);
    for i in 0..workers {
        // SAFETY: `wait` keeps this call from returning or unwinding before
        // every ticket is gone, and `task` outlives this call; `latch` is
        // counted down by tickets only.
        let ticket = unsafe { PhaseTicket::new(task, &latch) };
        send(i, ticket);
    }
    match handoff {
        Handoff::Wait => drop(wait),
        #[cfg(all(test, hotmem_loom))]
        Handoff::SkipWaitForTest => std::mem::forget(wait),
    }
}

/// Waits for a latch to reach zero when dropped, also while unwinding.
struct WaitOnDrop<'a>(&'a Latch);

impl Drop for WaitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.wait();
    }
}
