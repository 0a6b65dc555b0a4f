//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): the atomics, locks, threads
//! and thread-locals of the protocol, and the futex words threads sleep on
//! (under loom a `FutexWord` is a loom mutex and condvar with the futex's
//! contract), so the protocol that loom checks is the code that runs.
//!
//! Unmodelled, in every build: `Arc`. It only keeps the coordinator's state
//! and the slots alive; every model thread holds its handles until it is
//! joined, so its counts order nothing the protocol relies on, and loom's
//! `Arc` would make every clone and drop a scheduling point of the models.
//! And `UnmodelledMutex`, the lock of a thread's list of registrations
//! (`registry.rs`'s `ThreadRecord`): only the thread itself changes the
//! list, the checks that read it only decide errors before anything
//! changes, and no model runs two coordinators. It is held across no
//! modelled operation, so a model thread never blocks on it.

pub(crate) use hotmem_sync::unmodelled::Arc;
pub(crate) use hotmem_sync::unmodelled::Mutex as UnmodelledMutex;
pub(crate) use hotmem_sync::{
    AtomicU32, AtomicU64, CachePadded, Condvar, FutexWord, Mutex, MutexGuard, Ordering, fence,
    hint, thread, thread_local,
};
