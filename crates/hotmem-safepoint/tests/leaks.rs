//! Guards leaked with `std::mem::forget`. A leaked `SafeRegion` no longer
//! borrows its handle while the thread is still published as safe: the
//! handle finds the leak at its next use, counts it and returns the thread
//! to managed code as the region's drop would have. (A leaked
//! `SafepointGuard` or ticket leaks its safepoint, as a leaked `MutexGuard`
//! leaks its lock: see `SafepointTicket`'s docs.)

mod common;

use common::{DEADLINE, wait_until};
use hotmem_safepoint::{Coordinator, Strategy, ThreadState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

const STRATEGIES: [Strategy; 2] = [Strategy::WaitBarrier, Strategy::Legacy];

/// Before: the thread stayed `Native` after its poll (the poll word was
/// not armed, so the poll did nothing), and every later safepoint counted
/// it as safe while it ran.
#[test]
fn a_leaked_region_ends_at_the_next_poll_and_is_counted() {
    for strategy in STRATEGIES {
        let c = Coordinator::new(strategy);
        let mut me = c.register().unwrap();
        std::mem::forget(me.enter_native());
        assert_eq!(me.state(), ThreadState::Native, "the leak: counted as safe");
        assert_eq!(c.leaked_regions(), 0, "not seen yet");
        me.poll();
        assert_eq!(me.state(), ThreadState::Managed, "{strategy:?}");
        assert_eq!(c.leaked_regions(), 1);
        // Found once: the next poll and a region that is dropped count nothing.
        me.poll();
        drop(me.enter_blocked());
        assert_eq!(c.leaked_regions(), 1);
        assert_eq!(me.state(), ThreadState::Managed);
    }
}

/// The other uses of the handle find it too: a new region, a safepoint
/// from the handle, `ensure_managed`, and unregistering.
#[test]
fn every_use_of_the_handle_finds_a_leaked_region() {
    let c = Coordinator::new(Strategy::WaitBarrier);
    let mut me = c.register().unwrap();

    std::mem::forget(me.enter_native());
    let region = me.enter_blocked();
    assert_eq!(region.state(), ThreadState::Blocked);
    drop(region);
    assert_eq!(me.state(), ThreadState::Managed);
    assert_eq!(c.leaked_regions(), 1);

    std::mem::forget(me.enter_blocked());
    me.safepoint("after a leak").unwrap().end();
    assert_eq!(me.state(), ThreadState::Managed);
    assert_eq!(c.leaked_regions(), 2);

    std::mem::forget(me.enter_native());
    me.ensure_managed();
    assert_eq!(me.state(), ThreadState::Managed);
    assert_eq!(c.leaked_regions(), 3);
    me.ensure_managed();
    assert_eq!(c.leaked_regions(), 3, "nothing to find");

    std::mem::forget(me.enter_native());
    drop(me);
    assert_eq!(c.leaked_regions(), 4);
    assert_eq!(c.registered(), 0);
}

/// What the leak costs, and where it ends: a safepoint that begins after
/// the leak does not wait for the thread (it is published as safe), and
/// the thread's next poll stops it in that safepoint, as leaving the
/// region would have. That much held before too (the safepoint arms the
/// poll word); what did not is the first test: with no safepoint to arm
/// it, the poll left the thread counted as safe.
#[test]
fn a_leaked_region_stops_at_the_safepoint_in_progress() {
    for strategy in STRATEGIES {
        let c = Coordinator::new(strategy);
        let (leaked_tx, leaked) = mpsc::channel();
        let (begun, begun_rx) = mpsc::channel::<()>();
        let passed = Arc::new(AtomicBool::new(false));
        let thread = {
            let (c, passed) = (c.clone(), passed.clone());
            std::thread::spawn(move || {
                let mut me = c.register().unwrap();
                std::mem::forget(me.enter_native());
                leaked_tx.send(me.id()).unwrap();
                begun_rx.recv().unwrap();
                me.poll();
                passed.store(true, Ordering::SeqCst);
                assert_eq!(me.state(), ThreadState::Managed);
            })
        };
        let id = leaked.recv_timeout(DEADLINE).unwrap();
        // Returns although the thread is about to run: it counts as safe.
        let guard = c.begin("after the leak").unwrap();
        begun.send(()).unwrap();
        wait_until("the leaking thread to stop at its poll", || {
            c.mutators() == [(id, ThreadState::AtSafepoint)]
        });
        assert!(!passed.load(Ordering::SeqCst), "{strategy:?}");
        guard.end();
        thread.join().unwrap();
        assert!(passed.load(Ordering::SeqCst));
        assert_eq!(c.leaked_regions(), 1);
    }
}
