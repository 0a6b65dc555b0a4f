//! The collection's side tables (as mmtk-core's side metadata): each
//! collection maps the heap's pages with a live map per page, and gives each
//! page it evacuates a forwarding table, all in zeroed words mapped for the
//! collection through the runtime's memory (NMT tag GC) and unmapped after;
//! and, for the life of the runtime, the record of the pages allocated
//! since a concurrent mark start and the table of old pages (the
//! generational store barrier's, which the concurrent relocation also
//! fills). Every table indexed by address is a
//! [`GranuleTable`].

mod forwarding;
mod granule_table;
mod heap_map;
mod live_map;
mod new_pages;
mod old_pages;
mod side_table;

pub(crate) use forwarding::{Forwarding, ForwardingTables};
pub(crate) use granule_table::{GranuleTable, GranuleView};
pub(crate) use heap_map::{HeapMap, PageGc};
pub(crate) use live_map::Overlap;
pub(crate) use new_pages::NewPages;
pub(crate) use old_pages::OldPages;
#[cfg(all(test, hotmem_loom))]
pub(crate) use side_table::SideTable;
