//! Barriers compiled per collector: a type per collector's barrier code
//! ([`BarrierSet`]: [`StopTheWorldBarriers`], [`ConcurrentBarrierSet`]),
//! chosen once when the embedder starts its hot loop
//! ([`Runtime::with_barriers`], [`Runtime::barrier_set`]).
//!
//! [`Mutator::load_ref`], [`Mutator::store_ref`] and
//! [`Mutator::before_overwrite`] test, at every call, which barriers the
//! runtime has (an `Option` per barrier in the mutator). That test is
//! cheap, but its code sits in the caller: an interpreter that inlines it
//! at every load carries the concurrent collector's load barrier in its
//! dispatch loop under every collector, and one that calls it out of line
//! pays a call at every load under the concurrent collector. Code generic
//! over a `BarrierSet` is compiled once per set, as HotSpot assembles its
//! interpreter with the barrier code of the collector it runs: the
//! stop-the-world copy has no load barrier and no snapshot store barrier
//! at all, only the generational remembered-set barrier; the concurrent
//! copy has the load barrier's fast path inlined and its slow path out of
//! line.
//!
//! The set is part of the embedder's barrier contract, as calling the
//! barriers at all is ([`CollectorMode`]): code running with a set other
//! than the one its runtime names skips barriers its collector needs,
//! which is the embedder's error exactly as a load that bypasses
//! [`Mutator::load_ref`] is. The runtime hands out only the right one, and
//! debug builds assert it at every call.

use super::Mutator;
use crate::gc::CollectorMode;
use crate::vm::{ObjectReference, Slot};
use crate::{BarrierSetError, Runtime};
use sealed::Sealed;

mod sealed {
    /// Closes [`BarrierSet`](super::BarrierSet) to the two sets, and makes
    /// them: a trait outside code cannot name, so only the runtime can.
    pub trait Sealed {
        fn make() -> Self;
    }
    impl Sealed for super::StopTheWorldBarriers {
        fn make() -> Self {
            super::StopTheWorldBarriers { _private: () }
        }
    }
    impl Sealed for super::ConcurrentBarrierSet {
        fn make() -> Self {
            super::ConcurrentBarrierSet { _private: () }
        }
    }
}

/// Which barrier code a collector needs: what a [`BarrierSet`] is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BarrierKind {
    /// [`CollectorMode::StopTheWorld`]: objects move only while every
    /// mutator is stopped, so loads are plain loads; stores take the
    /// generational remembered-set barrier (with two generations).
    StopTheWorld,
    /// [`CollectorMode::Concurrent`] and
    /// [`CollectorMode::ConcurrentNonMoving`]: loads take the load barrier
    /// (forwarding and healing), stores the snapshot barrier while marking
    /// runs and the remembered-set barrier.
    Concurrent,
}

impl BarrierKind {
    /// The barrier code `mode` needs.
    pub fn of(mode: CollectorMode) -> BarrierKind {
        match mode {
            CollectorMode::StopTheWorld => BarrierKind::StopTheWorld,
            CollectorMode::Concurrent | CollectorMode::ConcurrentNonMoving => {
                BarrierKind::Concurrent
            }
        }
    }
}

