//! Spinning, then yielding, before a sleep: the schedule every waiter of
//! this crate runs before it sleeps on a futex word (a stopped thread on the
//! wait barrier, the coordinator on its count of threads to come, a reader
//! of the statistics on the leaving phase), so that a wait of a few
//! microseconds costs no wake-up. `parking_lot`'s locks run the same kind of
//! schedule before they park.

/// Checks `done` before each of `spin_rounds` rounds of 2, 4, 8, ...
/// `pause`s and then before each of `yields` yields; true as soon as it
/// holds, false if it never did (the caller then sleeps, re-checking under
/// its futex). A yield keeps the thread runnable, so callers yield only
/// while the threads they wait for can have a CPU besides them.
///
/// Not under loom: it only reads what the caller's sleep re-checks, and the
/// sleep is the protocol; there it returns false at once.
#[inline]
pub(crate) fn spin_then_yield(
    spin_rounds: u32,
    yields: u32,
    mut done: impl FnMut() -> bool,
) -> bool {
    #[cfg(not(hotmem_loom))]
    for round in 0..spin_rounds + yields {
        if done() {
            return true;
        }
        if round < spin_rounds {
            for _ in 0..(2u32 << round) {
                crate::sync::hint::spin_loop();
            }
        } else {
            crate::sync::thread::yield_now();
        }
    }
    #[cfg(hotmem_loom)]
    let _ = (spin_rounds, yields, &mut done);
    false
}
