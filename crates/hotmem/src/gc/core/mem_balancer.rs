//! [`BalancedSizing`]: heap limits from the live set and the rates, as
//! MemBalancer sets them (Kirisame, Shenoy and Panchekha, "Optimal heap
//! limits for reducing browser memory use", OOPSLA 2022).
//!
//! A collection costs about `t` (its length); between two of them the
//! mutators allocate `E` bytes of headroom at `g` bytes per second, so
//! collections take `g * t / E` of the time while the heap holds `E`
//! bytes more than the live set. Minimizing memory plus `1 / lambda` times
//! that time gives `E = sqrt(lambda * g * t)`: the headroom grows with the
//! square root of what the mutators allocate during one collection. The
//! same rule sizes the young generation (with a young collection's
//! length) and the whole heap (with a full one's, above what the last full
//! collection left). `g` and `t` are smoothed over collections.

use super::generations::CollectionKind;
use std::time::Instant;

/// The bounds and the tuning of [`HeapSizing::Balanced`](super::sizing::HeapSizing), in bytes.
///
/// ```
/// use hotmem::{BalancedSizing, HeapSizing, Runtime};
/// let rt = Runtime::builder()
///     .heap_sizing(HeapSizing::Balanced(BalancedSizing {
///         tuning: 16 << 20, // less memory, more collections
///         ..BalancedSizing::default()
///     }))
///     .build()?;
/// # Ok::<(), hotmem::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BalancedSizing {
    /// The heap a runtime starts with, and the least it is given after a
    /// full collection. Default 2 MiB: one small page. A program whose
    /// live set is small keeps a small heap; one that grows is given the
    /// headroom its rates ask for from its first full collection on.
    pub initial: usize,
    /// The least headroom: the young generation's (or, without
    /// generations, the mutators' budget between collections) smallest
    /// size. Default 2 MiB.
    pub young_min: usize,
    /// The largest young generation. Default: no bound.
    pub young_max: usize,
    /// `lambda`: bytes of memory worth all of the mutators' time (the
    /// higher, the more memory for less collection time). Default 64 MiB:
    /// with the Lox VM's young collections (about 0.2 ms while it
    /// allocates 1 GB/s) a young generation of about 4 MiB. Against
    /// 256 MiB (an 8 MiB young generation, what the VM's own policy once
    /// chose) its bench programs ran 0.94-1.05x the time (geometric mean
    /// 1.01x) in 0.50-1.02x the peak RSS (the Lox README, "When to
    /// collect"). A workload whose collections cost more pays in time:
    /// `binary_trees --sizing balanced` (depth 20, 256 MiB) ran 1.14x the
    /// time in 0.92x the peak RSS against 256 MiB (medians of three
    /// interleaved runs); set 256 MiB for that trade.
    pub tuning: usize,
}

impl Default for BalancedSizing {
    fn default() -> Self {
        BalancedSizing {
            initial: 2 << 20,
            young_min: 2 << 20,
            young_max: usize::MAX,
            tuning: 64 << 20,
        }
    }
}

impl BalancedSizing {
    /// The bounds the sizing tests' arithmetic is written for: an 8 MiB
    /// start and `lambda` = 256 MiB (the defaults before they were
    /// lowered), the young minimum and maximum as the defaults.
    #[cfg(test)]
    pub(crate) fn for_tests() -> BalancedSizing {
        BalancedSizing {
            initial: 8 << 20,
            tuning: 256 << 20,
            ..BalancedSizing::default()
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.initial == 0 || self.young_min == 0 || self.tuning == 0 {
            return Err(
                "the initial heap, the young minimum and the tuning must be positive".into(),
            );
        }
        if self.young_min > self.young_max {
            return Err(format!(
                "young generation minimum {} exceeds its maximum {}",
                self.young_min, self.young_max
            ));
        }
        Ok(())
    }
}

/// Weight of the last sample in a smoothed rate.
const SMOOTHING: f64 = 0.5;

/// What one collection cost: its length, which the balancer weighs against
/// memory, how long it stopped the mutators, which is not mutator time in
/// the allocation rate, and its share of the machine, which the soft
/// maximum's time limit counts. A stop-the-world collection's three are its
/// pause; a concurrent cycle's length is the whole cycle, it stops the
/// mutators only for its pauses (they allocate through the rest), and it
/// takes the machine for its pauses and for its threads' CPU time spread
/// over the CPUs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cost {
    pub(crate) length_ns: u64,
    pub(crate) stopped_ns: u64,
    /// Pauses, plus the GC threads' CPU time divided by the CPUs: the
    /// wall time the collection would take if it had the whole machine
    /// (Go's GC CPU limiter's measure).
    pub(crate) machine_ns: u64,
}