/// One collector's barriers, as a type: code generic over it is compiled
/// once per set, with only that set's barrier code in it. Sealed: the two
/// sets are [`StopTheWorldBarriers`] and [`ConcurrentBarrierSet`], and a
/// value of either comes only from the runtime
/// ([`Runtime::with_barriers`], [`Runtime::barrier_set`]).
///
/// Each method is the [`Mutator`] method of the same name with the
/// runtime's test of which barriers it has resolved at compile time; its
/// contract is that method's.
pub trait BarrierSet: Copy + Send + Sync + std::fmt::Debug + sealed::Sealed + 'static {
    /// The collectors this set serves.
    const KIND: BarrierKind;

    /// [`Mutator::after_load`]: where `r`, just loaded from `slot`, is now.
    fn after_load<S: Slot>(self, me: &Mutator, slot: &S, r: ObjectReference) -> ObjectReference;

    /// [`Mutator::may_be_stale`]: the load barrier's test on an address
    /// the embedder decoded from a word it loaded; `false`, always, in
    /// the stop-the-world set.
    fn may_be_stale(self, me: &Mutator, addr: usize) -> bool;

    /// [`Mutator::load_ref`]: reads a reference field through the load
    /// barrier.
    #[inline(always)]
    fn load_ref<S: Slot>(self, me: &Mutator, slot: S) -> Option<ObjectReference> {
        let r = slot.load()?;
        Some(self.after_load(me, &slot, r))
    }

    /// [`Mutator::store_ref`]: writes a reference field through the store
    /// barriers.
    fn store_ref<S: Slot>(self, me: &Mutator, slot: S, value: ObjectReference);

    /// [`Mutator::before_overwrite`]: the barrier before a slot is
    /// overwritten with a value that is not a reference.
    fn before_overwrite<S: Slot>(self, me: &Mutator, slot: &S);

    /// [`Mutator::resolve`]: where `obj`'s object is now.
    fn resolve(self, me: &Mutator, obj: ObjectReference) -> ObjectReference;
}

/// The stop-the-world collector's barriers: no load barrier, no snapshot
/// barrier; a store of a reference takes the remembered-set barrier when
/// the runtime has two generations.
#[derive(Copy, Clone, Debug)]
pub struct StopTheWorldBarriers {
    _private: (),
}

/// The concurrent collectors' barriers: the load barrier (its fast path
/// inlined: a test of the mutator's state and one table lookup), the
/// snapshot barrier and, with two generations, the remembered-set
/// barrier.
#[derive(Copy, Clone, Debug)]
pub struct ConcurrentBarrierSet {
    _private: (),
}

impl BarrierSet for StopTheWorldBarriers {
    const KIND: BarrierKind = BarrierKind::StopTheWorld;

    #[inline(always)]
    fn after_load<S: Slot>(self, me: &Mutator, _: &S, r: ObjectReference) -> ObjectReference {
        debug_assert!(me.barriers.concurrent.is_none(), "{}", WRONG_SET);
        r
    }

    #[inline(always)]
    fn may_be_stale(self, me: &Mutator, _: usize) -> bool {
        debug_assert!(me.barriers.concurrent.is_none(), "{}", WRONG_SET);
        false
    }

    #[inline(always)]
    fn store_ref<S: Slot>(self, me: &Mutator, slot: S, value: ObjectReference) {
        debug_assert!(me.barriers.concurrent.is_none(), "{}", WRONG_SET);
        slot.store(value);
        if let Some(barrier) = &me.barriers.store {
            barrier.stored(slot.address().get(), value.get());
        }
    }

    #[inline(always)]
    fn before_overwrite<S: Slot>(self, me: &Mutator, _: &S) {
        debug_assert!(me.barriers.concurrent.is_none(), "{}", WRONG_SET);
    }

    #[inline(always)]
    fn resolve(self, me: &Mutator, obj: ObjectReference) -> ObjectReference {
        debug_assert!(me.barriers.concurrent.is_none(), "{}", WRONG_SET);
        obj
    }
}

impl BarrierSet for ConcurrentBarrierSet {
    const KIND: BarrierKind = BarrierKind::Concurrent;

    #[inline(always)]
    fn may_be_stale(self, me: &Mutator, addr: usize) -> bool {
        debug_assert!(me.barriers.concurrent.is_some(), "{}", WRONG_SET);
        // The lookup alone: the mutator's test of which barriers it has
        // is resolved by the set (a mutator of another collector has a
        // table that covers no address, so this stays sound with the
        // wrong set).
        me.barriers.may_be_relocating(addr)
    }

