//! The phase-end handshake: once the coordinator's wait returns, every
//! worker has restored its binding and its report is in its slot.
//!
//! Two workers and the coordinator, as in `WorkerPool::run_phase`: each
//! worker binds (its binding state becomes `Bound`), restores (`Restored`),
//! then calls the real [`hand_in`]. The coordinator waits on the real
//! [`Latch`] and then checks both. The second model counts down before
//! restoring (the order the design forbids) and must be caught.

use crate::latch::{Latch, hand_in};
use crate::sync::{Arc, Mutex, lock};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ThreadBinding {
    Original,
    Bound,
    Restored,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Order {
    /// Restore, hand in, count down: the pool's order.
    RestoreThenHandIn,
    /// Count down, then restore: forbidden.
    CountDownThenRestore,
}

struct Shared {
    latch: Latch,
    bindings: [Mutex<ThreadBinding>; 2],
    slots: [Mutex<Option<usize>>; 2],
}

fn model(order: Order) {
    loom::model(move || {
        let shared = Arc::new(Shared {
            latch: Latch::new(2),
            bindings: [
                Mutex::new(ThreadBinding::Original),
                Mutex::new(ThreadBinding::Original),
            ],
            slots: [Mutex::new(None), Mutex::new(None)],
        });
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let s = shared.clone();
                loom::thread::spawn(move || {
                    *lock(&s.bindings[i]) = ThreadBinding::Bound;
                    match order {
                        Order::RestoreThenHandIn => {
                            *lock(&s.bindings[i]) = ThreadBinding::Restored;
                            hand_in(&s.slots[i], i + 10, &s.latch);
                        }
                        Order::CountDownThenRestore => {
                            s.latch.count_down();
                            *lock(&s.bindings[i]) = ThreadBinding::Restored;
                            *lock(&s.slots[i]) = Some(i + 10);
                        }
                    }
                })
            })
            .collect();
        shared.latch.wait();
        for i in 0..2 {
            assert_eq!(*lock(&shared.bindings[i]), ThreadBinding::Restored);
            assert_eq!(*lock(&shared.slots[i]), Some(i + 10));
        }
        for w in workers {
            w.join().unwrap();
        }
    });
}

#[test]
fn loom_phase_end_sees_restored_bindings_and_reports() {
    model(Order::RestoreThenHandIn);
}

#[test]
#[should_panic(expected = "left == right")]
fn loom_phase_end_counting_down_first_is_caught() {
    model(Order::CountDownThenRestore);
}