impl Cost {
    /// A collection that ran entirely in a pause of `ns`.
    pub(crate) fn paused(ns: u64) -> Cost {
        Cost {
            length_ns: ns,
            stopped_ns: ns,
            machine_ns: ns,
        }
    }
}

/// What the balancer has measured: the mutators' allocation rate and the
/// collections' lengths, smoothed.
pub(crate) struct Balancer {
    config: BalancedSizing,
    /// Bytes per nanosecond of mutator time; `None` before the first
    /// collection.
    alloc_rate: Option<f64>,
    young_ns: Option<f64>,
    full_ns: Option<f64>,
    /// Collections observed of each kind, young then full.
    observed: [u64; 2],
    /// When the last collection ended.
    last_end: Instant,
}

fn smooth(old: Option<f64>, sample: f64) -> f64 {
    old.map_or(sample, |o| o + SMOOTHING * (sample - o))
}

impl Balancer {
    pub(crate) fn new(config: BalancedSizing, now: Instant) -> Balancer {
        Balancer {
            config,
            alloc_rate: None,
            young_ns: None,
            full_ns: None,
            observed: [0; 2],
            last_end: now,
        }
    }

    /// A collection of `kind` cost `cost` and ended at `now`; the mutators
    /// had allocated `allocated` bytes since the last one ended.
    pub(crate) fn observe(
        &mut self,
        kind: CollectionKind,
        cost: Cost,
        allocated: usize,
        now: Instant,
    ) {
        let wall = now.saturating_duration_since(self.last_end).as_nanos() as f64;
        // The mutators ran all of that time but the pauses: a concurrent
        // cycle's length is mutator time too (counting it out made cycles
        // run back to back look like an allocation rate of 100 GB/s).
        let mutator_ns = (wall - cost.stopped_ns as f64).max(1.0);
        self.alloc_rate = Some(smooth(self.alloc_rate, allocated as f64 / mutator_ns));
        // A runtime's first collection of each kind is not a sample of
        // its length: it also pays what no later one does (the workers'
        // start, the first touch of the relocation targets' pages). The
        // Lox VM's closures.lox ran its first young and full collections
        // in 0.5-0.9 ms and the rest in 0.1 ms; the headroom those two
        // asked for gave its next young collections two or three small
        // pages instead of one, which stayed resident (peak RSS 6.8-9.1
        // MiB, and 4.9 without those two samples).
        let t = cost.length_ns as f64;
        let (slot, seen) = match kind {
            CollectionKind::Young => (&mut self.young_ns, &mut self.observed[0]),
            CollectionKind::Full => (&mut self.full_ns, &mut self.observed[1]),
        };
        if *seen > 0 {
            *slot = Some(smooth(*slot, t));
        }
        *seen += 1;
        self.last_end = now;
    }

    /// Whether a full collection was observed.
    pub(crate) fn seen_full(&self) -> bool {
        self.observed[1] > 0
    }