    #[inline(always)]
    fn after_load<S: Slot>(self, me: &Mutator, slot: &S, r: ObjectReference) -> ObjectReference {
        debug_assert!(me.barriers.concurrent.is_some(), "{}", WRONG_SET);
        match me.barriers.may_be_relocating(r.get()) {
            true => me.after_load_slow(slot, r),
            false => r,
        }
    }

    #[inline(always)]
    fn store_ref<S: Slot>(self, me: &Mutator, slot: S, value: ObjectReference) {
        debug_assert!(me.barriers.concurrent.is_some(), "{}", WRONG_SET);
        me.store_ref(slot, value)
    }

    #[inline(always)]
    fn before_overwrite<S: Slot>(self, me: &Mutator, slot: &S) {
        debug_assert!(me.barriers.concurrent.is_some(), "{}", WRONG_SET);
        me.before_overwrite(slot)
    }

    #[inline(always)]
    fn resolve(self, me: &Mutator, obj: ObjectReference) -> ObjectReference {
        debug_assert!(me.barriers.concurrent.is_some(), "{}", WRONG_SET);
        me.resolve(obj)
    }
}

const WRONG_SET: &str = "a barrier set used with a runtime whose collector needs another one";

/// Code to run compiled for the runtime's barriers: what
/// [`Runtime::with_barriers`] takes (a closure cannot be generic).
pub trait WithBarriers {
    /// What the code returns.
    type Output;

    /// Runs the code with `barriers`, the set the runtime's collector
    /// needs.
    fn run<B: BarrierSet>(self, barriers: B) -> Self::Output;
}

impl Runtime {
    /// The barrier code this runtime's collector needs.
    pub fn barrier_kind(&self) -> BarrierKind {
        BarrierKind::of(self.config().collector())
    }

    /// Runs `code` compiled for this runtime's barriers: once per
    /// [`BarrierSet`] in the binary, one of them chosen here.
    ///
    /// ```
    /// use hotmem::{BarrierSet, Mutator, ObjectReference, Runtime, SimpleSlot, WithBarriers};
    ///
    /// /// Reads a field: written once, compiled once per barrier set.
    /// struct ReadField<'a> {
    ///     me: &'a Mutator,
    ///     field: SimpleSlot,
    /// }
    ///
    /// impl WithBarriers for ReadField<'_> {
    ///     type Output = Option<ObjectReference>;
    ///     fn run<B: BarrierSet>(self, b: B) -> Self::Output {
    ///         // `B`'s load barrier, and only `B`'s: none at all in the
    ///         // stop-the-world copy.
    ///         b.load_ref(self.me, self.field)
    ///     }
    /// }
    ///
    /// let rt = Runtime::builder().build()?;
    /// let me = rt.attach_mutator()?;
    /// let mut word = 0usize;
    /// // SAFETY: a word that outlives the slot's use.
    /// let field = unsafe { SimpleSlot::from_ref(&mut word) };
    /// assert_eq!(rt.with_barriers(ReadField { me: &me, field }), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_barriers<W: WithBarriers>(&self, code: W) -> W::Output {
        match self.barrier_kind() {
            BarrierKind::StopTheWorld => code.run(StopTheWorldBarriers::make()),
            BarrierKind::Concurrent => code.run(ConcurrentBarrierSet::make()),
        }
    }

    /// The barrier set `B`, if it is the one this runtime's collector
    /// needs: for an embedder that instantiates its VM per set itself
    /// (`match rt.barrier_kind()`, then `rt.barrier_set::<..>()`).
    ///
    /// # Errors
    /// [`BarrierSetError`] if the collector needs another set.
    pub fn barrier_set<B: BarrierSet>(&self) -> Result<B, BarrierSetError> {
        let needed = self.barrier_kind();
        if needed != B::KIND {
            return Err(BarrierSetError {
                asked: B::KIND,
                needed,
            });
        }
        Ok(B::make())
    }
}
