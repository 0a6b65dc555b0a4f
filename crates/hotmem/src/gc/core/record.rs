//! [`GcRecord`]: what collections leave behind for reports.

use super::stats::{CollectStats, GcTotals};
use hotmem_page::StatSampler;

/// Statistics over time windows, the last collection, totals.
pub(crate) struct GcRecord {
    /// The page allocator's windowed statistics (`gc,stats`).
    pub(crate) sampler: StatSampler,
    /// The last successful collection.
    pub(crate) last: Option<CollectStats>,
    /// Totals over every collection.
    pub(crate) totals: GcTotals,
}
