//! The public calls the suite's threads make: a mutator's (allocation,
//! moving and non-moving, links through the barriers, native regions
//! entered and leaked, shadow-stack words, pins, finalizers, weak handles
//! and ephemerons made from current references, a weak set's insertions and
//! lookups with equalities that poll, re-enter and panic, collections) and
//! an outsider's, a thread that is no mutator (clones, weak reads and
//! upgrades, weak-set lookups, drops, collections, checks at a safepoint).
//! Each op checks what the contract promises of its result right away where
//! the thread may read the heap.

use super::world::World;
use hotmem::objects::{RootTable, SimpleObjects, build};
use hotmem::{
    AllocError, BarrierKind, BarrierSet, ConcurrentBarrierSet, Handle, Mutator, ObjectReference,
    PinGuard, ShadowStack, ShadowStackError, SimpleSlot, StopTheWorldBarriers, WithBarriers,
};

/// How many of its non-moving objects a thread checks.
const FIXED_KEPT: usize = 16;

/// Words a mutator's shadow stack may grow to: it starts with a page's
/// worth, and the shadow-stack op writes at any word up to a quarter past
/// this (growing it, or refused beyond).
const STACK_WORDS: usize = 4096;

/// A small xorshift generator: each thread's ops from the case's seed.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn index(&mut self) -> usize {
        self.next() as usize
    }
}

/// A mutator thread's state between ops.
pub(super) struct MutatorThread<'w> {
    pub(super) world: &'w World,
    pub(super) me: Mutator,
    roots: std::sync::Arc<RootTable>,
    stack: ShadowStack,
    /// The id of the object in the shadow stack, and its word, if any.
    stacked: Option<(u64, usize)>,
    pins: Vec<(PinGuard, u64)>,
    /// Objects this thread allocated in the non-moving space, with the
    /// address each was allocated at (the last few): none may ever move.
    fixed: Vec<(Handle, ObjectReference)>,
    /// A native region was leaked (`mem::forget`) and not left since: the
    /// thread is still in it, by the contract, until a call that needs
    /// managed code; references it reads are not current meanwhile.
    leaked: bool,
}

