//! The collector: what happens between "the heap is full" and "the mutators
//! run again".
//!
//! - [`driver`]: around one collection: the collection lock, the
//!   safepoint, the cause, the record and the log;
//! - [`cycle`]: one collection as a list of phases over one state value:
//!   [`roots`], [`mark`], [`relocation_set`], [`relocate`], [`update`],
//!   [`free`], each phase a method in its own file, and [`weak_refs`]
//!   after marking;
//! - [`meta`]: the collection's side tables (live maps, forwarding tables);
//! - [`generations`]: young and old objects, the remembered slots, the
//!   policy that picks young or full collections;
//! - [`sizing`]: when the next collection runs, how far the heap grows;
//! - [`workers`]: the GC workers (NUMA-bound or plain threads);
//! - [`tlab`]: the mutators' allocation buffers, which each collection
//!   retires;
//! - [`heap`]: the part of the runtime this code works on, [`GcHeap`];
//!   nothing here sees the rest of the runtime.
//!
//! The embedder's side (what a binding reports) is in [`crate::vm`], the
//! mutator's side of the barriers in `crate::mutator`.

mod binding_panic;
mod collector;
pub(crate) mod concurrent;
mod cycle;
mod driver;
mod free;
pub(crate) mod generations;
mod heap;
pub(crate) mod in_collection;
mod mark;
mod meta;
pub(crate) mod poison;
mod record;
mod relocate;
mod relocation_set;
mod roots;
pub(crate) mod sizing;
mod stats;
pub(crate) mod tlab;
mod update;
mod weak_refs;
pub(crate) mod workers;

pub(crate) use collector::{Collect, Collector};
pub(crate) use driver::{DriverContext, GcRequest};
pub(crate) use heap::GcHeap;
pub(crate) use record::GcRecord;
pub use stats::{
    CollectStats, ConcurrentPhases, GcCause, GcTotals, RefStats, StrengthCounts, UpdateScope,
};
