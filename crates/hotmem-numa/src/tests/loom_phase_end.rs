//! The phase-end handshake: once the coordinator's `run_on_workers` returns,
//! every worker has restored its binding and its report is in its slot.
//!
//! Two workers and the coordinator, as in `WorkerPool::run_phase`: each
//! worker's run binds (its binding state becomes `Bound`), restores
//! (`Restored`) and writes its report slot, as `Phase::run` does; the real
//! [`run_on_workers`] and [`PhaseTicket`] count the phase down when the run
//! returns. The coordinator then checks both. The second model restores
//! after the ticket is gone (the order the design forbids: the worker is
//! still bound when the coordinator goes on) and must be caught.

use crate::pool::handoff::{PhaseTask, PhaseTicket, run_on_workers};
use crate::sync::{Arc, Mutex};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ThreadBinding {
    Original,
    Bound,
    Restored,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Order {
    /// Restore and write the report inside the run: the pool's order.
    RestoreInRun,
    /// Restore after the run, once the ticket is gone: forbidden.
    RestoreAfterTicket,
}

/// What the model's threads share beyond the phase: their bindings.
struct Bindings([Mutex<ThreadBinding>; 2]);

struct ModelPhase {
    order: Order,
    bindings: Arc<Bindings>,
    slots: [Mutex<Option<usize>>; 2],
}

impl PhaseTask<usize> for ModelPhase {
    fn run(&self, &mut i: &mut usize) {
        *self.bindings.0[i].lock() = ThreadBinding::Bound;
        if self.order == Order::RestoreInRun {
            *self.bindings.0[i].lock() = ThreadBinding::Restored;
        }
        *self.slots[i].lock() = Some(i + 10);
    }
}

fn model(order: Order) {
    loom::model(move || {
        let bindings = Arc::new(Bindings([
            Mutex::new(ThreadBinding::Original),
            Mutex::new(ThreadBinding::Original),
        ]));
        let phase = ModelPhase {
            order,
            bindings: bindings.clone(),
            slots: [Mutex::new(None), Mutex::new(None)],
        };
        let mut workers = Vec::new();
        run_on_workers(&phase, 2, |i, ticket: PhaseTicket<usize>| {
            let b = bindings.clone();
            workers.push(loom::thread::spawn(move || {
                let mut index = i;
                ticket.run(&mut index);
                if order == Order::RestoreAfterTicket {
                    *b.0[i].lock() = ThreadBinding::Restored;
                }
            }));
        });
        for i in 0..2 {
            assert_eq!(*bindings.0[i].lock(), ThreadBinding::Restored);
            assert_eq!(*phase.slots[i].lock(), Some(i + 10));
        }
        for w in workers {
            w.join().unwrap();
        }
    });
}

#[test]
fn loom_phase_end_sees_restored_bindings_and_reports() {
    model(Order::RestoreInRun);
}

#[test]
#[should_panic(expected = "left == right")]
fn loom_phase_end_restoring_after_the_ticket_is_caught() {
    model(Order::RestoreAfterTicket);
}
