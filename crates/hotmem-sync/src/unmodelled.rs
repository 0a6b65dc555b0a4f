//! Primitives that are std's (or parking_lot's) in every build, under
//! `cfg(hotmem_loom)` too.
//!
//! For what no loom model needs to see, or what a model cannot hold: a
//! counter that orders nothing (statistics, process-wide ids), a value
//! written once, a lock held across a system call, or an object that lives
//! outside `loom::model` (loom's types refuse to be used there). Each crate's
//! `sync` module says why it takes what it takes from here.
//!
//! The locks have the same signatures as [`crate::Mutex`]:
//! parking_lot's, with no poisoning.

pub use parking_lot::{Mutex, MutexGuard};
pub use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
pub use std::sync::{Arc, OnceLock};
