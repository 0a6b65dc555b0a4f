//! [`World`]: what the suite's threads share (the runtime, pools of
//! handles, weak handles and ephemerons, each entry with the id of the
//! object it must name) and the model's checks.

use super::binding::Hostile;
use hotmem::objects::{RootTable, SimpleObjects};
use hotmem::{Ephemeron, GcError, Handle, ObjectReference, Runtime, WeakHandle, WeakSet};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Entries a pool keeps (the oldest go first).
const POOL: usize = 1024;

/// A pool of shared entries, each with what it must name.
pub(super) struct Pool<T> {
    entries: Mutex<Vec<T>>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool {
            entries: Mutex::new(Vec::new()),
        }
    }
}

impl<T> Pool<T> {
    pub(super) fn push(&self, t: T) {
        let mut e = self.entries.lock();
        e.push(t);
        if e.len() > POOL {
            e.drain(..POOL / 2);
        }
    }

    /// Runs `f` on entry `i` (modulo the size), if any.
    pub(super) fn with<R>(&self, i: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut e = self.entries.lock();
        let n = e.len();
        (n > 0).then(|| f(&mut e[i % n]))
    }

    /// Removes entry `i` (modulo the size), if any.
    pub(super) fn take(&self, i: usize) -> Option<T> {
        let mut e = self.entries.lock();
        let n = e.len();
        (n > 0).then(|| e.swap_remove(i % n))
    }

    pub(super) fn lock(&self) -> parking_lot::MutexGuard<'_, Vec<T>> {
        self.entries.lock()
    }
}

/// What the threads share.
pub(super) struct World {
    pub(super) rt: Runtime,
    pub(super) binding: Arc<Hostile>,
    pub(super) objects: Arc<SimpleObjects>,
    /// Strong handles and their objects' ids.
    pub(super) strong: Pool<(Handle, u64)>,
    /// Weak handles and their objects' ids.
    pub(super) weak: Pool<(WeakHandle, u64)>,
    /// Ephemerons and their key's and value's ids.
    pub(super) ephemerons: Pool<(Ephemeron, u64, u64)>,
    /// A weak set every thread uses: the mutators intern pooled objects
    /// under `id % STRING_HASHES` and find them by id; the outsiders look
    /// pooled handles' objects up by address.
    pub(super) strings: WeakSet,
    /// A root table every thread reads (the outsiders too, which forward
    /// its entries after a Pause Relocate Start as a mutator does), and
    /// its entries' ids; the ids' lock is taken around every change of
    /// the table, so both change together.
    pub(super) shared: Arc<RootTable>,
    pub(super) shared_ids: parking_lot::Mutex<Vec<u64>>,
    /// Ids for new objects, shared by the mutators.
    pub(super) ids: AtomicU64,
    /// Collections that returned each outcome.
    pub(super) collections_ok: AtomicU64,
    pub(super) collections_failed: AtomicU64,
    /// A collection reported that the runtime is poisoned.
    pub(super) poisoned: AtomicBool,
    /// Checks at a safepoint that ran.
    pub(super) checks: AtomicU64,
}

impl World {
    pub(super) fn new(rt: Runtime, binding: Arc<Hostile>) -> World {
        let objects_table = binding.objects.root_table();
        let strings = rt.weak_set();
        World {
            objects: binding.objects.clone(),
            rt,
            binding,
            strong: Pool::default(),
            weak: Pool::default(),
            ephemerons: Pool::default(),
            strings,
            shared: objects_table,
            shared_ids: parking_lot::Mutex::new(Vec::new()),
            ids: AtomicU64::new(1),
            collections_ok: AtomicU64::new(0),
            collections_failed: AtomicU64::new(0),
            poisoned: AtomicBool::new(false),
            checks: AtomicU64::new(0),
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether a collection's outcome is one the contract allows: success;
    /// the planted panic (once it went off), as the collection's error;
    /// the poison that may follow it. Anything else (an invalid
    /// reference, an inconsistent binding, overlapping objects) means the
    /// heap was corrupted.
    pub(super) fn collected<T>(&self, r: Result<T, GcError>) -> Result<(), String> {
        match r {
            Ok(_) => {
                self.collections_ok.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.collections_failed.fetch_add(1, Ordering::Relaxed);
                match e {
                    GcError::ObjectModelPanicked(_) | GcError::WorkerPanicked(_)
                        if self.binding.fired() =>
                    {
                        Ok(())
                    }
                    GcError::Poisoned { .. } if self.binding.fired() => {
                        self.poisoned.store(true, Ordering::Relaxed);
                        Ok(())
                    }
                    e => Err(format!("a collection failed: {e}")),
                }
            }
        }
    }

    /// At a safepoint: every strong handle, every uncleared weak handle
    /// and ephemeron names an intact object with the id recorded for it,
    /// and the graph they reach is intact.
    pub(super) fn check_at_safepoint(&self) -> Result<(), String> {
        let rt = &self.rt;
        let result = rt.run_at_safepoint("hostile check", || {
            let mut roots = Vec::new();
            for (h, id) in self.strong.lock().iter() {
                check(rt, h.get(), *id, "handle")?;
                roots.push(h.get());
            }
            for (w, id) in self.weak.lock().iter() {
                if let Some(r) = w.get() {
                    check(rt, r, *id, "weak handle")?;
                }
            }
            let ids = self.shared_ids.lock();
            for (i, id) in ids.iter().enumerate() {
                let r = self.shared.get(i).ok_or("a shared table entry is empty")?;
                check(rt, r, *id, "shared root table entry")?;
                roots.push(r);
            }
            drop(ids);
            for (e, k, v) in self.ephemerons.lock().iter() {
                if let Some((kr, vr)) = e.get() {
                    check(rt, kr, *k, "ephemeron key")?;
                    check(rt, vr, *v, "ephemeron value")?;
                }
            }
            // SAFETY: at a safepoint (no collection runs), from live roots.
            unsafe { SimpleObjects::verify_from_at_safepoint(rt, roots) }
                .map(|_| ())
                .map_err(|c| format!("the graph from the handles: {c}"))
        });
        self.checks.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok(r) => r,
            Err(e) => Err(format!("no safepoint for the check: {e}")),
        }
    }
}

/// At a safepoint of `rt`: `r` names an intact object with id `id`.
pub(super) fn check(rt: &Runtime, r: ObjectReference, id: u64, what: &str) -> Result<(), String> {
    let r = rt.forwarded(r);
    if !rt.heap().reserved().contains(r.to_address()) {
        return Err(format!("{what} names {r}, outside the heap"));
    }
    // SAFETY: at a safepoint; `r` is a root's object (a live one, unless
    // the runtime is broken, which is what this finds).
    let header = unsafe { SimpleObjects::header(r) };
    if header[1] != id {
        return Err(format!(
            "{what} names {r} with id {}, expected {id}",
            header[1]
        ));
    }
    // SAFETY: as above.
    unsafe { SimpleObjects::check(r) }.map_err(|c| format!("{what}: {c}"))
}
