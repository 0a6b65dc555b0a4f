//! What the kernel and a tracker say about the pages of one range.

use hotmem_nmt::Tracker;
use hotmem_os::{Address, MemRange, page_size, procfs};

/// One page of a range, as the tracker or the kernel sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Page {
    /// Not mapped (kernel), not reserved (tracker).
    Unmapped,
    /// Mapped `PROT_NONE` (kernel), reserved and not committed (tracker).
    Reserved,
    /// Mapped accessible (kernel), committed (tracker).
    Committed,
}

fn pages_of(range: MemRange) -> impl Iterator<Item = Address> {
    (range.start().get()..range.end().get())
        .step_by(page_size())
        .map(Address::new)
}

/// The kernel's view of `range`, from `/proc/self/smaps` clipped to it.
pub(crate) fn kernel_view(range: MemRange) -> Vec<Page> {
    let pieces = procfs::mappings_within(range).unwrap();
    pages_of(range)
        .map(|at| match pieces.iter().find(|p| p.range.contains(at)) {
            None => Page::Unmapped,
            Some(p) if p.is_accessible() => Page::Committed,
            Some(_) => Page::Reserved,
        })
        .collect()
}

/// The tracker's view of `range`, from its regions clipped to it.
pub(crate) fn tracker_view(nmt: &Tracker, range: MemRange) -> Vec<Page> {
    let regions = nmt.regions_in(range);
    pages_of(range)
        .map(|at| match regions.iter().find(|r| r.range.contains(at)) {
            None => Page::Unmapped,
            Some(r) if r.committed.iter().any(|c| c.range.contains(at)) => Page::Committed,
            Some(_) => Page::Reserved,
        })
        .collect()
}
