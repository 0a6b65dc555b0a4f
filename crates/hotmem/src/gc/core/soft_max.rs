//! The heap's soft maximum and the collector's time limit: a VM that
//! shares its machine names how much heap it would like to stay under
//! ([`RuntimeBuilder::soft_max_heap`](crate::RuntimeBuilder::soft_max_heap)),
//! and the sizing policy keeps its target below that while collections
//! take no more than a share of the time
//! ([`RuntimeBuilder::gc_time_limit`](crate::RuntimeBuilder::gc_time_limit),
//! 50% by default). A live set that does not fit makes collections run
//! back to back; once they take more than the limit, the soft maximum is
//! set aside and the policy sizes up to the hard maximum, so a nearly full
//! heap costs at most that share of the time instead of spiralling. When
//! the share falls below the limit again, the target comes back under the
//! soft maximum.
//!
//! The two halves are ZGC's `SoftMaxHeapSize` (the collector aims below
//! it, and goes above rather than stall) and Go's memory limit with its
//! GC CPU limiter (a soft limit, set aside when the collector would take
//! more than half of the CPU). The share is of the machine's time over the
//! last second, as Go measures it: a pause counts whole (it stops every
//! mutator), and a concurrent cycle adds the CPU time of its threads (the
//! GC thread and the workers, each on its own CPU clock) divided by the
//! CPUs. A cycle whose one worker runs back to back on two CPUs takes
//! half the machine, not all of it.
//!
//! ```
//! use hotmem::Runtime;
//! let rt = Runtime::builder()
//!     .heap_max(256 << 20)
//!     .soft_max_heap(64 << 20)
//!     .gc_time_limit(50.0)
//!     .build()?;
//! let target = rt.heap_target();
//! assert_eq!(target.soft_max, Some(64 << 20));
//! assert!(target.bytes <= 64 << 20);
//! assert_eq!(target.over_soft_max, 0);
//! # Ok::<(), hotmem::BuildError>(())
//! ```

use parking_lot::Mutex;
use serde::Serialize;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The collector's time limit by default, in percent of wall time (Go's
/// GC CPU limiter's).
pub(crate) const DEFAULT_TIME_LIMIT_PERCENT: f64 = 50.0;

/// How far back the share of time in collections is measured.
const WINDOW: Duration = Duration::from_secs(1);

/// The sizing policy's target now, and how the soft maximum has held.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HeapTarget {
    /// What the heap may grow to before the next full collection: the
    /// sizing policy's target, in bytes.
    pub bytes: usize,
    /// The soft maximum, if the runtime has one.
    pub soft_max: Option<usize>,
    /// Collections after which the soft maximum was set aside because
    /// collections took more than the time limit.
    pub over_soft_max: u64,
}

/// The soft maximum and the record of the time collections took.
pub(crate) struct SoftMax {
    bytes: usize,
    limit_percent: f64,
    state: Mutex<State>,
}

/// Collections within the window, and how often the limit lifted the
/// soft maximum.
struct State {
    /// Where the time since the last collection began: the runtime's start
    /// or the last collection's end.
    since: Instant,
    /// The collections that ended within [`WINDOW`] (at least the last
    /// one): the wall time from the one before's end to their own end,
    /// and their length, in nanoseconds.
    recent: VecDeque<Interval>,
    over: u64,
}

#[derive(Copy, Clone)]
struct Interval {
    end: Instant,
    wall_ns: u64,
    gc_ns: u64,
}

impl SoftMax {
    /// A soft maximum of `bytes`, set aside while collections take more
    /// than `limit_percent` of the time; the clock starts at `now`.
    pub(crate) fn new(bytes: usize, limit_percent: f64, now: Instant) -> SoftMax {
        SoftMax {
            bytes,
            limit_percent,
            state: Mutex::new(State {
                since: now,
                recent: VecDeque::new(),
                over: 0,
            }),
        }
    }

