//! Safepoint statistics: one record per safepoint, histograms over all of
//! them, and log lines shaped like HotSpot's `-Xlog:safepoint`.

use crate::histogram::{Histogram, Percentiles};
use crate::ids::SafepointId;
use crate::options::Strategy;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// The timings of one safepoint, in nanoseconds.
///
/// * reaching: from `begin` until every registered thread was safe (time to
///   safepoint, TTSP);
/// * at: from then until `end` was called (the operation);
/// * leaving: from `end` until every thread that had stopped runs again,
///   which HotSpot's log does not show;
/// * total: the sum of the three.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafepointRecord {
    /// The safepoint's id.
    pub id: SafepointId,
    /// The name given to `begin`.
    pub name: Cow<'static, str>,
    /// How the threads were stopped and woken.
    pub strategy: Strategy,
    /// Threads registered when the safepoint began.
    pub threads: u32,
    /// Threads that stopped in the safepoint and were woken at its end.
    pub stopped: u32,
    /// From the end of the previous safepoint to the start of this one (0
    /// for the first).
    pub since_last_ns: u64,
    /// Time to safepoint.
    pub reaching_ns: u64,
    /// The operation.
    pub at_ns: u64,
    /// Waking the stopped threads until the last one runs.
    pub leaving_ns: u64,
    /// `reaching + at + leaving`.
    pub total_ns: u64,
    /// How the leaving phase ended.
    pub leave_end: LeaveEnd,
}

/// How a safepoint's leaving phase ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum LeaveEnd {
    /// Every thread that stopped runs again.
    AllRunning,
    /// The next safepoint began first; the threads that had not run yet are
    /// stopped in that one now.
    CutByNextSafepoint,
}

impl fmt::Display for SafepointRecord {
    /// The `-Xlog:safepoint` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Safepoint \"{}\", Time since last: {} ns, Reaching safepoint: {} ns, At safepoint: {} ns, Leaving safepoint: {} ns, Total: {} ns",
            self.name,
            self.since_last_ns,
            self.reaching_ns,
            self.at_ns,
            self.leaving_ns,
            self.total_ns
        )
    }
}

/// Percentiles of every phase over all safepoints so far: plain data for a
/// report, serializable, and printable as a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafepointStats {
    /// The coordinator's strategy.
    pub strategy: Strategy,
    /// Safepoints completed.
    pub count: u64,
    /// Time to safepoint.
    pub reaching: Percentiles,
    /// The operations.
    pub at: Percentiles,
    /// Leaving.
    pub leaving: Percentiles,
    /// Whole safepoints.
    pub total: Percentiles,
    /// The most recent safepoint.
    pub last: Option<SafepointRecord>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl fmt::Display for SafepointStats {
    /// A table in microseconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "safepoints ({:?}): {}", self.strategy, self.count)?;
        writeln!(
            f,
            "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "phase", "p50 us", "p90 us", "p99 us", "max us", "mean us"
        )?;
        for (name, p) in [
            ("reaching", &self.reaching),
            ("at", &self.at),
            ("leaving", &self.leaving),
            ("total", &self.total),
        ] {
            writeln!(
                f,
                "{:<9} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                name,
                us(p.p50),
                us(p.p90),
                us(p.p99),
                us(p.max),
                us(p.mean)
            )?;
        }
        Ok(())
    }
}

/// Timestamps of the safepoint in progress (nanoseconds since the
/// coordinator's epoch).
#[derive(Clone, Debug)]
pub(crate) struct InFlight {
    pub(crate) id: SafepointId,
    pub(crate) name: Cow<'static, str>,
    pub(crate) threads: u32,
    pub(crate) begun: u64,
    pub(crate) safe: u64,
}

/// Where a coordinator accumulates its statistics.
#[derive(Debug)]
pub(crate) struct StatsCollector {
    strategy: Strategy,
    count: u64,
    reaching: Histogram,
    at: Histogram,
    leaving_hist: Histogram,
    total: Histogram,
    last: Option<SafepointRecord>,
    last_resumed: Option<u64>,
    /// The safepoint in progress.
    pub(crate) in_flight: Option<InFlight>,
    /// The safepoint that ended and whose threads are still leaving, with
    /// the time it ended and how many threads had stopped.
    leaving: Option<(InFlight, u64, u32)>,
}

impl StatsCollector {
    pub(crate) fn new(strategy: Strategy) -> Self {
        StatsCollector {
            strategy,
            count: 0,
            reaching: Histogram::new(),
            at: Histogram::new(),
            leaving_hist: Histogram::new(),
            total: Histogram::new(),
            last: None,
            last_resumed: None,
            in_flight: None,
            leaving: None,
        }
    }

    /// The safepoint in flight ended at `ended` with `stopped` threads
    /// stopped in it.
    pub(crate) fn ended(&mut self, ended: u64, stopped: u32) {
        if let Some(flight) = self.in_flight.take() {
            self.leaving = Some((flight, ended, stopped));
        }
    }

    /// The safepoint whose threads are leaving, if any.
    pub(crate) fn leaving_id(&self) -> Option<SafepointId> {
        self.leaving.as_ref().map(|(flight, _, _)| flight.id)
    }

    /// Complete the record of `id`, leaving at `resumed`. `None` if it was
    /// completed already.
    pub(crate) fn finish(
        &mut self,
        id: SafepointId,
        resumed: u64,
        how: LeaveEnd,
    ) -> Option<SafepointRecord> {
        if self.leaving_id() != Some(id) {
            return None;
        }
        let (flight, ended, stopped) = self.leaving.take()?;
        let reaching = flight.safe.saturating_sub(flight.begun);
        let at = ended.saturating_sub(flight.safe);
        let leaving = resumed.saturating_sub(ended);
        let record = SafepointRecord {
            id: flight.id,
            name: flight.name,
            strategy: self.strategy,
            threads: flight.threads,
            stopped,
            since_last_ns: self
                .last_resumed
                .map_or(0, |t| flight.begun.saturating_sub(t)),
            reaching_ns: reaching,
            at_ns: at,
            leaving_ns: leaving,
            total_ns: reaching + at + leaving,
            leave_end: how,
        };
        self.count += 1;
        self.reaching.record(reaching);
        self.at.record(at);
        self.leaving_hist.record(leaving);
        self.total.record(record.total_ns);
        self.last_resumed = Some(resumed);
        self.last = Some(record.clone());
        Some(record)
    }

    pub(crate) fn snapshot(&self) -> SafepointStats {
        SafepointStats {
            strategy: self.strategy,
            count: self.count,
            reaching: self.reaching.percentiles(),
            at: self.at.percentiles(),
            leaving: self.leaving_hist.percentiles(),
            total: self.total.percentiles(),
            last: self.last.clone(),
        }
    }

    /// Forget everything recorded so far (not the safepoint in flight or
    /// leaving).
    pub(crate) fn reset(&mut self) {
        let in_flight = self.in_flight.take();
        let leaving = self.leaving.take();
        *self = StatsCollector::new(self.strategy);
        self.in_flight = in_flight;
        self.leaving = leaving;
    }
}
