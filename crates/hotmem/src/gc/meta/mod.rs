//! The collection's side tables (as mmtk-core's side metadata): each
//! collection maps the heap's pages with a live map per page, and gives each
//! page it evacuates a forwarding table, all in zeroed words mapped for the
//! collection through the runtime's memory (NMT tag GC) and unmapped after.

mod forwarding;
mod heap_map;
mod live_map;
mod side_table;

pub(crate) use forwarding::{Forwarding, ForwardingTables};
pub(crate) use heap_map::HeapMap;
pub(crate) use live_map::Overlap;
#[cfg(all(test, hotmem_loom))]
pub(crate) use side_table::SideTable;
