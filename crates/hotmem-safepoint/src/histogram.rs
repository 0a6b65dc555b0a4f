//! A log-linear histogram of nanosecond durations: exact below 32 ns, then
//! 32 buckets per power of two (at most 1/32 = 3.1% relative error), over
//! the whole `u64` range, in 15 KiB, allocated at the first value (a
//! runtime has four, and one that never reaches a safepoint keeps none
//! resident). Recording is two shifts and an add.

use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Counts of durations in nanoseconds.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// Empty until the first value; then `BUCKETS` counts.
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let top = (v >> shift) as usize; // in SUB..2*SUB
    (shift as usize + 1) * SUB + (top - SUB)
}

/// The largest value that lands in bucket `i`.
fn upper_bound(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let shift = (i / SUB - 1) as u32;
    let top = (i % SUB + SUB) as u64;
    ((top + 1) << shift).wrapping_sub(1).max(top << shift)
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            buckets: Vec::new(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Count one value.
    pub fn record(&mut self, nanos: u64) {
        if self.buckets.is_empty() {
            self.buckets = vec![0; BUCKETS];
        }
        self.buckets[index(nanos)] += 1;
        self.count += 1;
        self.sum += u128::from(nanos);
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value recorded (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The smallest value recorded (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    /// The mean (0 when empty).
    pub fn mean(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            (self.sum / u128::from(self.count)) as u64
        }
    }

    /// The value at quantile `q` (0.0..=1.0): the smallest bucket bound
    /// below which at least `q` of the values lie, capped at the maximum.
    /// 0 when empty.
    ///
    /// # Panics
    /// If `q` is not within `0.0..=1.0`.
    pub fn quantile(&self, q: f64) -> u64 {
        assert!((0.0..=1.0).contains(&q), "quantile {q} outside 0..=1");
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == 1 {
            return self.min;
        }
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return upper_bound(i).min(self.max).max(self.min());
            }
        }
        self.max
    }

    /// p50, p90, p99 and max, with count and mean.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            count: self.count,
            mean: self.mean(),
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }
}

/// A summary of a [`Histogram`], in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_are_allocated_at_the_first_value() {
        let mut h = Histogram::new();
        assert_eq!(h.buckets.capacity(), 0);
        assert_eq!(h.quantile(0.99), 0);
        assert_eq!(h.percentiles().count, 0);
        let mut copy = h.clone();
        h.record(1500);
        assert_eq!(h.buckets.len(), BUCKETS);
        assert_eq!((h.count(), h.quantile(1.0)), (1, 1500));
        copy.record(40);
        assert_eq!((copy.count(), copy.quantile(0.5)), (1, 40));
    }

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let i = index(v);
            assert!(i >= last, "index not monotonic at {v}");
            assert!(upper_bound(i) >= v, "bound {} below {v}", upper_bound(i));
            if i > 0 {
                assert!(upper_bound(i - 1) < v, "{v} belongs to an earlier bucket");
            }
            last = i;
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_the_bucket_error() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p = h.percentiles();
        assert_eq!(p.count, 10_000);
        assert_eq!(p.max, 10_000_000);
        for (got, want) in [
            (p.p50, 5_000_000u64),
            (p.p90, 9_000_000),
            (p.p99, 9_900_000),
        ] {
            assert!(got >= want && got <= want + want / 32, "{got} vs {want}");
        }
        assert_eq!(h.quantile(0.0), 1000);
        assert_eq!(p.mean, 5_000_500);
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        assert_eq!(Histogram::new().percentiles(), Percentiles::default());
    }
}
