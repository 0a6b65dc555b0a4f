//! # hotmem-safepoint: stop-the-world safepoints and per-thread handshakes
//!
//! A managed runtime sometimes needs every mutator thread stopped at a known
//! point (a *safepoint*) so that a GC phase can walk stacks and move
//! objects, and sometimes needs one thread, or each thread in turn, to run a
//! small operation at such a point without stopping the others (a
//! *handshake*). This crate provides both, modelled on HotSpot's
//! `SafepointSynchronize`, `WaitBarrier` and `Handshake`:
//!
//! * every mutator thread polls its own poll word: one load and one branch
//!   ([`MutatorHandle::poll`]);
//! * threads mark native and blocking regions ([`MutatorHandle::enter_native`]),
//!   during which safepoints do not wait for them;
//! * [`Coordinator::begin`] arms every poll word with the new safepoint id
//!   and sleeps until the last thread to stop wakes it; stopped threads sleep
//!   on a futex keyed by the id, and the end of the safepoint wakes them all
//!   with one system call;
//! * [`Coordinator::handshake`] runs a closure for one thread at its next
//!   poll, or on the requesting thread if the target is in a safe state,
//!   exactly once either way;
//! * every safepoint is timed (reaching, at, leaving, total), kept in
//!   histograms ([`Coordinator::stats`]) and printable as an
//!   `-Xlog:safepoint` line ([`SafepointRecord`]'s `Display`);
//! * the old mechanism ([`Strategy::Legacy`]: JDK 11's spin, yield and 1 ms
//!   sleep back-off) sits behind the same API for comparison.
//!
//! ```
//! use hotmem_safepoint::{Coordinator, Strategy};
//! use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! let coordinator = Coordinator::new(Strategy::WaitBarrier);
//! let stop = Arc::new(AtomicBool::new(false));
//! let work = Arc::new(AtomicU64::new(0));
//! let mutator = {
//!     let (coordinator, stop, work) = (coordinator.clone(), stop.clone(), work.clone());
//!     std::thread::spawn(move || {
//!         let mut me = coordinator.register().unwrap();
//!         while !stop.load(Ordering::Relaxed) {
//!             work.fetch_add(1, Ordering::Relaxed); // managed code...
//!             me.poll(); // ...with a poll on the loop's back-edge
//!             let native = me.enter_native(); // a safepoint need not wait for this
//!             drop(native);
//!         }
//!     })
//! };
//!
//! while coordinator.registered() == 0 {
//!     std::thread::yield_now();
//! }
//! let guard = coordinator.begin("example")?;
//! // Every registered thread is stopped or in native code: it cannot
//! // touch `work` until the guard is gone.
//! let before = work.load(Ordering::Relaxed);
//! assert_eq!(work.load(Ordering::Relaxed), before);
//! guard.end();
//!
//! stop.store(true, Ordering::Relaxed);
//! mutator.join().unwrap();
//! let stats = coordinator.stats();
//! assert_eq!(stats.count, 1);
//! // Safepoint "example", Time since last: 0 ns, Reaching safepoint: ... ns, ...
//! println!("{}", stats.last.as_ref().unwrap());
//! println!("{stats}"); // p50/p90/p99/max of reaching, at, leaving, total
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Rules for the embedder
//! * Poll often in managed code: a safepoint waits for the slowest thread to
//!   reach a poll (time to safepoint).
//! * Never block in managed code without a safe region around the blocking
//!   call: the safepoint would wait for it.
//! * A mutator thread begins safepoints through [`MutatorHandle::safepoint`]
//!   or [`SafeRegion::safepoint`], which keep it in a safe state until the
//!   safepoint ends, and requests handshakes through
//!   [`MutatorHandle::handshake`]; [`Coordinator::begin`] from a registered
//!   thread is an error, not a hang.
//! * Only the owner ends a safepoint: the guard or the ticket that `begin`
//!   returned, on the thread that began it. An id is not a capability.
//! * Every call that would wait for something only the caller can release
//!   (a nested begin, a handshake or registration by the safepoint's owner,
//!   a safepoint or handshake or registration from inside a handshake
//!   operation) returns a typed error instead.
//!
//! ## Several coordinators
//! A thread may be registered with several coordinators (two runtimes in
//! one process). While it waits inside one of them (in a `begin`, a
//! handshake, or stopped in a safepoint) it polls none of the others, whose
//! safepoints then wait for it if it runs managed code there. The cycles
//! this closes for certain are typed errors, returned before anything
//! changes:
//! * a `begin` or a handshake from a thread that runs managed code on
//!   another coordinator ([`BeginError::ManagedElsewhere`],
//!   [`HandshakeError::ManagedElsewhere`]): two mutators of A and B, one
//!   beginning on A while the other begins on B, would wait for each other
//!   forever. Enter a safe region on the other coordinator first;
//! * a `begin` whose threads include one that runs managed code here and
//!   is stopped in a safepoint the caller owns on another coordinator
//!   ([`BeginError::StoppedInCallersSafepoint`]): stopping two worlds in
//!   turn, with a thread registered with both.
//!
//! Two cycles stay the embedder's to avoid, because the wait that closes
//! them is a poll or the end of a safe region, which cannot fail, and
//! whether it closes one depends on timing: a thread in a safe region of A
//! and in managed code on B that leaves the region (and stops in A's
//! safepoint) while the owner of A's safepoint waits for it in B's
//! `begin`; and two owners, of safepoints on A and on B, each beginning on
//! (or leaving a safe region of) the other, like two locks taken in
//! opposite orders. Keep a thread that is registered with several
//! coordinators in managed code on one at a time, and stop several worlds
//! in one order.
//!
//! Linux only: it parks threads with the futex system call.

#![forbid(unsafe_code)]

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod backoff;
mod barrier;
mod coordinator;
mod elsewhere;
mod error;
mod guard;
mod handshake;
mod histogram;
mod ids;
mod leaving;
mod legacy;
mod mutator;
mod operation;
mod options;
mod pending;
mod poll;
mod protocol;
mod records;
mod registry;
mod state;
mod stats;
mod sync;

#[cfg(all(test, hotmem_loom))]
mod tests;

pub use coordinator::{Coordinator, CoordinatorBuilder};
pub use error::{BeginError, EndError, HandshakeError, RegisterError};
pub use guard::{SafepointGuard, SafepointTicket};
pub use handshake::{Executor, HandshakeContext, HandshakeReport};
pub use histogram::{Histogram, Percentiles};
pub use ids::{MutatorId, SafepointId};
pub use mutator::{MutatorHandle, MutatorSafepoint, SafeRegion};
pub use options::{SafepointLog, Strategy};
pub use state::ThreadState;
pub use stats::{LeaveEnd, SafepointRecord, SafepointStats};
