//! The space lock under loom: two threads update a value through it.
//!
//! Checked in every interleaving (up to the preemption bound): the two
//! guards' accesses never overlap (loom's `UnsafeCell` tracking panics on a
//! racing access, so a lock that let two holders in fails the model), no
//! update is lost, and a waiter gets the lock once the holder releases it
//! (a waiter that never did would leave the model unfinished).

use crate::lock::SpinLock;
use loom::sync::Arc;
use loom::thread;

#[test]
fn loom_spin_lock_excludes() {
    loom::model(|| {
        let lock = Arc::new(SpinLock::new((0u32, 0u32)));
        let other = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                let mut g = lock.lock();
                g.0 += 1;
                g.1 += 1;
            })
        };
        {
            let mut g = lock.lock();
            g.0 += 1;
            g.1 += 1;
        }
        other.join().expect("the other thread");
        assert_eq!(*lock.lock(), (2, 2));
    });
}
