//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): the space's own lock
//! (`lock.rs`, built from `AtomicBool`, `UnsafeCell`, `hint` and `thread`)
//! and the `Arc` that arenas share their space through, so that the loom
//! models (in `src/tests/loom_*.rs`) explore every interleaving of the code
//! that really runs.
//!
//! Unmodelled, in every build, because no interleaving of theirs is worth
//! modelling: `CounterU32` (the per-chunk used-bytes statistics, written
//! without the space lock and read under it; nothing is ordered by them, and
//! they live in memory committed through hotmem-os, where a plain `u32`
//! layout is required), `CounterUsize` / `CounterU64` (a side table's
//! published length, always written under the space lock; space identities;
//! the arena cache's round-robin shard numbers) and `LeafMutex` (taken only
//! while the space lock is held, so it never blocks).

pub(crate) use hotmem_sync::unmodelled::{
    AtomicU32 as CounterU32, AtomicU64 as CounterU64, AtomicUsize as CounterUsize,
    Mutex as LeafMutex,
};
pub(crate) use hotmem_sync::{Arc, AtomicBool, MutPtr, Ordering, UnsafeCell, hint, thread};
