//! Finalization: objects registered with the runtime are, once
//! unreachable, kept alive (with everything they reach) and queued for the
//! embedder, which runs their finalizers on a mutator.
//!
//! A concurrent cycle keeps the registry out of its pauses: neither pause
//! goes over every registered object.
//! - **Pause Mark End** looks only at the *candidates*: the registered
//!   objects that concurrent marking had not reached when it ended
//!   ([`Finalizers::candidates`]). Marks only grow, so any other
//!   registered object of then is live at the pause. An object registered
//!   since was reached by the thread that registered it (from its roots,
//!   a handle or a load, or allocated since mark start): the snapshot
//!   keeps it, it is live at the pause, and nothing is to be queued for
//!   it. An address that is no object is never marked, so it is a
//!   candidate, and is dropped there as before.
//! - **Pause Relocate Start** forwards nothing itself. When the relocation
//!   set is chosen, the registered objects in it are noted
//!   ([`Finalizers::note_relocation_set`]) and registrations are logged
//!   from then on; the pause adds the logged ones in the set and puts the
//!   registry in forwarding ([`Finalizers::begin_forwarding`]); after the
//!   pause the GC thread forwards those entries, relocating their objects
//!   if nobody has ([`Finalizers::finish_forwarding`]). A registration
//!   meanwhile forwards them first, so that an object registered at its
//!   old address is found at its new one (`AlreadyRegistered`).
//!
//! The stop-the-world collector looks at every registered object in its
//! pause ([`FinalizerStart::All`], [`Finalizers::update_registered`]).

use crate::error::FinalizerError;
use crate::roots::table_gc::RootForwarder;
use crate::sync::Mutex;
use crate::vm::ObjectReference;
use std::collections::HashSet;
use std::sync::Arc;

/// Which registered objects a collection's Pause Mark End looks at.
pub(crate) enum FinalizerStart {
    /// Every one (a stop-the-world collection, or a concurrent cycle whose
    /// marking did not note candidates).
    All,
    /// Those concurrent marking had not reached when it ended
    /// ([`Finalizers::candidates`]).
    Candidates(Vec<ObjectReference>),
}

/// The registered objects and the queue of those found unreachable.
#[derive(Default)]
pub(crate) struct Finalizers {
    registry: Mutex<Registry>,
    /// Found unreachable, waiting for a mutator to take them: strong roots
    /// until then.
    queue: Mutex<Vec<ObjectReference>>,
}

/// The registered objects, with a concurrent cycle's state.
#[derive(Default)]
struct Registry {
    /// Registered, not yet found unreachable: at their current addresses,
    /// but for the stale entries.
    objects: HashSet<ObjectReference>,
    /// Registrations since a concurrent cycle noted the registered objects
    /// of its relocation set, until its Pause Relocate Start.
    log: Option<Vec<ObjectReference>>,
    /// Entries at their old addresses, from Pause Relocate Start until
    /// they are forwarded.
    stale: Option<Stale>,
}

/// Entries of the registry in a relocation set, and the forwarder of the
/// cycle that installed it.
struct Stale {
    entries: Vec<ObjectReference>,
    to: Arc<dyn RootForwarder>,
}

impl Registry {
    /// Forwards the stale entries, if any.
    fn forward_stale(&mut self) {
        let Some(stale) = self.stale.take() else {
            return;
        };
        for r in stale.entries {
            let to = stale.to.forward(r);
            if to != r && self.objects.remove(&r) {
                self.objects.insert(to);
            }
        }
    }
}

impl Finalizers {
    /// Registers `obj` (checked to lie in the heap by the caller).
    pub(crate) fn register(&self, obj: ObjectReference) -> Result<(), FinalizerError> {
        let mut registry = self.registry.lock();
        // An entry at an old address would not be found by the new one.
        registry.forward_stale();
        if !registry.objects.insert(obj) {
            return Err(FinalizerError::AlreadyRegistered(obj));
        }
        if let Some(log) = &mut registry.log {
            log.push(obj);
        }
        Ok(())
    }

    /// Registered objects waiting to be found unreachable.
    pub(crate) fn registered_count(&self) -> usize {
        self.registry.lock().objects.len()
    }

    /// Takes every queued object (their finalizers are the caller's to run).
    pub(crate) fn take_queue(&self) -> Vec<ObjectReference> {
        std::mem::take(&mut *self.queue.lock())
    }