    /// The soft maximum in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Collections after which the soft maximum was set aside.
    pub(crate) fn times_over(&self) -> u64 {
        self.state.lock().over
    }

    /// Records a collection of `gc_ns` that ended at `now` and says whether
    /// the soft maximum holds for the next one: `true` while collections
    /// took at most the limit's share of the last second.
    pub(crate) fn holds_after(&self, gc_ns: u64, now: Instant) -> bool {
        let mut s = self.state.lock();
        let wall_ns = now.saturating_duration_since(s.since).as_nanos() as u64;
        s.since = now;
        s.recent.push_back(Interval {
            end: now,
            wall_ns: wall_ns.max(gc_ns),
            gc_ns,
        });
        while s.recent.len() > 1
            && s.recent
                .front()
                .is_some_and(|i| now.saturating_duration_since(i.end) > WINDOW)
        {
            s.recent.pop_front();
        }
        let (wall, gc) = s
            .recent
            .iter()
            .fold((0u64, 0u64), |(w, g), i| (w + i.wall_ns, g + i.gc_ns));
        let holds = gc as f64 * 100.0 <= self.limit_percent * wall.max(1) as f64;
        if !holds {
            s.over += 1;
        }
        holds
    }
}

/// Checks a soft maximum and a time limit against the hard maximum.
pub(crate) fn validate(
    soft: Option<usize>,
    limit_percent: f64,
    heap_max: usize,
) -> Result<(), String> {
    if let Some(soft) = soft {
        if soft == 0 || soft > heap_max {
            return Err(format!(
                "soft_max_heap {soft} is not between 1 and heap_max {heap_max}"
            ));
        }
    }
    if !(limit_percent > 0.0 && limit_percent <= 100.0) {
        return Err(format!("gc_time_limit {limit_percent}% is not in (0, 100]"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> u64 {
        n * 1_000_000
    }

    #[test]
    fn the_soft_maximum_holds_while_collections_take_at_most_the_limit() {
        let t0 = Instant::now();
        let at = |n| t0 + Duration::from_millis(n);
        let s = SoftMax::new(64 << 20, 50.0, t0);
        // 10 ms of collection after 100 ms: 10%.
        assert!(s.holds_after(ms(10), at(100)));
        // Back to back: 40 ms collections every 50 ms. 10+40+40 of 200 ms
        // is 45%; one more makes 130 of 250, 52%: set aside.
        assert!(s.holds_after(ms(40), at(150)));
        assert!(s.holds_after(ms(40), at(200)));
        assert!(!s.holds_after(ms(40), at(250)));
        assert_eq!(s.times_over(), 1);
        // Then a long quiet stretch: the old collections leave the window
        // and the share falls back.
        assert!(s.holds_after(ms(5), at(2_000)));
        assert_eq!(s.times_over(), 1);
    }

    #[test]
    fn one_collection_longer_than_the_time_since_the_last_counts_as_all_of_it() {
        let t0 = Instant::now();
        let s = SoftMax::new(64 << 20, 100.0, t0);
        // A limit of 100% never sets the soft maximum aside.
        assert!(s.holds_after(ms(500), t0 + Duration::from_millis(100)));
        let s = SoftMax::new(64 << 20, 99.0, t0);
        assert!(!s.holds_after(ms(500), t0 + Duration::from_millis(100)));
    }

    #[test]
    fn settings_out_of_range_are_refused() {
        assert!(validate(None, 50.0, 1 << 30).is_ok());
        assert!(validate(Some(1 << 30), 50.0, 1 << 30).is_ok());
        assert!(validate(Some(0), 50.0, 1 << 30).is_err());
        assert!(validate(Some((1 << 30) + 1), 50.0, 1 << 30).is_err());
        for bad in [0.0, -1.0, 100.5, f64::NAN] {
            assert!(validate(None, bad, 1 << 30).is_err(), "{bad}");
        }
    }
}
