//! `StatsReport`: the statistics as data and as `gc,stats` text.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a row counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatUnit {
    /// MiB per second (ZGC's "MB/s").
    MegabytesPerSecond,
    /// Operations per second.
    OpsPerSecond,
}

impl StatUnit {
    pub(crate) fn divisor(self) -> f64 {
        match self {
            StatUnit::MegabytesPerSecond => (1u64 << 20) as f64,
            StatUnit::OpsPerSecond => 1.0,
        }
    }

    /// `MB/s` or `ops/s`.
    pub fn label(self) -> &'static str {
        match self {
            StatUnit::MegabytesPerSecond => "MB/s",
            StatUnit::OpsPerSecond => "ops/s",
        }
    }
}

/// Average and maximum rate over a window.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStat {
    /// Amount over the window divided by its length.
    pub avg: f64,
    /// The highest rate of one sample interval in the window.
    pub max: f64,
}

/// One statistic over the four windows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatRow {
    /// As ZGC names it, e.g. `Memory: Undo Page Allocation`.
    pub name: String,
    /// The unit of the rates.
    pub unit: StatUnit,
    /// The last 10 seconds.
    pub last_10s: WindowStat,
    /// The last 10 minutes.
    pub last_10m: WindowStat,
    /// The last 10 hours.
    pub last_10h: WindowStat,
    /// Since the sampler started.
    pub total: WindowStat,
}

/// The statistics block. `Display` prints it as ZGC's `gc,stats` lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsReport {
    /// Seconds from the sampler's start to its last sample.
    pub uptime_secs: f64,
    /// Samples taken.
    pub samples: u64,
    /// The rows, allocation rate first.
    pub rows: Vec<StatRow>,
}

impl StatsReport {
    /// The row called `name`.
    pub fn row(&self, name: &str) -> Option<&StatRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The lines without the log decoration: a two-line header and one line
    /// per row.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "{:<32}{:>16}{:>22}{:>22}{:>22}",
                "", "Last 10s", "Last 10m", "Last 10h", "Total"
            ),
            format!(
                "{:<32}{:>16}{:>22}{:>22}{:>22}",
                "", "Avg / Max", "Avg / Max", "Avg / Max", "Avg / Max"
            ),
        ];
        for r in &self.rows {
            let w = |s: WindowStat| format!("{:>10.0} / {:<9.0}", s.avg, s.max);
            out.push(format!(
                "{:<32}{}{}{}{} {}",
                r.name,
                w(r.last_10s),
                w(r.last_10m),
                w(r.last_10h),
                w(r.total),
                r.unit.label()
            ));
        }
        out
    }
}

impl fmt::Display for StatsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.lines() {
            writeln!(
                f,
                "[{:.3}s][info][gc,stats    ] {}",
                self.uptime_secs,
                line.trim_end()
            )?;
        }
        Ok(())
    }
}
