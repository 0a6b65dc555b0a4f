//! Statistics, shaped like ZGC's `gc,stats` log: counters, a sampler that
//! keeps the last 10 s, 10 min, 10 h and the total, and a report that is
//! both plain serializable data and the familiar text.

pub(crate) mod counters;
mod report;
mod sampler;

pub use counters::{CounterSnapshot, PerType};
pub use report::{StatRow, StatUnit, StatsReport, WindowStat};
pub use sampler::StatSampler;