    /// `sqrt(lambda * g * t)` for collections of `kind` (a full one's
    /// length where no young one was seen yet), at least the young
    /// minimum.
    pub(crate) fn headroom(&self, kind: CollectionKind) -> usize {
        let t = match kind {
            CollectionKind::Young => self.young_ns.or(self.full_ns),
            CollectionKind::Full => self.full_ns.or(self.young_ns),
        };
        let (Some(g), Some(t)) = (self.alloc_rate, t) else {
            return self.config.initial;
        };
        let e = (self.config.tuning as f64 * g * t).sqrt();
        (e as usize).max(self.config.young_min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MIB: usize = 1 << 20;

    /// `count` collections of `kind`, each `pause` long after
    /// `mutator_ns` of mutator time in which `allocated` bytes were
    /// allocated, from `start`; returns when the last ended.
    fn observe_n(
        b: &mut Balancer,
        count: u32,
        kind: CollectionKind,
        pause: u64,
        allocated: usize,
        mutator_ns: u64,
        start: Instant,
    ) -> Instant {
        let mut now = start;
        for _ in 0..count {
            now += Duration::from_nanos(mutator_ns + pause);
            b.observe(kind, Cost::paused(pause), allocated, now);
        }
        now
    }

    #[test]
    fn headroom_is_the_square_root_of_lambda_times_what_one_collection_lets_the_mutators_allocate()
    {
        let t0 = Instant::now();
        let mut b = Balancer::new(BalancedSizing::for_tests(), t0);
        assert_eq!(
            b.headroom(CollectionKind::Young),
            8 * MIB,
            "the initial size first"
        );
        // 8 MiB in 10 ms of mutator time (800 MiB/s), young collections of
        // 0.4 ms (the first is not a sample of their length):
        // sqrt(256 MiB * 800 MiB/s * 0.4 ms) = 9.05 MiB.
        let pause = 400_000;
        let young = CollectionKind::Young;
        observe_n(&mut b, 2, young, pause, 8 * MIB, 10_000_000, t0);
        let e = b.headroom(young) as f64 / MIB as f64;
        assert!((e - 9.05).abs() < 0.05, "{e}");
        // Four times the collection's length: twice the headroom.
        let mut four = Balancer::new(BalancedSizing::for_tests(), t0);
        observe_n(&mut four, 2, young, 4 * pause, 8 * MIB, 10_000_000, t0);
        let e4 = four.headroom(young) as f64 / MIB as f64;
        assert!((e4 / e - 2.0).abs() < 0.01, "{e4} {e}");
        // Never below the minimum.
        let mut idle = Balancer::new(BalancedSizing::for_tests(), t0);
        let full = CollectionKind::Full;
        observe_n(&mut idle, 2, full, 1000, 0, 1_000_000_000, t0);
        assert_eq!(idle.headroom(full), 2 * MIB);
    }

    #[test]
    fn a_first_collection_is_not_a_sample_of_the_length() {
        let t0 = Instant::now();
        let young = CollectionKind::Young;
        // A first young collection ten times as long as the next ones.
        let mut b = Balancer::new(BalancedSizing::for_tests(), t0);
        let t1 = observe_n(&mut b, 1, young, 4_000_000, 8 * MIB, 10_000_000, t0);
        assert_eq!(b.headroom(young), 8 * MIB, "still the initial size");
        let t2 = observe_n(&mut b, 1, young, 400_000, 8 * MIB, 10_000_000, t1);
        let mut steady = Balancer::new(BalancedSizing::for_tests(), t0);
        observe_n(&mut steady, 2, young, 400_000, 8 * MIB, 10_000_000, t0);
        let (e, s) = (b.headroom(young), steady.headroom(young));
        assert!(e.abs_diff(s) < MIB / 8, "{e} against {s}");
        // A full collection is seen from the first, though its length is
        // not sampled.
        assert!(!b.seen_full());
        observe_n(&mut b, 1, CollectionKind::Full, 9_000_000, 0, 1_000_000, t2);
        assert!(b.seen_full());
    }

    #[test]
    fn a_concurrent_cycle_is_mutator_time_but_for_its_pauses() {
        let t0 = Instant::now();
        // 10 MiB allocated in 10 ms, all of it while a 10 ms cycle ran
        // with 0.1 ms of pauses: 1 MiB/ms, as a pause-free 10 ms would be.
        let mut b = Balancer::new(BalancedSizing::for_tests(), t0);
        let cycle = Cost {
            length_ns: 10_000_000,
            stopped_ns: 100_000,
            machine_ns: 5_000_000,
        };
        for n in 1..=2 {
            b.observe(
                CollectionKind::Young,
                cycle,
                10 * MIB,
                t0 + Duration::from_millis(10 * n),
            );
        }
        let rate = b.alloc_rate.expect("observed") * 1e6 / MIB as f64;
        assert!((rate - 1.0 / 0.99).abs() < 0.01, "{rate} MiB/ms");
        // The headroom weighs the cycle's whole length:
        // sqrt(256 MiB * 1.01 MiB/ms * 10 ms) = 50.9 MiB.
        let e = b.headroom(CollectionKind::Young) as f64 / MIB as f64;
        assert!((e - 50.9).abs() < 0.2, "{e}");
    }
}
