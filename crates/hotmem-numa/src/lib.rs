//! # hotmem-numa: NUMA topology and GC workers bound to their memory's node
//!
//! With few GC workers (ZGC picks 25% of the CPUs: 4 on 16) nothing puts a
//! worker on every NUMA node, so some relocate pages held by a remote node,
//! which is slow. This crate's [`WorkerPool`] fixes that the way the JDK's
//! relocation-affinity change does: work items are grouped by the node whose
//! memory they touch, each worker binds its thread to that node's CPUs for
//! the length of the phase, and gets its original binding back at the end,
//! so that outside phases the workers run anywhere.
//!
//! - [`Topology`]: the machine's nodes, detected by hwloc
//!   ([`Topology::detect`]) or from an hwloc synthetic description
//!   ([`Topology::synthetic`]) to model multi-node machines anywhere.
//! - [`heuristics`]: how many workers (25% / 60% of the CPUs, never fewer
//!   than nodes when binding) and [`AffinityPolicy`].
//! - [`WorkerPool`]: named threads running [`PhaseWork`] with per-node
//!   crossbeam queues; [`PhaseStats`] say how local the phase was.
//! - [`kernel`]: what the kernel says (the node of each page, the CPU and
//!   node a thread runs on, its mask, a mapping's policy), asked with raw
//!   system calls, for checks that do not trust hwloc or our bookkeeping.
//! - Node-local memory: [`Topology::bind_memory`] binds a
//!   [`hotmem_os::MemRange`] to a node; [`Topology::memory_location`] says
//!   where a range's pages are.
//!
//! ```
//! use hotmem_numa::{AffinityPolicy, BindingKind, NodeId, PhaseWork, PoolConfig, Topology, WorkerPool};
//!
//! // Two nodes of four CPUs each: a model, so it runs on any machine.
//! let topology = Topology::synthetic("pack:2 numa:1 core:4 pu:1")?;
//! let config = PoolConfig::new(3, AffinityPolicy::BindDuringPhases);
//! let mut pool = WorkerPool::new(&topology, config)?;
//!
//! // Pages to relocate, each with the node that holds it. Items may borrow.
//! let pages: Vec<u64> = (0..100).collect();
//! let mut work = PhaseWork::new(&topology);
//! for page in &pages {
//!     let node = NodeId::new((*page % 2) as usize);
//!     work.push(node, page).expect("the topology has two nodes");
//! }
//! let outcome = pool.run_phase(work, |ctx, page| {
//!     // On a bound worker, relocation reads and writes node-local memory.
//!     assert_eq!(ctx.bound_node(), Some(ctx.node()));
//!     page * 10
//! })?;
//! assert_eq!(outcome.results.iter().sum::<u64>(), 10 * pages.iter().sum::<u64>());
//! assert_eq!(outcome.stats.locality_ratio(), 1.0);
//! // A model of another machine: the bindings were recorded, not made.
//! assert_eq!(outcome.stats.binding, BindingKind::Simulated);
//! // Every worker got its original binding back.
//! assert!(outcome.stats.workers.iter().all(|w| w.restored_original()));
//! println!("{}", outcome.stats);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! On a synthetic topology bindings cannot reach the OS, so the pool records
//! what it would do ([`WorkerPool::binding_record`]) and its statistics say
//! so ([`BindingKind::Simulated`], "simulated" in the text report); on a
//! detected topology it binds for real: node masks come from hwloc once per
//! worker, the thread is bound with `sched_setaffinity` (none when its mask
//! already is the node's) and the masks are read back from the OS
//! ([`BindingKind::Real`]); masks past 1024 CPUs go through hwloc.

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod binder;
mod cpuset;
mod error;
pub mod heuristics;
pub mod kernel;
mod latch;
mod memory;
#[cfg(any(test, fuzzing))]
pub mod model;
mod node;
mod pool;
mod stats;
mod sync;
mod topology;

#[cfg(test)]
mod tests;

pub use binder::{BindingAction, BindingEvent, BindingKind};
pub use cpuset::CpuSet;
pub use error::{
    BindError, BindOp, InvalidDescription, KernelCall, KernelError, LocateError, MemoryBindError,
    MemoryUnsupported, TopologyError, UnknownNode,
};
pub use heuristics::{AffinityPolicy, WorkerKind};
pub use memory::{MemoryLocation, MemoryPolicy};
pub use node::{NodeId, NodeInfo};
pub use pool::{
    PhaseOutcome, PhasePanicked, PhaseWork, PoolConfig, PoolError, WorkerContext, WorkerPool,
};
pub use stats::{NodePhaseStats, PhaseStats, WorkerPhaseStats};
pub use topology::{MAX_SYNTHETIC_ARITY, MAX_SYNTHETIC_PUS, Topology, TopologySource};
