//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): the tracker's mutex, normally
//! parking_lot's (no poisoning, no allocation when uncontended, which the
//! allocation-free summary report relies on). The tracker is one lock
//! around its tree: every operation is a critical section, so there is no
//! lock-free protocol for a loom model to check, and there is none.
//!
//! Unmodelled, in every build: `OnceLock` (the append-only custom tag
//! names). loom has no counterpart, and a name is written once, before its
//! tag is handed out, under the registry's mutex.

pub(crate) use hotmem_sync::unmodelled::OnceLock;
pub(crate) use hotmem_sync::{Mutex, MutexGuard};
