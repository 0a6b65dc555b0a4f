//! `StatSampler`: rates per second over sliding windows.

use super::CounterSnapshot;
use super::report::{StatRow, StatUnit, StatsReport, WindowStat};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The statistics rows, in report order: name, unit, and how to read the
/// counter they are a rate of.
/// Reads one counter out of a snapshot.
type Read = fn(&CounterSnapshot) -> u64;

const ROWS: [(&str, StatUnit, Read); 12] = [
    (
        "Memory: Allocation Rate",
        StatUnit::MegabytesPerSecond,
        |c| c.page_bytes_allocated,
    ),
    ("Memory: Defragment", StatUnit::OpsPerSecond, |c| {
        c.defragment_ops
    }),
    (
        "Memory: Page Cache Flush",
        StatUnit::MegabytesPerSecond,
        |c| c.cache_flush_bytes,
    ),
    ("Memory: Mapped Cache Hit", StatUnit::OpsPerSecond, |c| {
        c.cache_hits
    }),
    ("Memory: Mapped Cache Split", StatUnit::OpsPerSecond, |c| {
        c.cache_splits
    }),
    ("Memory: Mapped Cache Merge", StatUnit::OpsPerSecond, |c| {
        c.cache_merges
    }),
    (
        "Memory: Mapped Cache Harvest",
        StatUnit::OpsPerSecond,
        |c| c.cache_flush_ops,
    ),
    (
        "Memory: Undo Page Allocation",
        StatUnit::OpsPerSecond,
        |c| c.undo_ops.total(),
    ),
    ("Memory: Medium Page Undo", StatUnit::OpsPerSecond, |c| {
        c.undo_ops.medium
    }),
    (
        "Memory: Medium Page Allocation",
        StatUnit::OpsPerSecond,
        |c| c.pages_allocated.medium,
    ),
    ("Memory: Medium Page Install", StatUnit::OpsPerSecond, |c| {
        c.pages_installed.medium
    }),
    ("Memory: Uncommit", StatUnit::MegabytesPerSecond, |c| {
        c.uncommit_bytes
    }),
];

/// The three sliding windows: (span, bucket length).
const WINDOWS: [(Duration, Duration); 3] = [
    (Duration::from_secs(10), Duration::from_secs(1)),
    (Duration::from_secs(600), Duration::from_secs(10)),
    (Duration::from_secs(36_000), Duration::from_secs(600)),
];

#[derive(Clone, Debug)]
struct Bucket {
    start: Instant,
    amount: f64,
    secs: f64,
    max: f64,
}

#[derive(Clone, Debug, Default)]
struct Window {
    buckets: VecDeque<Bucket>,
}

impl Window {
    fn add(&mut self, at: Instant, amount: f64, secs: f64, span: Duration, bucket: Duration) {
        let rate = amount / secs;
        match self.buckets.back_mut() {
            Some(b) if at < b.start + bucket => {
                b.amount += amount;
                b.secs += secs;
                b.max = b.max.max(rate);
            }
            _ => self.buckets.push_back(Bucket {
                start: at,
                amount,
                secs,
                max: rate,
            }),
        }
        while self.buckets.front().is_some_and(|b| b.start + span <= at) {
            self.buckets.pop_front();
        }
    }

