//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): nothing.
//!
//! Unmodelled, in every build: the only lock here is a
//! [`Reservation`](crate::Reservation)'s operation lock, which is held across
//! a system call (`mmap`) and the observer's notification, and a loom model
//! cannot run system calls. Other crates' loom models create reservations
//! outside `loom::model`, which loom's types would refuse. The order it
//! gives is checked against the kernel by the tests instead
//! (`hotmem-nmt/tests/kernel_agrees.rs`). `Arc` is std's because it is
//! public: [`Memory::with_observer`](crate::Memory::with_observer) takes one.

pub(crate) use hotmem_sync::unmodelled::{Arc, Mutex, MutexGuard};