impl<'w> MutatorThread<'w> {
    pub(super) fn new(world: &'w World) -> Result<MutatorThread<'w>, String> {
        let me = world.rt.attach_mutator().map_err(|e| e.to_string())?;
        let stack = me
            .new_growing_shadow_stack(STACK_WORDS)
            .map_err(|e| e.to_string())?;
        Ok(MutatorThread {
            roots: world.objects.root_table(),
            world,
            me,
            stack,
            stacked: None,
            pins: Vec::new(),
            fixed: Vec::new(),
            leaked: false,
        })
    }

    /// A strong handle's object (current: read in managed code) and id.
    fn pick(&self, rng: &mut Rng) -> Option<(ObjectReference, u64)> {
        self.world
            .strong
            .with(rng.index(), |(h, id)| (h.get(), *id))
    }

    /// One random op.
    pub(super) fn step(&mut self, rng: &mut Rng) -> Result<(), String> {
        let w = self.world;
        let op = rng.below(100);
        // After a leaked region the thread's references are stale until
        // it is in managed code again: the barriers (which leave the
        // region themselves, op 88..=91) run as they are, the rest after
        // a poll, as an embedder that leaked one must.
        if self.leaked && !(88..=91).contains(&op) {
            // Or a non-moving allocation, which must leave the region
            // itself before it touches the space (the object, never
            // initialized, is garbage at once).
            match rng.below(4) {
                0 => match self.me.alloc_non_moving(64) {
                    Ok(_) | Err(AllocError::OutOfMemory { .. } | AllocError::Collection(_)) => {}
                    Err(e) => return Err(format!("alloc_non_moving after a leaked region: {e}")),
                },
                _ => self.me.poll(),
            }
            self.leaked = false;
        }
        match op {
            0..=24 => self.alloc(rng)?,
            25..=36 => self.link(rng),
            37..=44 => self.load(rng)?,
            45..=46 => self.me.poll(),
            47 => {
                // The shared root table: an entry added, replaced or
                // removed (with its id, under the ids' lock).
                let mut ids = w.shared_ids.lock();
                match (rng.below(3), self.pick(rng)) {
                    (0, Some((obj, id))) => {
                        w.shared.push(Some(obj));
                        ids.push(id);
                    }
                    (1, Some((obj, id))) if !ids.is_empty() => {
                        let i = rng.index() % ids.len();
                        w.shared.set(i, Some(obj));
                        ids[i] = id;
                    }
                    _ if !ids.is_empty() => {
                        let i = rng.index() % ids.len();
                        let r = w.shared.swap_remove(i).ok_or("an empty shared entry")?;
                        check_now(r, ids.swap_remove(i), "removed shared entry")?;
                    }
                    _ => {}
                }
            }
            48..=50 => {
                let r = if rng.below(3) == 0 {
                    self.me.collect_young()
                } else {
                    self.me.collect()
                };
                w.collected(r)?;
            }
            51..=53 => drop(self.me.enter_native()),
            54..=56 => {
                std::mem::forget(self.me.enter_native());
                self.leaked = true;
            }
            57..=61 => self.shadow_stack(rng)?,
            62..=64 => self.pin(rng)?,
            65..=67 => {
                for h in self.me.take_finalizable() {
                    // SAFETY: in a handle, read now (managed code).
                    let header = unsafe { SimpleObjects::header(h.get()) };
                    // SAFETY: as above.
                    unsafe { SimpleObjects::check(h.get()) }.map_err(|c| c.to_string())?;
                    w.strong.push((h, header[1]));
                }
            }
            68..=70 => {
                if let Some((obj, _)) = self.pick(rng) {
                    let _ = w.rt.register_finalizer(obj);
                }
            }
            71..=75 => {
                if let Some((obj, id)) = self.pick(rng) {
                    w.weak.push((w.rt.weak_handle(obj), id));
                }
            }
            76..=78 => {
                if let (Some((k, kid)), Some((v, vid))) = (self.pick(rng), self.pick(rng)) {
                    w.ephemerons.push((w.rt.ephemeron(k, v), kid, vid));
                }
            }
            79..=83 => {
                // Handle::set with a current reference: the pool's lock
                // makes the handle and its recorded id change together.
                let (i, j) = (rng.index(), rng.index());
                let target = w.strong.with(j, |(h, id)| (h.get(), *id));
                if let Some((obj, id)) = target {
                    w.strong.with(i, |(h, hid)| {
                        h.set(obj);
                        *hid = id;
                    });
                }
            }
            84..=87 => drop(w.strong.take(rng.index())),
            88..=91 => {
                // The load barrier on made-up addresses around a pooled
                // object (stale too, after a leaked region): it takes any
                // value, and leaves a leaked region before it reads the
                // collector's state.
                if let Some((obj, _)) = self.pick(rng) {
                    let off = (rng.below(64) as usize) * 8;
                    for a in [obj.get() + off, obj.get().wrapping_sub(off)] {
                        // The raw-address test takes any value, even one
                        // no `ObjectReference` could hold.
                        let _ = self.me.may_be_stale(a);
                        let _ = self.me.may_be_stale(a | 1);
                        if let Some(r) = ObjectReference::from_address(hotmem::Address::new(a)) {
                            let _ = self.me.resolve(r);
                            // Any address, while pages of the space are
                            // allocated and freed by other threads.
                            let _ = w.rt.is_non_moving(r);
                            let mut word = a;
                            // SAFETY: a word of this frame, used only here.
                            let _ = self.me.load_ref(unsafe { SimpleSlot::from_ref(&mut word) });
                            // The same through the runtime's barrier set,
                            // and the other set refused.
                            w.rt.with_barriers(Probe {
                                me: &self.me,
                                r,
                                word: a,
                            });
                            let wrong = match w.rt.barrier_kind() {
                                BarrierKind::StopTheWorld => {
                                    w.rt.barrier_set::<ConcurrentBarrierSet>().is_ok()
                                }
                                _ => w.rt.barrier_set::<StopTheWorldBarriers>().is_ok(),
                            };
                            if wrong {
                                return Err("the runtime handed out the other barrier set".into());
                            }
                        }
                    }
                }
            }
            96..=99 => self.strings(rng)?,
            _ => {
                let up = w.weak.with(rng.index(), |(wk, id)| (wk.upgrade(), *id));
                if let Some((h, id)) = up
                    && let Some(h) = h.map_err(|e| e.to_string())?
                {
                    check_now(h.get(), id, "upgraded")?;
                    w.strong.push((h, id));
                }
            }
        }
        Ok(())
    }

    /// The shared weak set: a pooled object interned under its id, or
    /// looked up by id with an equality that reads the candidates' headers
    /// (the set hands out only live, current objects), and sometimes polls,
    /// re-enters the set or panics.
    fn strings(&mut self, rng: &mut Rng) -> Result<(), String> {
        let w = self.world;
        let Some((obj, id)) = self.pick(rng) else {
            return Ok(());
        };
        let hash = id % STRING_HASHES;
        if rng.below(2) == 0 {
            return w
                .strings
                .insert(&self.me, hash, obj)
                .map_err(|e| e.to_string());
        }
        let me = &self.me;
        let quirk = rng.below(8);
        let look = || {
            w.strings.find(me, hash, |o| {
                // SAFETY: a candidate the set handed out, in managed code:
                // a live object at its current address.
                let same = unsafe { SimpleObjects::header(o)[1] } == id;
                match quirk {
                    0 => me.poll(),
                    1 => {
                        let _ = w.strings.find(me, (hash + 1) % STRING_HASHES, |_| false);
                    }
                    2 => {
                        let _ = w.strings.insert(me, hash, o);
                    }
                    3 if same => panic!("the embedder's equality panics"),
                    _ => {}
                }
                same
            })
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(look)) {
            Ok(found) => {
                if let Some(o) = found.map_err(|e| e.to_string())? {
                    check_now(o, id, "weak-set entry")?;
                    w.strong.push((self.me.handle(o), id));
                }
            }
            Err(_) if quirk == 3 => {}
            Err(p) => std::panic::resume_unwind(p),
        }
        Ok(())
    }

    fn alloc(&mut self, rng: &mut Rng) -> Result<(), String> {
        let w = self.world;
        let slots = rng.below(4) as usize;
        let payload = rng.below(24) as usize;
        // Garbage around it, so that its page is worth evacuating and the
        // pooled objects keep moving.
        for _ in 0..rng.below(12) {
            let garbage = build::object(&mut self.me, &self.roots, 0, payload, 0);
            if garbage.is_err() {
                break;
            }
        }
        self.roots.clear();
        for (h, at) in &self.fixed {
            if h.get() != *at {
                return Err(format!(
                    "a non-moving object moved: {at:?} -> {:?}",
                    h.get()
                ));
            }
        }
        let id = w.next_id();
        // One in four in the non-moving space: pooled and linked as the
        // others, and checked above never to move.
        let non_moving = rng.below(4) == 0;
        // Now and then a non-moving object too large for a small page
        // (about 300 KiB): it takes a page of its own.
        let payload = match non_moving && rng.below(64) == 0 {
            true => 38_000,
            false => payload,
        };
        let made = match non_moving {
            true => build::non_moving_object(&mut self.me, &self.roots, slots, payload, id),
            false => build::object(&mut self.me, &self.roots, slots, payload, id),
        };
        match made {
            Ok(obj) => {
                let h = self.me.handle(obj);
                if non_moving {
                    if self.fixed.len() == FIXED_KEPT {
                        self.fixed.remove(0);
                    }
                    self.fixed.push((self.me.handle(obj), obj));
                }
                self.roots.clear();
                w.strong.push((h, id));
                Ok(())
            }
            Err(hotmem::objects::GraphError::Alloc(
                AllocError::OutOfMemory { .. } | AllocError::Collection(_),
            )) => Ok(()),
            Err(e) => Err(format!("alloc: {e}")),
        }
    }

    /// Links one pooled object's slot to another's object, or clears it
    /// (through the store barrier).
    fn link(&mut self, rng: &mut Rng) {
        let Some((from, _)) = self.pick(rng) else {
            return;
        };
        let to = if rng.below(4) == 0 {
            None
        } else {
            self.pick(rng).map(|(o, _)| o)
        };
        // SAFETY: both are handles' objects read in managed code, with no
        // call that may collect since.
        let n = unsafe { SimpleObjects::header(from)[2] } as usize;
        if n > 0 {
            let i = rng.below(n as u64) as usize;
            // SAFETY: as above; `i` is a slot of `from`.
            unsafe { SimpleObjects::set_slot(&self.me, from, i, to) };
        }
    }

    /// Loads a slot through the load barrier: what it returns is an
    /// intact object.
    fn load(&mut self, rng: &mut Rng) -> Result<(), String> {
        let Some((from, _)) = self.pick(rng) else {
            return Ok(());
        };
        // SAFETY: a handle's object read in managed code.
        let n = unsafe { SimpleObjects::header(from)[2] } as usize;
        if n == 0 {
            return Ok(());
        }
        let i = rng.below(n as u64) as usize;
        // SAFETY: as above.
        if let Some(t) = unsafe { SimpleObjects::load_slot(&self.me, from, i) } {
            // SAFETY: reached from a live object through the barrier, now.
            unsafe { SimpleObjects::check(t) }.map_err(|c| format!("loaded: {c}"))?;
        }
        Ok(())
    }

    /// Puts a pooled object in the shadow stack at a word of its own
    /// choice, growing the stack to reach it (or refused past its
    /// reservation), or checks the one there (the collector updates the
    /// word when the object moves).
    fn shadow_stack(&mut self, rng: &mut Rng) -> Result<(), String> {
        match (self.stacked, rng.below(2)) {
            (Some((id, word)), 0) => {
                let r = self
                    .stack
                    .get_ref(word)
                    .ok_or("the stacked word is no reference")?;
                check_now(r, id, "shadow stack word")
            }
            _ => {
                let word = rng.index() % (STACK_WORDS + STACK_WORDS / 4);
                match self.stack.grow(word + 1) {
                    Ok(words) if words > word => {}
                    Ok(words) => return Err(format!("grown to {words} words for word {word}")),
                    Err(ShadowStackError::Full { .. }) if word >= STACK_WORDS => return Ok(()),
                    Err(e) => return Err(format!("grow to {}: {e}", word + 1)),
                }
                if let Some((obj, id)) = self.pick(rng) {
                    // SAFETY: the words up to `word` are within the
                    // capacity (grown above); those below it become 0 and
                    // `word` a live object's address (current) before the
                    // length covers them; this thread writes them in
                    // managed code.
                    unsafe {
                        let base = self.stack.as_ptr();
                        for w in 0..word {
                            base.add(w).write(0);
                        }
                        base.add(word).write(obj.get() as u64);
                        self.stack.set_len(word + 1);
                    }
                    self.stacked = Some((id, word));
                }
                Ok(())
            }
        }
    }

    /// Pins a pooled object, or unpins one after checking that it stayed.
    fn pin(&mut self, rng: &mut Rng) -> Result<(), String> {
        if self.pins.len() > 4 || (rng.below(2) == 0 && !self.pins.is_empty()) {
            let (pin, id) = self.pins.swap_remove(rng.index() % self.pins.len());
            return check_now(pin.object(), id, "pinned object");
        }
        if let Some((obj, id)) = self.pick(rng) {
            self.pins.push((self.me.pin(obj), id));
        }
        Ok(())
    }
}

/// `r`, read in managed code, names an intact object with id `id`.
fn check_now(r: ObjectReference, id: u64, what: &str) -> Result<(), String> {
    // SAFETY: the caller read `r` in managed code since its last call
    // that may collect: a live object.
    let header = unsafe { SimpleObjects::header(r) };
    if header[1] != id {
        return Err(format!("{what} {r} has id {}, expected {id}", header[1]));
    }
    // SAFETY: as above.
    unsafe { SimpleObjects::check(r) }.map_err(|c| format!("{what}: {c}"))
}

/// One op of a thread that is no mutator.
pub(super) fn outsider_step(w: &World, rng: &mut Rng) -> Result<(), String> {
    match rng.below(100) {
        0..=24 => {
            // A burst, so that some clones straddle another thread's
            // collection.
            let i = rng.index();
            for _ in 0..16 {
                let clone = w.strong.with(i, |(h, id)| (h.clone(), *id));
                if let Some(c) = clone {
                    w.strong.push(c);
                }
            }
        }
        25..=44 => {
            let i = rng.index();
            for _ in 0..16 {
                let up = w.weak.with(i, |(wk, id)| (wk.upgrade(), *id));
                if let Some((h, id)) = up
                    && let Some(h) = h.map_err(|e| format!("upgrade: {e}"))?
                {
                    w.strong.push((h, id));
                }
            }
        }
        45..=59 => {
            // Reads a thread that is no mutator makes (the values are not
            // current here, only the reads are exercised: they forward).
            let _ = w.shared.get(rng.index() % w.shared.len().max(1));
            if rng.below(8) == 0 {
                let _ = w.shared.roots();
            }
            let _ = w.weak.with(rng.index(), |(wk, _)| wk.get());
            let _ = w.ephemerons.with(rng.index(), |(e, _, _)| e.get());
            let _ = w.rt.heap_target();
            // The non-moving space's lookup from a thread that is no
            // mutator, on an object that may be freed meanwhile.
            if let Some(obj) = w.strong.with(rng.index(), |(h, _)| h.get()) {
                let _ = w.rt.is_non_moving(obj);
            }
            // A registration from a thread that is no mutator, perhaps
            // while a cycle forwards the registry (or of an address a
            // cycle has just made stale: dropped, or finalized as the
            // object found there).
            if rng.below(4) == 0
                && let Some(obj) = w.strong.with(rng.index(), |(h, _)| h.get())
            {
                let _ = w.rt.register_finalizer(obj);
            }
        }
        60..=64 => {
            let clone = w.weak.with(rng.index(), |(wk, id)| (wk.clone(), *id));
            if let Some(c) = clone {
                w.weak.push(c);
            }
        }
        65..=74 => match rng.below(4) {
            0 => drop(w.strong.take(rng.index())),
            1 => drop(w.weak.take(rng.index())),
            2 => drop(w.ephemerons.take(rng.index())),
            _ => {
                // The shared table shrinks from a thread that is no
                // mutator (while a cycle may be marking or forwarding it).
                let mut ids = w.shared_ids.lock();
                if rng.below(2) == 0 {
                    if w.shared.pop().is_some() {
                        ids.pop();
                    }
                } else {
                    let keep = ids.len() / 2;
                    w.shared.truncate(keep);
                    ids.truncate(keep);
                }
            }
        },
        75..=84 => w.collected(w.rt.collect())?,
        85..=89 => w.collected(w.rt.collect_young())?,
        90..=94 => {
            // The weak set from a thread that is no mutator: is a pooled
            // handle's object in it? (Addresses compared in the equality,
            // the handle read there: nothing read from the heap.)
            let i = rng.index();
            let probe = w.strong.with(i, |(_, id)| *id);
            if let Some(id) = probe {
                w.strings
                    .find_detached(id % STRING_HASHES, |o| {
                        w.strong.with(i, |(h, _)| h.get()) == Some(o)
                    })
                    .map_err(|e| format!("find_detached: {e}"))?;
            }
        }
        _ => w.check_at_safepoint()?,
    }
    Ok(())
}

/// Hashes the mutators intern pooled objects under (by id).
const STRING_HASHES: u64 = 64;

/// [`MutatorThread`]'s load-barrier probe, through the runtime's barrier
/// set: `resolve`, `load_ref` and `may_be_stale` on a made-up address.
struct Probe<'a> {
    me: &'a Mutator,
    r: ObjectReference,
    word: usize,
}

impl WithBarriers for Probe<'_> {
    type Output = ();
    fn run<B: BarrierSet>(self, b: B) {
        let _ = b.resolve(self.me, self.r);
        let _ = b.may_be_stale(self.me, self.word);
        let _ = b.may_be_stale(self.me, self.word.wrapping_neg());
        let mut word = self.word;
        // SAFETY: a word of this frame, used only here.
        let _ = b.load_ref(self.me, unsafe { SimpleSlot::from_ref(&mut word) });
    }
}