    fn stat(&self) -> WindowStat {
        let amount: f64 = self.buckets.iter().map(|b| b.amount).sum();
        let secs: f64 = self.buckets.iter().map(|b| b.secs).sum();
        let max = self.buckets.iter().map(|b| b.max).fold(0.0, f64::max);
        WindowStat {
            avg: if secs > 0.0 { amount / secs } else { 0.0 },
            max,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Series {
    windows: [Window; 3],
    total: Bucket2,
}

#[derive(Clone, Debug, Default)]
struct Bucket2 {
    amount: f64,
    secs: f64,
    max: f64,
}

/// Turns counter snapshots into rates per second and keeps their average
/// and maximum over the last 10 seconds, 10 minutes, 10 hours and since
/// the first sample, as ZGC's statistics do.
///
/// Whoever owns it calls [`StatSampler::sample`] about once a second (the
/// facade from its statistics thread, the example from its main loop);
/// the maximum is the highest per-sample rate.
///
/// ```
/// use hotmem_page::{CounterSnapshot, StatSampler};
/// use std::time::{Duration, Instant};
/// let t0 = Instant::now();
/// let mut s = StatSampler::new(CounterSnapshot::default(), t0);
/// let mut c = CounterSnapshot::default();
/// c.page_bytes_allocated = 64 << 20;
/// s.sample(c, t0 + Duration::from_secs(1));
/// c.page_bytes_allocated = 96 << 20;
/// s.sample(c, t0 + Duration::from_secs(2));
/// let report = s.report();
/// let rate = report.row("Memory: Allocation Rate").unwrap();
/// assert_eq!((rate.last_10s.avg, rate.last_10s.max), (48.0, 64.0));
/// println!("{report}");
/// ```
#[derive(Clone, Debug)]
pub struct StatSampler {
    start: Instant,
    last: (Instant, CounterSnapshot),
    series: Vec<Series>,
    samples: u64,
}

impl StatSampler {
    /// A sampler whose first interval starts at `now` with `counters`.
    pub fn new(counters: CounterSnapshot, now: Instant) -> StatSampler {
        StatSampler {
            start: now,
            last: (now, counters),
            series: vec![Series::default(); ROWS.len()],
            samples: 0,
        }
    }

    /// Records the interval since the previous sample. A sample at the same
    /// instant as the previous one (or earlier) is ignored.
    pub fn sample(&mut self, counters: CounterSnapshot, now: Instant) {
        let (then, prev) = self.last;
        if now <= then {
            return;
        }
        let secs = (now - then).as_secs_f64();
        for (series, (_, unit, read)) in self.series.iter_mut().zip(ROWS.iter()) {
            let amount = read(&counters).saturating_sub(read(&prev)) as f64 / unit.divisor();
            for (w, (span, bucket)) in series.windows.iter_mut().zip(WINDOWS) {
                w.add(now, amount, secs, span, bucket);
            }
            series.total.amount += amount;
            series.total.secs += secs;
            series.total.max = series.total.max.max(amount / secs);
        }
        self.last = (now, counters);
        self.samples += 1;
    }

    /// The statistics as of the last sample.
    pub fn report(&self) -> StatsReport {
        let rows = self
            .series
            .iter()
            .zip(ROWS.iter())
            .map(|(s, (name, unit, _))| {
                let t = &s.total;
                StatRow {
                    name: (*name).to_string(),
                    unit: *unit,
                    last_10s: s.windows[0].stat(),
                    last_10m: s.windows[1].stat(),
                    last_10h: s.windows[2].stat(),
                    total: WindowStat {
                        avg: if t.secs > 0.0 { t.amount / t.secs } else { 0.0 },
                        max: t.max,
                    },
                }
            })
            .collect();
        StatsReport {
            uptime_secs: (self.last.0 - self.start).as_secs_f64(),
            samples: self.samples,
            rows,
        }
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn windows_forget_old_samples() {
        let t0 = Instant::now();
        let mut s = StatSampler::new(CounterSnapshot::default(), t0);
        let mut c = CounterSnapshot::default();
        // 20 s at 1 op/s, then 1 s at 10 ops/s.
        for i in 1..=20 {
            c.defragment_ops += 1;
            s.sample(c, t0 + Duration::from_secs(i));
        }
        c.defragment_ops += 10;
        s.sample(c, t0 + Duration::from_secs(21));
        let r = s.report();
        let row = r.row("Memory: Defragment").unwrap();
        assert_eq!(row.last_10s.max, 10.0);
        assert!(
            (row.last_10s.avg - 19.0 / 10.0).abs() < 1e-9,
            "{}",
            row.last_10s.avg
        );
        assert!((row.total.avg - 30.0 / 21.0).abs() < 1e-9);
        assert!((row.last_10m.avg - 30.0 / 21.0).abs() < 1e-9);
        assert_eq!(r.samples, 21);
        // Ignored: not after the last sample.
        s.sample(c, t0);
        assert_eq!(s.report().samples, 21);
    }
}
