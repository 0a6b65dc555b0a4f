//! Threads registered with several coordinators (two runtimes in one
//! process). A thread that waits inside one coordinator cannot poll the
//! others: the waits that would close a cycle through another coordinator
//! for certain are typed errors, returned before anything changes. Each
//! scenario runs under a deadline: before, each of them hung.

mod common;

use common::within_deadline;
use hotmem_safepoint::{BeginError, Coordinator, HandshakeError, Strategy, ThreadState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};

const STRATEGIES: [Strategy; 2] = [Strategy::WaitBarrier, Strategy::Legacy];

/// The cycle of issue 29: T1 and T2, each registered with A and B, begin a
/// safepoint at once, T1 on A and T2 on B. Each would wait for the other
/// to poll the coordinator it runs managed code on, forever. Both calls
/// are errors now, and the same begins from a safe region on the other
/// coordinator succeed, both safepoints at once.
#[test]
fn two_mutators_beginning_on_two_coordinators_get_errors_not_a_deadlock() {
    for strategy in STRATEGIES {
        within_deadline(move || {
            let (a, b) = (Coordinator::new(strategy), Coordinator::new(strategy));
            let start = Arc::new(Barrier::new(2));
            let both_own = Arc::new(Barrier::new(2));
            // `first` is where the thread begins, `second` where it also runs.
            let spawn = |first: &Coordinator, second: &Coordinator| {
                let (first, second) = (first.clone(), second.clone());
                let (start, both_own) = (start.clone(), both_own.clone());
                std::thread::spawn(move || {
                    let mut here = first.register().unwrap();
                    let mut there = second.register().unwrap();
                    start.wait();
                    let refused = here.safepoint("cycle").map(drop).unwrap_err();
                    assert_eq!(refused, BeginError::ManagedElsewhere(there.id()));
                    assert_eq!(here.state(), ThreadState::Managed, "nothing changed");
                    assert_eq!(first.in_progress(), None);
                    start.wait();
                    // Safe on the other coordinator: its safepoint does not
                    // wait for this thread, and this one's counts the other
                    // thread as safe for the same reason.
                    let safe_there = there.enter_native();
                    let owned = here.safepoint("from a safe region elsewhere").unwrap();
                    both_own.wait();
                    owned.end();
                    drop(safe_there);
                    here.poll();
                    there.poll();
                })
            };
            let t1 = spawn(&a, &b);
            let t2 = spawn(&b, &a);
            t1.join().unwrap();
            t2.join().unwrap();
            assert_eq!(a.stats().count, 1);
            assert_eq!(b.stats().count, 1);
        });
    }
}

/// The same rule for an outsider of A (`Coordinator::begin`) and for
/// handshakes: a thread that runs managed code on B waits for neither A's
/// safepoints nor its handshakes.
#[test]
fn a_thread_in_managed_code_elsewhere_neither_begins_nor_requests_handshakes() {
    within_deadline(|| {
        let (a, b) = (Coordinator::default(), Coordinator::default());
        let mut on_b = b.register().unwrap();
        let id_b = on_b.id();
        assert_eq!(
            a.begin("x").unwrap_err(),
            BeginError::ManagedElsewhere(id_b)
        );
        assert_eq!(
            a.begin_unscoped("x").unwrap_err(),
            BeginError::ManagedElsewhere(id_b)
        );
        let mut on_a = a.register().unwrap();
        let id_a = on_a.id();
        assert_eq!(
            on_a.handshake(id_a, |_| {}).unwrap_err(),
            HandshakeError::ManagedElsewhere(id_b)
        );
        assert_eq!(
            on_a.handshake_all(|_| {}).unwrap_err(),
            HandshakeError::ManagedElsewhere(id_b)
        );
        assert_eq!(a.in_progress(), None);
        // Safe on B, all of it works.
        let native = on_b.enter_native();
        on_a.safepoint("x").unwrap().end();
        on_a.handshake(id_a, |_| {}).unwrap();
        drop(native);
        drop(on_a);
        // Unregistered from B: nothing elsewhere any more.
        drop(on_b);
        a.begin("x").unwrap().end();
    });
}

/// Stopping two worlds in turn: a thread registered with X and Y, in
/// managed code on both, stops in the caller's safepoint on X; a safepoint
/// on Y would then wait for it forever (it reaches Y's poll only after X's
/// safepoint ends, which its owner, waiting, never does). The begin on Y
/// is an error; after X's safepoint ends, it succeeds.
#[test]
fn a_safepoint_does_not_wait_for_a_thread_stopped_in_the_callers_other_safepoint() {
    for strategy in STRATEGIES {
        within_deadline(move || {
            let (x, y) = (Coordinator::new(strategy), Coordinator::new(strategy));
            let stop = Arc::new(AtomicBool::new(false));
            let (ids_tx, ids) = mpsc::channel();
            let both = {
                let (x, y, stop) = (x.clone(), y.clone(), stop.clone());
                std::thread::spawn(move || {
                    let on_x = x.register().unwrap();
                    let on_y = y.register().unwrap();
                    ids_tx.send((on_x.id(), on_y.id())).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        on_x.poll();
                        on_y.poll();
                    }
                })
            };
            let (on_x, on_y) = ids.recv().unwrap();
            let guard = x.begin("world x").unwrap();
            // The thread did not enter a safe state on X: it is stopped.
            assert_eq!(x.mutators(), [(on_x, ThreadState::AtSafepoint)]);
            assert_eq!(
                y.begin("world y").unwrap_err(),
                BeginError::StoppedInCallersSafepoint {
                    mutator: on_y,
                    owned: guard.id()
                }
            );
            assert_eq!(y.in_progress(), None, "nothing changed");
            assert_eq!(y.mutators(), [(on_y, ThreadState::Managed)]);
            guard.end();
            y.begin("world y").unwrap().end();
            stop.store(true, Ordering::Relaxed);
            both.join().unwrap();
        });
    }
}