    /// Calls `f` on every queued object, which it may rewrite (the queue is
    /// a root: marked from, updated when objects move).
    pub(crate) fn for_each_queued(&self, mut f: impl FnMut(&mut ObjectReference)) {
        self.queue.lock().iter_mut().for_each(&mut f);
    }

    /// At the end of a concurrent marking, while the mutators run: the
    /// registered objects `is_live` does not find live yet, for Pause Mark
    /// End to look at (see the module docs). The registry is locked only
    /// to copy it.
    pub(crate) fn candidates(&self, is_live: impl Fn(ObjectReference) -> bool) -> FinalizerStart {
        // A log left by a cycle that failed before its pause goes.
        FinalizerStart::Candidates(self.registered_where(None, |r| !is_live(r)))
    }

    /// The registered objects `keep` says, `log` the registrations' log
    /// from now on; the registry is locked only to copy it.
    fn registered_where(
        &self,
        log: Option<Vec<ObjectReference>>,
        keep: impl Fn(ObjectReference) -> bool,
    ) -> Vec<ObjectReference> {
        let mut all: Vec<ObjectReference> = {
            let mut registry = self.registry.lock();
            registry.log = log;
            registry.objects.iter().copied().collect()
        };
        all.retain(|&r| keep(r));
        all
    }

    /// At a safepoint, after marking: moves every registered object of
    /// `start` that `is_live` says is dead to the queue and calls `retain`
    /// on it (the caller keeps it and what it reaches alive); drops a
    /// registered address that `is_object` says is not an object (free
    /// heap memory: it cannot be finalized). Returns (registered, queued).
    pub(crate) fn queue_dead(
        &self,
        start: &FinalizerStart,
        is_live: impl Fn(ObjectReference) -> bool,
        is_object: impl Fn(ObjectReference) -> bool,
        mut retain: impl FnMut(ObjectReference),
    ) -> (u64, u64) {
        let mut registry = self.registry.lock();
        let objects = &mut registry.objects;
        let found = objects.len() as u64;
        let dead: Vec<ObjectReference> = match start {
            FinalizerStart::All => {
                objects.retain(|&r| is_object(r));
                objects.iter().copied().filter(|&r| !is_live(r)).collect()
            }
            FinalizerStart::Candidates(candidates) => {
                let mut dead = Vec::new();
                for &r in candidates {
                    if !objects.contains(&r) {
                        continue;
                    }
                    if !is_object(r) {
                        objects.remove(&r);
                    } else if !is_live(r) {
                        dead.push(r);
                    }
                }
                dead
            }
        };
        for r in &dead {
            objects.remove(r);
            retain(*r);
        }
        let queued = dead.len() as u64;
        drop(registry);
        self.queue.lock().extend(dead);
        (found, queued)
    }

    /// Whether [`Finalizers::queue_dead`] would queue anything now (a
    /// registered object of `start` that is an object and dead): whether
    /// finalization will keep objects alive in this collection.
    pub(crate) fn any_to_queue(
        &self,
        start: &FinalizerStart,
        is_live: impl Fn(ObjectReference) -> bool,
        is_object: impl Fn(ObjectReference) -> bool,
    ) -> bool {
        let registry = self.registry.lock();
        let dead = |r: &ObjectReference| is_object(*r) && !is_live(*r);
        match start {
            FinalizerStart::All => registry.objects.iter().any(dead),
            FinalizerStart::Candidates(candidates) => candidates
                .iter()
                .filter(|r| registry.objects.contains(r))
                .any(dead),
        }
    }

    /// Once a concurrent cycle chose its relocation set, while the
    /// mutators run: the registered objects `in_set` says lie in it.
    /// Registrations are logged from now until
    /// [`Finalizers::begin_forwarding`]. The registry is locked only to
    /// copy it.
    pub(crate) fn note_relocation_set(
        &self,
        in_set: impl Fn(ObjectReference) -> bool,
    ) -> Vec<ObjectReference> {
        self.registered_where(Some(Vec::new()), in_set)
    }

    /// In Pause Relocate Start: `entries` (noted by
    /// [`Finalizers::note_relocation_set`]) and the registrations logged
    /// since that `in_set` says lie in the set are stale until forwarded
    /// through `to`, after the pause
    /// ([`Finalizers::finish_forwarding`]) or by a registration first.
    /// Costs the logged registrations, not the registry.
    pub(crate) fn begin_forwarding(
        &self,
        mut entries: Vec<ObjectReference>,
        in_set: impl Fn(ObjectReference) -> bool,
        to: Arc<dyn RootForwarder>,
    ) {
        let mut registry = self.registry.lock();
        if let Some(log) = registry.log.take() {
            entries.extend(log.into_iter().filter(|&r| in_set(r)));
        }
        registry.stale = Some(Stale { entries, to });
    }

