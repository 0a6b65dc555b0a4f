//! The CPU time of the calling thread: what the collector's threads spend,
//! as opposed to how long a collection lasts. A concurrent cycle's GC
//! workers run beside the mutators; what they cost the machine is their
//! CPU time, not the cycle's length (Go's GC CPU limiter counts the same).

use rustix::time::{ClockId, clock_gettime};

/// The calling thread's CPU time so far, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// The CPUs this process may run on (its affinity mask and cgroup), at
/// least 1.
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_accrues_cpu_time_and_a_sleeping_one_does_not() {
        let start = thread_cpu_ns();
        let mut x = 0u64;
        let busy = std::time::Instant::now();
        while busy.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spun = thread_cpu_ns() - start;
        assert!(spun > 0, "spinning takes CPU time");
        let before = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let slept = thread_cpu_ns() - before;
        // Not a timing bound: sleeping 20 ms costs less CPU than 20 ms of
        // wall time, whatever the machine's load.
        assert!(slept < 20_000_000, "sleeping took {slept} ns of CPU");
        assert!(cpus() >= 1);
    }
}
