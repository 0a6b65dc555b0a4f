//! Misuse that used to hang (issue 12): each is a typed error now, returned
//! in bounded time. Every scenario runs on its own thread and the test
//! fails if it has not finished after a generous deadline.

mod common;

use common::{BusyThreads, assert_world_stopped, within_deadline};
use hotmem_safepoint::{
    BeginError, Coordinator, Executor, HandshakeError, RegisterError, Strategy, ThreadState,
};
use std::sync::mpsc;

/// 2a: `begin` on a registered thread inside its own native region, then
/// the region dropped before the end, used to stop the thread in its own
/// safepoint forever. `Coordinator::begin` from a registered thread is an
/// error; the region's `safepoint` borrows the region instead (dropping
/// the region first does not compile: doctest on `SafepointGuard`).
#[test]
fn a_mutator_begins_only_through_a_borrowed_safe_state() {
    for strategy in [Strategy::WaitBarrier, Strategy::Legacy] {
        within_deadline(move || {
            let c = Coordinator::new(strategy);
            let busy = BusyThreads::start(&c, 2);
            let mut me = c.register().unwrap();
            let my_id = me.id();
            let mut native = me.enter_native();
            assert_eq!(
                c.begin("inside native").unwrap_err(),
                BeginError::CallerIsMutator(my_id)
            );
            assert_eq!(
                c.begin_unscoped("inside native").unwrap_err(),
                BeginError::CallerIsMutator(my_id)
            );
            assert_eq!(c.in_progress(), None, "a failed begin changes nothing");
            let guard = native.safepoint("from the region").unwrap();
            assert_world_stopped(&c, &busy.progress);
            guard.end();
            drop(native); // back to managed code: nothing to wait for
            assert_eq!(me.state(), ThreadState::Managed);
            me.poll();
            drop(me);
            busy.finish();
        });
    }
}

/// 2b: `register` on the thread that owns the safepoint in progress used to
/// wait for that safepoint to end.
#[test]
fn the_owner_of_a_safepoint_cannot_register() {
    within_deadline(|| {
        let c = Coordinator::new(Strategy::WaitBarrier);
        let busy = BusyThreads::start(&c, 1);
        let guard = c.begin("owner").unwrap();
        assert_eq!(
            c.register().unwrap_err(),
            RegisterError::OwnsSafepoint(Some(guard.id()))
        );
        let registered = c.registered();
        assert_eq!(registered, 1, "a failed register changes nothing");
        guard.end();
        let ticket = c.begin_unscoped("owner").unwrap();
        assert_eq!(
            c.register().unwrap_err(),
            RegisterError::OwnsSafepoint(Some(ticket.id()))
        );
        ticket.end();
        drop(c.register().unwrap());
        busy.finish();
    });
}

/// Everything a handshake operation may try that waits for the handshake
/// it runs in, with what came back.
#[derive(Debug)]
struct Attempts {
    executor: Executor,
    begin: BeginError,
    handshake: HandshakeError,
    handshake_all: HandshakeError,
    register: Option<RegisterError>,
}

fn attempt_everything(c: &Coordinator, executor: Executor) -> Attempts {
    let target = c.mutators()[0].0;
    Attempts {
        executor,
        begin: c.begin("from an operation").map(drop).unwrap_err(),
        handshake: c.handshake(target, |_| {}).map(drop).unwrap_err(),
        handshake_all: c.handshake_all(|_| {}).map(drop).unwrap_err(),
        register: c.register().map(drop).err(),
    }
}

/// 2c: an operation that the requester runs (the target is in native) and
/// that calls `begin` used to wait for its own handshake forever; so did
/// one that requests another handshake while a safepoint waits. Each is
/// an error now, and so is registering from the operation.
#[test]
fn an_operation_run_by_the_requester_cannot_wait_for_its_handshake() {
    within_deadline(|| {
        let c = Coordinator::new(Strategy::WaitBarrier);
        let (ready_tx, ready) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let c2 = c.clone();
        let target = std::thread::spawn(move || {
            let mut me = c2.register().unwrap();
            let id = me.id();
            let native = me.enter_native();
            ready_tx.send(id).unwrap();
            released.recv().unwrap();
            drop(native);
        });
        let id = ready.recv().unwrap();
        let (tx, rx) = mpsc::channel();
        let c3 = c.clone();
        let report = c
            .handshake(id, move |cx| {
                tx.send(attempt_everything(&c3, cx.executor())).unwrap();
            })
            .unwrap();
        assert_eq!(report.executed_by, Executor::Requester);
        let attempts = rx.recv().unwrap();
        assert_eq!(attempts.begin, BeginError::InsideHandshake, "{attempts:?}");
        assert_eq!(attempts.handshake, HandshakeError::InsideHandshake);
        assert_eq!(attempts.handshake_all, HandshakeError::InsideHandshake);
        assert_eq!(attempts.register, Some(RegisterError::InsideHandshake));
        // Nothing is left behind: a safepoint and a handshake still work.
        c.begin("after").unwrap().end();
        c.handshake(id, |_| {}).unwrap();
        release.send(()).unwrap();
        target.join().unwrap();
    });
}

