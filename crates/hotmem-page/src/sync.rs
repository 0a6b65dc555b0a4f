//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): everything that can race,
//! the shared-page slots, page bump pointers, the installation lock and the
//! statistics counters, and the `Arc`s pages are shared through, so that the
//! loom models check the real code rather than a copy of it.
//!
//! Unmodelled, in every build: `CounterU64`, the process-wide source of heap
//! identities. It takes part in no racing protocol (a plain counter, read
//! once per heap), and it is a `static`, which loom's atomics cannot be.

pub(crate) use hotmem_sync::unmodelled::AtomicU64 as CounterU64;
pub(crate) use hotmem_sync::{
    Arc, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, CachePadded, Mutex, MutexGuard, Ordering,
};
