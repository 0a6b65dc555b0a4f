//! The one place this crate takes the synchronization primitives of its
//! racing protocols from, `hotmem-sync`'s names (CONVENTIONS §5): loom's
//! under `cfg(hotmem_loom)`, so that the loom models check the real code.
//!
//! Modelled: the words of the collection's side tables (live maps and
//! forwarding tables, where workers and mutators race to mark and to
//! relocate), the spin of a thread waiting for another's forwarding entry,
//! the table of old pages (a copy marked old before it is published), the
//! mutators' SATB logs, the handle tables (a clone racing a
//! collection's update), the pause gate (a weak upgrade racing a
//! pause) and the finalizer registry (a registration racing its
//! forwarding after a pause). The rest of the runtime's locks are
//! parking_lot's and its counters std's: they take part in no protocol a
//! model checks.

pub(crate) use hotmem_sync::hint::spin_loop;
pub(crate) use hotmem_sync::{
    Arc, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering, RwLock,
    RwLockWriteGuard,
};
