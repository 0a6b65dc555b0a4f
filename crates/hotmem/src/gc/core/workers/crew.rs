//! [`Crew`]: how many workers of a concurrent phase work at once, at most
//! what the phase allows at each moment.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How often a concurrent worker (marking, relocating) that may not work
/// yet checks whether it may now.
pub(crate) const PARKED_CHECK: Duration = Duration::from_micros(200);

/// The workers of a concurrent phase that work now: at most `allowed()`
/// of them (the first to come always may), each for one job at a time,
/// so that a phase whose allowance grows (an allocation stalls) takes more
/// workers from their next job on, and one whose allowance shrinks lets
/// them go after their current job. Which workers work does not matter,
/// so a phase completes on however many threads its pool has.
#[derive(Default)]
pub(crate) struct Crew {
    working: AtomicUsize,
    /// Set once a worker found no job left.
    finished: AtomicBool,
}

impl Crew {
    /// Waits until this worker may take a job: its [`Shift`], during
    /// which it counts as working; `None` once a worker found no job
    /// left.
    pub(crate) fn join(&self, allowed: &(dyn Fn() -> usize + Sync)) -> Option<Shift<'_>> {
        loop {
            if self.finished.load(Ordering::Acquire) {
                return None;
            }
            let now = self.working.load(Ordering::Relaxed);
            if now >= allowed().max(1) {
                std::thread::sleep(PARKED_CHECK);
                continue;
            }
            if self
                .working
                .compare_exchange(now, now + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Shift(self));
            }
        }
    }
}

/// One job's time of a worker in a [`Crew`]: it stops counting as working
/// when the shift is dropped, also if its job panicked (the others would
/// wait for its place otherwise).
pub(crate) struct Shift<'c>(&'c Crew);

impl Shift<'_> {
    /// The worker found no job left: the phase is over, and the others
    /// stop once their job is done.
    pub(crate) fn nothing_left(self) {
        self.0.finished.store(true, Ordering::Release);
    }
}

impl Drop for Shift<'_> {
    fn drop(&mut self) {
        self.0.working.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many threads come, at most `allowed` work at once, every
    /// job is taken exactly once, and every thread returns.
    #[test]
    fn at_most_the_allowed_workers_take_the_jobs() {
        const JOBS: usize = 2000;
        let crew = Crew::default();
        let next = AtomicUsize::new(0);
        let done: Vec<AtomicUsize> = (0..JOBS).map(|_| AtomicUsize::new(0)).collect();
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let allowed = || 2;
        std::thread::scope(|s| {
            for _ in 0..5 {
                s.spawn(|| {
                    while let Some(shift) = crew.join(&allowed) {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        let job = next.fetch_add(1, Ordering::Relaxed);
                        let found = done.get(job).map(|d| d.fetch_add(1, Ordering::Relaxed));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        if found.is_none() {
                            shift.nothing_left();
                        }
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert!(done.iter().all(|d| d.load(Ordering::Relaxed) == 1));
    }

    /// A crew that found nothing left lets no one join again.
    #[test]
    fn no_one_joins_after_the_jobs_ran_out() {
        let crew = Crew::default();
        crew.join(&|| 1).expect("the first may join").nothing_left();
        assert!(crew.join(&|| 1).is_none());
    }

    /// A job that panics gives its place back: the others go on.
    #[test]
    fn a_panicking_job_gives_its_place_back() {
        let crew = Crew::default();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _shift = crew.join(&|| 1);
            panic!("the job panics");
        }));
        assert!(panicked.is_err());
        // With one place allowed, this would wait for ever had the place
        // not been given back.
        assert!(crew.join(&|| 1).is_some());
    }
}
