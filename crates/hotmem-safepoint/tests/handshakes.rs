//! Handshakes against real threads.

mod common;

use common::{BusyThreads, wait_until};
use hotmem_safepoint::{Coordinator, Executor, HandshakeError, MutatorId, Strategy, ThreadState};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::ThreadId;

#[test]
fn handshake_to_a_thread_in_native_runs_on_the_requester() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let (ready_tx, ready) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let c2 = c.clone();
    let target = std::thread::spawn(move || {
        let mut me = c2.register().unwrap();
        let id = me.id();
        let native = me.enter_native();
        ready_tx.send(id).unwrap();
        released.recv().unwrap(); // stays in native, never polls
        drop(native);
        me.poll();
    });
    let id = ready.recv().unwrap();
    let ran_on = Arc::new(Mutex::new(None::<ThreadId>));
    let ran_on2 = ran_on.clone();
    let report = c
        .handshake(id, move |cx| {
            assert_eq!(cx.executor(), Executor::Requester);
            *ran_on2.lock().unwrap() = Some(std::thread::current().id());
        })
        .unwrap();
    assert_eq!(report.target, id);
    assert_eq!(report.executed_by, Executor::Requester);
    assert_eq!(*ran_on.lock().unwrap(), Some(std::thread::current().id()));
    release.send(()).unwrap();
    target.join().unwrap();
}

#[test]
fn handshake_to_a_busy_thread_runs_on_the_target_at_its_poll() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let busy = BusyThreads::start(&c, 1);
    let id = busy.ids.lock()[0];
    let ran_on = Arc::new(Mutex::new(None::<ThreadId>));
    let ran_on2 = ran_on.clone();
    let report = c
        .handshake(id, move |cx| {
            *ran_on2.lock().unwrap() = Some(std::thread::current().id());
            assert_eq!(cx.target(), id);
        })
        .unwrap();
    assert_eq!(report.executed_by, Executor::Target);
    let ran_on = ran_on.lock().unwrap().unwrap();
    assert_ne!(ran_on, std::thread::current().id());
    busy.finish();
}

#[test]
fn handshake_all_runs_exactly_once_per_thread() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let busy = BusyThreads::start(&c, 4);
    // Two more threads that sit in native and blocked regions.
    let (release, released) = mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(released));
    let sitters: Vec<_> = (0..2)
        .map(|i| {
            let (c, released) = (c.clone(), released.clone());
            std::thread::spawn(move || {
                let mut me = c.register().unwrap();
                let region = if i == 0 {
                    me.enter_native()
                } else {
                    me.enter_blocked()
                };
                released.lock().unwrap().recv().unwrap();
                drop(region);
            })
        })
        .collect();
    // Registered is not enough: a sitter still in managed code would run
    // its operation itself. Wait until both sit in their safe regions.
    wait_until("the sitters to enter their regions", || {
        c.mutators()
            .iter()
            .filter(|(_, s)| matches!(s, ThreadState::Native | ThreadState::Blocked))
            .count()
            == 2
    });
    for round in 1..=20 {
        let counts = Arc::new(Mutex::new(HashMap::<MutatorId, usize>::new()));
        let counts2 = counts.clone();
        let reports = c
            .handshake_all(move |cx| *counts2.lock().unwrap().entry(cx.target()).or_default() += 1)
            .unwrap();
        assert_eq!(reports.len(), 6, "round {round}");
        let counts = counts.lock().unwrap();
        assert_eq!(counts.len(), 6);
        assert!(counts.values().all(|&n| n == 1), "{counts:?}");
        let by_requester = reports
            .iter()
            .filter(|r| r.executed_by == Executor::Requester)
            .count();
        assert!(by_requester >= 2, "the sitters are safe: {reports:?}");
    }
    for _ in 0..2 {
        release.send(()).unwrap();
    }
    for s in sitters {
        s.join().unwrap();
    }
    busy.finish();
}

