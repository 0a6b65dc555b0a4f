//! The shared core: what every collector uses, and nothing that only one
//! of them does. It imports no collector and no barrier; the collectors
//! (`gc/stop_the_world/`, `gc/concurrent/`) and the barriers
//! (`gc/barriers/`) import it.
//!
//! - the heap a collector works on, [`GcHeap`](heap::GcHeap), and the
//!   interface the runtime drives a collector through,
//!   [`Collector`](collector::Collector) with its
//!   [`Constraints`](collector::Constraints);
//! - the declared list of phases ([`phases`]): name, pause or concurrent,
//!   which collectors run it; every collector's order, timing, log lines
//!   and charts come from it;
//! - one collection in progress, [`Collection`](collection::Collection),
//!   and the phases every collector runs on it: the roots
//!   ([`root_scan`]; [`root_tables`] after the pauses), marking ([`mark`], with a collector's
//!   [`MarkPolicy`](mark::MarkPolicy)), weak processing
//!   ([`weak_processing`]), relocation-set selection ([`select`]),
//!   forwarding ([`meta`]'s tables; [`relocation_set`] while the mutators
//!   run), freeing ([`free`]) and statistics ([`stats`], [`record`]);
//! - the bookkeeping around them: pauses ([`pause`]), the driver's record
//!   and log ([`driver`]), the failed-collection state ([`poison`]), the
//!   guard against reentrant callbacks ([`in_collection`]);
//! - what collections leave to the mutators: heap sizing ([`sizing`],
//!   with the concurrent cycles' trigger in [`pacing`]),
//!   the thread-local allocation buffers ([`tlab`]) and the pages whose
//!   objects never move ([`non_moving`]);
//! - the GC workers ([`workers`]) and the side tables ([`meta`]).

pub(crate) mod binding_panic;
pub(crate) mod collection;
pub(crate) mod collector;
pub(crate) mod collector_mode;
pub(crate) mod cpu_time;
pub(crate) mod driver;
pub(crate) mod ephemeron_marking;
pub(crate) mod free;
pub(crate) mod gc_pages;
pub(crate) mod generational_policy;
pub(crate) mod generations;
pub(crate) mod heap;
pub(crate) mod in_collection;
pub(crate) mod mark;
pub(crate) mod mem_balancer;
pub(crate) mod meta;
pub(crate) mod non_moving;
pub(crate) mod pacing;
pub(crate) mod pause;
pub(crate) mod phases;
pub(crate) mod poison;
pub(crate) mod record;
pub(crate) mod relocation_set;
pub(crate) mod root_scan;
pub(crate) mod root_tables;
pub(crate) mod select;
pub(crate) mod sizing;
pub(crate) mod soft_max;
pub(crate) mod stats;
pub(crate) mod tlab;
pub(crate) mod uncommitter;
pub(crate) mod weak_processing;
pub(crate) mod workers;
