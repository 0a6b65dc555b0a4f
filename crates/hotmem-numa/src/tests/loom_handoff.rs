//! The lifetime erasure of `pool::handoff`: once `run_on_workers` returns,
//! no worker touches the borrowed phase again.
//!
//! The coordinator keeps a phase on its stack whose one field is a loom
//! `UnsafeCell`, hands it to two loom threads with the real
//! [`run_on_workers_with`] and [`PhaseTicket`], and as soon as that returns
//! writes the cell (the borrow has ended: this write stands for freeing the
//! phase). Each worker reads the cell inside its run. Loom fails the model
//! if a read is not ordered before the write (a causality violation), and
//! the worker also checks that the cell still says `ALIVE`. Only then are
//! the workers joined ("the pool is dropped"), so the frame really is still
//! there in every interleaving, even in the must-fail model.
//!
//! Scenarios: both workers run; worker 0's run panics halfway (unwinding
//! drops its ticket); worker 1's ticket is dropped unrun, on its thread (a
//! channel discarding the messages of a gone receiver) or on the
//! coordinator's (a failed send). The last model skips the wait and must be
//! caught.

use crate::pool::handoff::{Handoff, PhaseTask, PhaseTicket, run_on_workers_with};
use loom::cell::UnsafeCell;
use loom::thread::JoinHandle;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

const ALIVE: u32 = 1;
const FREED: u32 = 0;
/// The payload of the modelled item panic (the only panic a worker absorbs).
const ITEM_PANIC: &str = "loom model: item panicked";

/// What a worker thread owns.
struct ModelWorker {
    index: usize,
    /// Its run panics between its two touches of the phase.
    panics: bool,
}

/// The borrowed phase.
struct ModelPhase {
    data: UnsafeCell<u32>,
}

// SAFETY: every access to `data` goes through loom's `UnsafeCell`, which
// checks at run time that no read and write are unordered: the models fail
// instead of racing.
unsafe impl Sync for ModelPhase {}

impl ModelPhase {
    fn touch(&self) {
        // SAFETY: loom checks that this read is ordered against the
        // coordinator's write; the value is a plain `u32`.
        let v = self.data.with(|p| unsafe { *p });
        assert_eq!(v, ALIVE, "a worker touched the phase after it was freed");
    }
}

impl PhaseTask<ModelWorker> for ModelPhase {
    fn run(&self, w: &mut ModelWorker) {
        self.touch();
        if w.panics {
            // std::panic::panic_any so the hook filter below recognizes it.
            std::panic::panic_any(ITEM_PANIC);
        }
        self.touch();
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Worker {
    /// Receives its ticket and runs it.
    Runs,
    /// Receives its ticket; its run panics.
    Panics,
    /// Its thread drops the ticket without running it.
    DropsUnrun,
    /// Gone: the send fails and the coordinator drops the ticket.
    Gone,
}

fn worker_thread(ticket: PhaseTicket<ModelWorker>, index: usize, panics: bool) {
    let mut w = ModelWorker { index, panics };
    // As `worker_main`: catch a panic out of the run; only the modelled
    // item panic is absorbed, loom's own failures go on.
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| ticket.run(&mut w))) {
        if p.downcast_ref::<&str>() != Some(&ITEM_PANIC) {
            resume_unwind(p);
        }
    }
    // The worker lives on after its ticket is gone, touching only its own.
    assert_eq!(w.index, index);
}

fn model(workers: [Worker; 2], handoff: Handoff) {
    quiet_item_panics();
    loom::model(move || {
        let phase = ModelPhase {
            data: UnsafeCell::new(ALIVE),
        };
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        run_on_workers_with(
            &phase,
            2,
            |i, ticket| match workers[i] {
                Worker::Runs => threads.push(loom::thread::spawn(move || {
                    worker_thread(ticket, i, false);
                })),
                Worker::Panics => threads.push(loom::thread::spawn(move || {
                    worker_thread(ticket, i, true);
                })),
                Worker::DropsUnrun => threads.push(loom::thread::spawn(move || drop(ticket))),
                Worker::Gone => drop(ticket),
            },
            handoff,
        );
        // The phase has returned: the borrow is over. "Free" the phase.
        // SAFETY: loom checks that no worker's read is unordered with this.
        phase.data.with_mut(|p| unsafe { *p = FREED });
        // Drop the pool: join its threads.
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// The item panics of the models are expected: keep them out of the
/// output, pass every other panic to the hook that was there.
fn quiet_item_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&ITEM_PANIC) {
                previous(info);
            }
        }));
    });
}

#[test]
fn loom_handoff_no_worker_touches_the_phase_after_it_returns() {
    model([Worker::Runs, Worker::Runs], Handoff::Wait);
}

#[test]
fn loom_handoff_a_panicking_run_counts_down_after_its_last_touch() {
    model([Worker::Panics, Worker::Runs], Handoff::Wait);
}

#[test]
fn loom_handoff_tickets_dropped_unrun_count_down() {
    model([Worker::Runs, Worker::DropsUnrun], Handoff::Wait);
    model([Worker::Panics, Worker::Gone], Handoff::Wait);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn loom_handoff_skipping_the_wait_is_caught() {
    model([Worker::Runs, Worker::Gone], Handoff::SkipWaitForTest);
}
