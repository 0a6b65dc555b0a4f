//! The bookkeeping around each safepoint: its timestamps, the threads still
//! leaving it, its record and log line. The protocol (`protocol.rs`) calls
//! in here at fixed points; nothing here decides who stops or runs.

use crate::ids::SafepointId;
use crate::leaving::LeaveTracker;
use crate::options::{SafepointLog, Strategy};
use crate::stats::{InFlight, LeaveEnd, SafepointRecord, SafepointStats, StatsCollector};
use crate::sync::Mutex;
use std::borrow::Cow;
use std::time::Instant;

/// Statistics and the leaving count of one coordinator.
pub(crate) struct Records {
    log: SafepointLog,
    epoch: Instant,
    stats: Mutex<StatsCollector>,
    /// Threads stopped in the last safepoint that have not run again yet.
    pub(crate) leaving: LeaveTracker,
}

impl Records {
    pub(crate) fn new(strategy: Strategy, log: SafepointLog, cpus: usize) -> Self {
        Records {
            log,
            epoch: Instant::now(),
            stats: Mutex::new(StatsCollector::new(strategy)),
            leaving: LeaveTracker::new(cpus),
        }
    }

    /// Nanoseconds since the coordinator was built.
    pub(crate) fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Safepoint `id`, begun at `begun`, has every thread safe now.
    pub(crate) fn safe(&self, id: SafepointId, name: Cow<'static, str>, threads: u32, begun: u64) {
        let safe = self.now();
        self.stats.lock().in_flight = Some(InFlight {
            id,
            name,
            threads,
            begun,
            safe,
        });
    }

    /// Safepoint `id` ended at `ended`; its threads start leaving.
    pub(crate) fn ended(&self, id: SafepointId, ended: u64) {
        let mut stats = self.stats.lock();
        let stopped = self.leaving.stopped(id);
        stats.ended(ended, stopped);
    }

    /// The last thread stopped in `id` runs again at `resumed`: complete
    /// the record (once; a later safepoint may have cut it short already).
    pub(crate) fn finish_leaving(&self, id: SafepointId, resumed: u64) {
        let record = self.stats.lock().finish(id, resumed, LeaveEnd::AllRunning);
        if let Some(record) = record {
            self.log_record(&record);
        }
        self.leaving.mark_done(id);
    }

    /// A new safepoint begins at `now`: if the previous one's stopped
    /// threads have not all run again, its leaving phase ends here.
    pub(crate) fn settle_previous(&self, now: u64) {
        let cut = {
            let mut stats = self.stats.lock();
            let id = stats.leaving_id();
            id.and_then(|id| {
                stats
                    .finish(id, now, LeaveEnd::CutByNextSafepoint)
                    .map(|r| (id, r))
            })
        };
        if let Some((id, record)) = cut {
            self.log_record(&record);
            self.leaving.mark_done(id);
        }
    }

    fn log_record(&self, record: &SafepointRecord) {
        if self.log == SafepointLog::Stderr {
            eprintln!("[safepoint] {record}");
        }
    }

    /// Statistics, once the leaving phase of the safepoint that was leaving
    /// when called is complete (the ones that ended before the call are
    /// all in; one that ends meanwhile may not be).
    ///
    /// Bounded: the threads it waits for were woken already (a safepoint in
    /// progress settled its predecessor when it began), so none of them
    /// waits for the caller; and it waits for one safepoint, not for every
    /// one that a busy coordinator keeps beginning.
    pub(crate) fn stats(&self) -> SafepointStats {
        self.wait_until_resumed();
        self.stats.lock().snapshot()
    }

    /// Sleep until the stopped threads of the safepoint that was leaving
    /// when called all run again (or a later safepoint cut it short).
    pub(crate) fn wait_until_resumed(&self) {
        // Read, then the guard dropped: the last thread to leave needs the
        // lock while we sleep.
        let leaving = self.stats.lock().leaving_id();
        if let Some(id) = leaving {
            self.leaving.wait_done(id);
        }
    }

    /// Forget the statistics gathered so far.
    pub(crate) fn reset(&self) {
        self.stats.lock().reset();
    }
}
