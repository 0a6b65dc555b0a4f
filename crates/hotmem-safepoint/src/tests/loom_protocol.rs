//! The safepoint and handshake protocol under loom: two mutators (one
//! polling in managed code, one entering and leaving native code) and a
//! coordinator that runs one safepoint and then one handshake with every
//! thread.
//!
//! Checked in every interleaving (up to the preemption bound):
//! * while the safepoint operation runs, no mutator is in managed code and
//!   none enters it;
//! * every mutator resumes and finishes (loom reports a deadlock otherwise);
//! * the handshake runs exactly once for each thread it reports, and not at
//!   all for the others.
//!
//! A second model has the safepoint begun by a registered mutator from its
//! native region (the only way a mutator may own one) while another
//! mutator polls: the same exclusion holds, and the owner leaves its region
//! after the end without waiting for itself.

use crate::{Coordinator, Strategy};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// Shared bookkeeping of the model (loom atomics, so loom sees every access).
struct World {
    /// Mutators currently in managed code.
    in_managed: AtomicUsize,
    /// Times any mutator entered managed code.
    entries: AtomicUsize,
    /// Handshake runs per mutator (index = registration order - 1).
    handshakes: [AtomicUsize; 2],
}

impl World {
    fn enter_managed(&self) {
        self.entries.fetch_add(1, Ordering::SeqCst);
        self.in_managed.fetch_add(1, Ordering::SeqCst);
    }

    fn leave_managed(&self) {
        self.in_managed.fetch_sub(1, Ordering::SeqCst);
    }
}

fn model(strategy: Strategy) {
    loom::model(move || {
        let coordinator = Coordinator::new(strategy);
        let world = Arc::new(World {
            in_managed: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            handshakes: [AtomicUsize::new(0), AtomicUsize::new(0)],
        });

        // Mutator 1: managed code with two polls.
        let poller = {
            let (c, w) = (coordinator.clone(), world.clone());
            thread::spawn(move || {
                let me = c.register().unwrap();
                w.enter_managed();
                w.leave_managed();
                me.poll();
                w.enter_managed();
                w.leave_managed();
                me.poll();
            })
        };
        // Mutator 2: managed code, a native call, managed code.
        let native = {
            let (c, w) = (coordinator.clone(), world.clone());
            thread::spawn(move || {
                let mut me = c.register().unwrap();
                w.enter_managed();
                w.leave_managed();
                let region = me.enter_native();
                drop(region);
                w.enter_managed();
                w.leave_managed();
            })
        };

        // The coordinator: one safepoint...
        let guard = coordinator.begin("loom").unwrap();
        let entries = world.entries.load(Ordering::SeqCst);
        assert_eq!(
            world.in_managed.load(Ordering::SeqCst),
            0,
            "a mutator runs managed code at a safepoint"
        );
        thread::yield_now();
        assert_eq!(
            world.in_managed.load(Ordering::SeqCst),
            0,
            "a mutator runs managed code at a safepoint"
        );
        assert_eq!(
            world.entries.load(Ordering::SeqCst),
            entries,
            "a mutator entered managed code at a safepoint"
        );
        guard.end();

        // ...then one handshake with every registered thread.
        let w = world.clone();
        let reports = coordinator
            .handshake_all(move |cx| {
                let i = (cx.target().get() - 1) as usize;
                w.handshakes[i].fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();

        poller.join().unwrap();
        native.join().unwrap();

        for i in 0..2 {
            let reported = reports
                .iter()
                .filter(|r| r.target.get() == i as u64 + 1)
                .count();
            assert!(reported <= 1);
            assert_eq!(
                world.handshakes[i].load(Ordering::SeqCst),
                reported,
                "mutator {} ran the handshake a wrong number of times",
                i + 1
            );
        }
        assert_eq!(coordinator.registered(), 0);
    });
}

#[test]
fn loom_wait_barrier_protocol() {
    model(Strategy::WaitBarrier);
}

/// While the safepoint runs, nobody is in managed code or enters it.
fn assert_stopped(world: &World) {
    let entries = world.entries.load(Ordering::SeqCst);
    assert_eq!(
        world.in_managed.load(Ordering::SeqCst),
        0,
        "managed code at a safepoint"
    );
    thread::yield_now();
    assert_eq!(
        world.in_managed.load(Ordering::SeqCst),
        0,
        "managed code at a safepoint"
    );
    assert_eq!(
        world.entries.load(Ordering::SeqCst),
        entries,
        "entered managed code at a safepoint"
    );
}

#[test]
fn loom_mutator_owned_safepoint() {
    loom::model(|| {
        let coordinator = Coordinator::new(Strategy::WaitBarrier);
        let world = Arc::new(World {
            in_managed: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            handshakes: [AtomicUsize::new(0), AtomicUsize::new(0)],
        });
        let poller = {
            let (c, w) = (coordinator.clone(), world.clone());
            thread::spawn(move || {
                let me = c.register().unwrap();
                w.enter_managed();
                w.leave_managed();
                me.poll();
                w.enter_managed();
                w.leave_managed();
            })
        };

        let mut me = coordinator.register().unwrap();
        let mut region = me.enter_native();
        let guard = region.safepoint("loom").unwrap();
        assert_stopped(&world);
        guard.end();
        drop(region); // no safepoint left to wait for
        me.poll();
        drop(me);
        poller.join().unwrap();
        assert_eq!(coordinator.registered(), 0);
    });
}
