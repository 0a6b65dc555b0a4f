//! # hotmem-sync: one set of synchronization names, std's or loom's
//!
//! The hotmem crates write their concurrent code against these names, each
//! through a `sync` module of its own that re-exports what it uses (their
//! CONVENTIONS §5). Normally they are std's atomics and `Arc`, parking_lot's
//! [`Mutex`], [`Condvar`] and [`RwLock`], crossbeam's [`CachePadded`] and a Linux futex
//! ([`FutexWord`]). Built with `RUSTFLAGS="--cfg hotmem_loom"` they are loom's,
//! behind the same signatures (parking_lot's for the locks: `lock` returns the
//! guard, `Condvar::wait` takes it by `&mut`), so that a loom model explores
//! the interleavings of the code that really runs.
//!
//! ```
//! use hotmem_sync::{Arc, Condvar, Mutex, thread};
//!
//! let ready = Arc::new((Mutex::new(false), Condvar::new()));
//! let setter = {
//!     let ready = Arc::clone(&ready);
//!     thread::spawn(move || {
//!         *ready.0.lock() = true;
//!         ready.1.notify_all();
//!     })
//! };
//! let mut done = ready.0.lock();
//! while !*done {
//!     ready.1.wait(&mut done);
//! }
//! drop(done);
//! setter.join().unwrap();
//! ```
//!
//! What stays std's (or parking_lot's) under loom too is in [`unmodelled`].
//!
//! The cfg has our own name because `--cfg loom` also switches crossbeam's
//! and parking_lot's internals to loom (crossbeam renamed its own to
//! `crossbeam_loom` for that reason).

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod cell;
mod futex;
mod lock;
pub mod thread;
pub mod unmodelled;

pub use cell::{MutPtr, UnsafeCell};
pub use crossbeam_utils::CachePadded;
pub use futex::FutexWord;
pub use lock::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

// The crate the modelled names come from: std normally, loom under
// `cfg(hotmem_loom)`, whose modules mirror std's.
#[cfg(not(hotmem_loom))]
use std as base;

#[cfg(hotmem_loom)]
use loom as base;

pub use base::{
    hint,
    sync::{
        Arc,
        atomic::{
            AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
        },
    },
    thread_local,
};