#[test]
fn handshake_errors_are_typed() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let busy = BusyThreads::start(&c, 1);
    let id = busy.ids.lock()[0];

    let guard = c.begin("owner").unwrap();
    assert_eq!(
        c.handshake(id, |_| {}).unwrap_err(),
        HandshakeError::InsideSafepoint(Some(guard.id()))
    );
    drop(guard);

    let mut me = c.register().unwrap();
    assert_eq!(
        c.handshake(id, |_| {}).unwrap_err(),
        HandshakeError::CallerIsManaged(me.id())
    );
    // Through the handle the caller is blocked while it waits.
    // (The target may still count as safe on its way out of the safepoint
    // above, so either executor is right here.)
    let report = me.handshake(id, |_| {}).unwrap();
    assert_eq!(report.target, id);
    let reports = me.handshake_all(|_| {}).unwrap();
    assert_eq!(reports.len(), 2);
    let mine = reports.iter().find(|r| r.target == me.id()).unwrap();
    assert_eq!(
        mine.executed_by,
        Executor::Requester,
        "a blocked caller runs its own"
    );
    let gone = me.id();
    drop(me);
    assert_eq!(
        c.handshake(gone, |_| {}).unwrap_err(),
        HandshakeError::NoSuchMutator(gone)
    );
    busy.finish();
}

#[test]
fn a_panicking_operation_is_reported_and_the_target_unwinds() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let (id_tx, id_rx) = mpsc::channel();
    let c2 = c.clone();
    let target = std::thread::spawn(move || {
        let me = c2.register().unwrap();
        id_tx.send(me.id()).unwrap();
        loop {
            me.poll();
        }
    });
    let id = id_rx.recv().unwrap();
    assert_eq!(
        c.handshake(id, |_| panic!("operation failed")).unwrap_err(),
        HandshakeError::OperationPanicked(id)
    );
    assert!(target.join().is_err(), "the panic continued on the target");
    assert_eq!(c.registered(), 0);
    drop(c.begin("after").unwrap());
}

#[test]
fn handshakes_and_safepoints_interleave_without_hanging() {
    for strategy in [Strategy::WaitBarrier, Strategy::Legacy] {
        let c = Coordinator::new(strategy);
        let busy = BusyThreads::start(&c, 4);
        let stop = Arc::new(AtomicBool::new(false));
        let runs = Arc::new(AtomicUsize::new(0));
        // A mutator that flips in and out of native, so both executors occur.
        // Its own stop flag: it must stay registered until the handshaker
        // has finished, or a last round would see one mutator fewer.
        let stop_flipper = Arc::new(AtomicBool::new(false));
        let flipper = {
            let (c, stop) = (c.clone(), stop_flipper.clone());
            std::thread::spawn(move || {
                let mut me = c.register().unwrap();
                while !stop.load(Ordering::Relaxed) {
                    me.poll();
                    let n = me.enter_native();
                    std::hint::spin_loop();
                    drop(n);
                }
            })
        };
        wait_until("the flipper to register", || c.registered() >= 5);
        let handshaker = {
            let (c, stop, runs) = (c.clone(), stop.clone(), runs.clone());
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !stop.load(Ordering::Relaxed) {
                    let runs = runs.clone();
                    let n = c
                        .handshake_all(move |_| {
                            runs.fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap()
                        .len();
                    assert_eq!(n, 5);
                    rounds += 1;
                }
                rounds
            })
        };
        for _ in 0..50 {
            drop(c.begin("mixed").unwrap());
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = handshaker.join().unwrap();
        stop_flipper.store(true, Ordering::Relaxed);
        flipper.join().unwrap();
        busy.finish();
        assert_eq!(runs.load(Ordering::Relaxed), rounds * 5);
    }
}

/// A target that does not poll for a while (as if it had no CPU): the
/// requester asks the other threads to yield. That request is advisory:
/// the operation still runs once, on the target, the others keep running,
/// and the poll words come back clean (a later safepoint arms and ends
/// normally, and polls stop taking the slow path once no handshake asks).
#[test]
fn a_late_target_is_waited_for_while_the_others_are_asked_to_yield() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let others = BusyThreads::start(&c, 3);
    let release = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let late = {
        let (c, release) = (c.clone(), release.clone());
        std::thread::spawn(move || {
            let me = c.register().unwrap();
            tx.send(me.id()).unwrap();
            // "Managed code" that polls only once released.
            while !release.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            me.poll();
            while release.load(Ordering::Acquire) {
                me.poll();
            }
        })
    };
    let target = rx.recv().unwrap();
    let releaser = {
        let release = release.clone();
        std::thread::spawn(move || {
            // Long past any grace period; the test holds either way.
            std::thread::sleep(std::time::Duration::from_millis(20));
            release.store(true, Ordering::Release);
        })
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let runs2 = runs.clone();
    let report = c
        .handshake(target, move |_| {
            runs2.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert_eq!(report.executed_by, Executor::Target);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    releaser.join().unwrap();
    let guard = c.begin("after").unwrap();
    guard.end();
    release.store(false, Ordering::Release);
    late.join().unwrap();
    others.finish();
    assert_eq!(c.stats().count, 1);
}