/// The neighbour of 2c: an operation run by the target itself (at its poll)
/// is on a registered thread; it cannot begin, request handshakes or
/// register a second time.
#[test]
fn an_operation_run_by_the_target_cannot_wait_for_itself() {
    within_deadline(|| {
        let c = Coordinator::new(Strategy::WaitBarrier);
        let busy = BusyThreads::start(&c, 1);
        let id = busy.ids.lock()[0];
        let (tx, rx) = mpsc::channel();
        let c2 = c.clone();
        c.handshake(id, move |cx| {
            tx.send(attempt_everything(&c2, cx.executor())).unwrap();
        })
        .unwrap();
        let attempts = rx.recv().unwrap();
        match attempts.executor {
            // At its poll: a registered thread in managed code.
            Executor::Target => {
                assert_eq!(attempts.begin, BeginError::CallerIsMutator(id));
                assert_eq!(attempts.handshake, HandshakeError::CallerIsManaged(id));
                assert_eq!(attempts.handshake_all, HandshakeError::CallerIsManaged(id));
                assert_eq!(attempts.register, Some(RegisterError::InsideHandshake));
            }
            // Run here because the target was safe: as in the test above.
            _ => {
                assert_eq!(attempts.begin, BeginError::InsideHandshake);
                assert_eq!(attempts.handshake, HandshakeError::InsideHandshake);
            }
        }
        busy.finish();
    });
}

/// A target that runs its queue while it enters native code is safe, yet
/// still inside the operation: a handshake from there (to itself, whose
/// processing lock it holds) is an error, not a deadlock. Depending on
/// whether the operation is queued before the target enters native code,
/// the target or the requester runs it; both must get the error.
#[test]
fn an_operation_run_while_entering_native_cannot_request_handshakes() {
    within_deadline(|| {
        let c = Coordinator::new(Strategy::WaitBarrier);
        let (id_tx, id_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let c2 = c.clone();
        let target = std::thread::spawn(move || {
            let mut me = c2.register().unwrap();
            id_tx.send(me.id()).unwrap();
            go_rx.recv().unwrap(); // managed code that does not poll
            // Entering native runs a queued operation on this thread.
            let native = me.enter_native();
            done_rx.recv().unwrap();
            drop(native);
        });
        let id = id_rx.recv().unwrap();
        let (tx, rx) = mpsc::channel();
        let requester = {
            let c = c.clone();
            std::thread::spawn(move || {
                let inner = c.clone();
                c.handshake(id, move |cx| {
                    let again = inner.handshake(cx.target(), |_| {}).map(drop);
                    tx.send((cx.executor(), again)).unwrap();
                })
            })
        };
        go_tx.send(()).unwrap();
        let (executor, again) = rx.recv().unwrap();
        assert_eq!(again, Err(HandshakeError::InsideHandshake), "{executor:?}");
        let report = requester.join().unwrap().unwrap();
        assert_eq!(report.executed_by, executor);
        done_tx.send(()).unwrap();
        target.join().unwrap();
    });
}

/// The owner of a safepoint asks for statistics or waits for the last
/// safepoint's threads to resume: neither waits for the owner.
#[test]
fn the_owner_may_read_statistics_during_its_safepoint() {
    within_deadline(|| {
        let c = Coordinator::new(Strategy::WaitBarrier);
        let busy = BusyThreads::start(&c, 2);
        c.begin("first").unwrap().end();
        let guard = c.begin("second").unwrap();
        c.wait_until_resumed();
        assert_eq!(c.stats().count, 1);
        guard.end();
        c.wait_until_resumed();
        assert_eq!(c.stats().count, 2);
        busy.finish();
    });
}
