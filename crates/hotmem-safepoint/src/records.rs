//! The bookkeeping around each safepoint: its timestamps, the threads still
//! leaving it, its record and log line. The protocol (`protocol.rs`) calls
//! in here at fixed points; nothing here decides who stops or runs.

use crate::coordinator::{SafepointLog, Strategy};
use crate::ids::SafepointId;
use crate::leaving::LeaveTracker;
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
    pub(crate) fn new(strategy: Strategy, log: SafepointLog) -> Self {
        Records {
            log,
            epoch: Instant::now(),
            stats: Mutex::new(StatsCollector::new(strategy)),
            leaving: LeaveTracker::new(),
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

    /// Statistics, after the last safepoint's leaving phase is complete.
    ///
    /// Bounded: the threads it waits for were woken already (a safepoint in
    /// progress settled its predecessor when it began), so none of them
    /// waits for the caller.
    pub(crate) fn stats(&self) -> SafepointStats {
        loop {
            let stats = self.stats.lock();
            match stats.leaving_id() {
                None => return stats.snapshot(),
                Some(id) => {
                    drop(stats);
                    self.leaving.wait_done(id);
                }
            }
        }
    }

    /// Sleep until the last safepoint's stopped threads all run again.
    pub(crate) fn wait_until_resumed(&self) {
        loop {
            // Not in the loop condition: its temporary guard would be held
            // while we sleep, and the last thread to leave needs the lock.
            let leaving = self.stats.lock().leaving_id();
            match leaving {
                Some(id) => self.leaving.wait_done(id),
                None => return,
            }
        }
    }

    /// Forget the statistics gathered so far.
    pub(crate) fn reset(&self) {
        self.stats.lock().reset();
    }
}
