//! The one place this crate takes its synchronisation primitives from.
//!
//! std's in every build, `cfg(hotmem_loom)` included: the only lock here is a
//! [`Reservation`](crate::Reservation)'s operation lock, which is held across
//! a system call (`mmap`) and the observer's notification, and a loom model
//! cannot run system calls. Other crates' loom models create reservations
//! outside `loom::model`, which loom's types would refuse. The order it
//! gives is checked against the kernel by the tests instead
//! (`hotmem-nmt/tests/kernel_agrees.rs`).

pub(crate) use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