    /// After Pause Relocate Start, before the cycle that began forwarding
    /// returns: forwards the stale entries (their objects relocated if
    /// nobody has), unless a registration did. Drops the forwarder.
    pub(crate) fn finish_forwarding(&self) {
        self.registry.lock().forward_stale();
    }

    /// Rewrites every registered object's address (`f` gives the new one).
    /// At a safepoint, after relocation.
    pub(crate) fn update_registered(&self, f: impl Fn(ObjectReference) -> ObjectReference) {
        let mut registry = self.registry.lock();
        registry.forward_stale();
        registry.log = None;
        let moved: HashSet<ObjectReference> = registry.objects.iter().map(|&r| f(r)).collect();
        registry.objects = moved;
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use hotmem_os::Address;

    fn r(a: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(a)).expect("aligned, not null")
    }

    /// Forwards 0x1000 to 0x9000, and nothing else.
    struct Moved;

    impl RootForwarder for Moved {
        fn forward(&self, obj: ObjectReference) -> ObjectReference {
            if obj == r(0x1000) { r(0x9000) } else { obj }
        }
    }

    fn registered(f: &Finalizers) -> Vec<usize> {
        let mut v: Vec<usize> = f.registry.lock().objects.iter().map(|r| r.get()).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn pause_mark_end_looks_only_at_the_candidates_and_queues_the_dead_ones() {
        let f = Finalizers::default();
        for a in [0x1000, 0x2000, 0x3000] {
            f.register(r(a)).unwrap();
        }
        // Marking reached 0x1000 only; 0x3000 is no object (dropped).
        let start = f.candidates(|x| x == r(0x1000));
        let FinalizerStart::Candidates(c) = &start else {
            panic!("candidates")
        };
        assert_eq!(c.len(), 2);
        // Registered since: reached by its registering thread, not looked
        // at even though this verdict calls it dead.
        f.register(r(0x4000)).unwrap();
        let live = |x: ObjectReference| x == r(0x1000);
        let object = |x: ObjectReference| x != r(0x3000);
        assert!(f.any_to_queue(&start, live, object));
        let mut retained = Vec::new();
        let (found, queued) = f.queue_dead(&start, live, object, |x| retained.push(x));
        assert_eq!((found, queued), (4, 1));
        assert_eq!(retained, vec![r(0x2000)]);
        assert_eq!(f.take_queue(), vec![r(0x2000)]);
        assert_eq!(registered(&f), vec![0x1000, 0x4000]);
        // Nothing left among the candidates.
        assert!(!f.any_to_queue(&start, live, object));
    }

    #[test]
    fn the_relocation_sets_entries_and_those_registered_since_follow_their_objects() {
        let f = Finalizers::default();
        f.register(r(0x1000)).unwrap();
        f.register(r(0x2000)).unwrap();
        let in_set = |x: ObjectReference| x == r(0x1000);
        let noted = f.note_relocation_set(in_set);
        assert_eq!(noted, vec![r(0x1000)]);
        // Registered between the choice of the set and the pause: logged.
        f.register(r(0x3000)).unwrap();
        f.begin_forwarding(noted, in_set, Arc::new(Moved));
        // A registration of the new address finds the forwarded entry.
        assert_eq!(
            f.register(r(0x9000)),
            Err(FinalizerError::AlreadyRegistered(r(0x9000)))
        );
        assert_eq!(registered(&f), vec![0x2000, 0x3000, 0x9000]);
        f.finish_forwarding();
        assert_eq!(registered(&f), vec![0x2000, 0x3000, 0x9000]);
        assert!(f.registry.lock().log.is_none());
    }

    #[test]
    fn the_gc_thread_forwards_the_stale_entries_when_nobody_registers() {
        let f = Finalizers::default();
        f.register(r(0x1000)).unwrap();
        let in_set = |x: ObjectReference| x == r(0x1000);
        let noted = f.note_relocation_set(in_set);
        f.begin_forwarding(noted, in_set, Arc::new(Moved));
        assert_eq!(registered(&f), vec![0x1000], "stale until forwarded");
        f.finish_forwarding();
        assert_eq!(registered(&f), vec![0x9000]);
        assert!(
            f.registry.lock().stale.is_none(),
            "the forwarder is dropped"
        );
    }
}
