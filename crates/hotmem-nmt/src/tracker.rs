//! `Tracker`: the thread-safe native-memory tracker of virtual memory.

use crate::delta::{Delta, Totals};
use crate::error::{TagError, TrackError};
use crate::region_state::RegionState;
use crate::scale::Scale;
use crate::stack::{CallStack, StackStore};
use crate::stack_id::StackId;
use crate::store::{Change, RegionStore};
use crate::summary::{Summary, SummaryReport};
use crate::sync::{Mutex, MutexGuard};
use crate::tags::{MAX_TAGS, TagRegistry};
use crate::tree::VmaTree;
use hotmem_os::{MemRange, MemTag, MemoryEvent, MemoryObserver};
use std::fmt;

/// How much a tracker records. Chosen once, at construction (HotSpot's
/// `-XX:NativeMemoryTracking=off|summary|detail`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum Level {
    /// Nothing: every operation returns at once with an empty [`Delta`].
    Off,
    /// Regions and per-tag totals, no call stacks.
    Summary,
    /// Regions, per-tag totals, and the call stack that reserved and
    /// committed each region.
    Detail,
}

/// State behind the tracker's lock.
pub(crate) struct Inner<S> {
    pub(crate) store: S,
    pub(crate) totals: [Totals; MAX_TAGS],
    pub(crate) stacks: StackStore,
    rejected_events: u64,
    last_rejected: Option<TrackError>,
}

impl<S: RegionStore> Inner<S> {
    /// Checks and applies one change, keeping the totals up to date.
    fn run(&mut self, range: MemRange, change: Change) -> Result<Delta, TrackError> {
        if range.is_empty() {
            return Err(TrackError::Empty {
                op: change.operation(),
            });
        }
        let mut delta = Delta::default();
        self.store.apply(range, change, &mut |old, new, len| {
            // Wrapping casts: totals are kept modulo 2^64, which is exact for
            // any real address space.
            let len = len as isize;
            if old.is_reserved() {
                let committed = if old.is_committed() { -len } else { 0 };
                delta.add(old.tag(), -len, committed);
            }
            if new.is_reserved() {
                let committed = if new.is_committed() { len } else { 0 };
                delta.add(new.tag(), len, committed);
            }
        })?;
        for d in delta.iter() {
            self.totals[usize::from(d.tag.raw())].apply(d);
        }
        Ok(delta)
    }
}

/// Tracks every reservation, commit, uncommit and release of virtual memory
/// in a process (or a runtime), with a tag and, at [`Level::Detail`], the
/// call stacks that made them.
///
/// One tracker is shared by every thread (`&self` methods, one short
/// critical section per operation). Attach it to a
/// [`hotmem_os::Memory`] with [`Memory::with_observer`] and it sees all of
/// that memory's operations; or call the operations directly.
///
/// Regions live in an [`S: RegionStore`](RegionStore): the [`VmaTree`] by
/// default; [`LinkedListTracker`](crate::linked_list::LinkedListTracker) is the
/// same tracker over the sorted-linked-list baseline.
///
/// Per-tag totals are updated by each operation, so [`Tracker::totals`],
/// [`Tracker::summary`] and the summary report cost O(tags) and never
/// allocate.
///
/// [`Memory::with_observer`]: hotmem_os::Memory::with_observer
pub struct Tracker<S: RegionStore = VmaTree> {
    level: Level,
    pub(crate) tags: TagRegistry,
    pub(crate) inner: Mutex<Inner<S>>,
}

impl<S: RegionStore> fmt::Debug for Tracker<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.summary().total();
        f.debug_struct("Tracker")
            .field("level", &self.level)
            .field("reserved", &total.reserved)
            .field("committed", &total.committed)
            .finish()
    }
}

impl<S: RegionStore> Default for Tracker<S> {
    /// A tracker at [`Level::Summary`].
    fn default() -> Self {
        Tracker::with_level(Level::Summary)
    }
}

impl Tracker<VmaTree> {
    /// An empty tracker recording at `level`.
    pub fn new(level: Level) -> Self {
        Tracker::with_level(level)
    }
}

impl<S: RegionStore> Tracker<S> {
    /// An empty tracker over store `S`, recording at `level` (for code
    /// generic over the store, or
    /// `LinkedListTracker::with_level`; otherwise see `Tracker::new`).
    pub fn with_level(level: Level) -> Self {
        Tracker {
            level,
            tags: TagRegistry::default(),
            inner: Mutex::new(Inner {
                store: S::default(),
                totals: [Totals::ZERO; MAX_TAGS],
                stacks: StackStore::default(),
                rejected_events: 0,
                last_rejected: None,
            }),
        }
    }

    /// The level it records at.
    #[inline]
    pub fn level(&self) -> Level {
        self.level
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner<S>> {
        self.inner.lock()
    }

    /// The tag named `name`: a built-in one if the name is a built-in
    /// name, the one registered before under that name, or a new one
    /// (numbers from [`MemTag::FIRST_CUSTOM`] up).
    ///
    /// # Errors
    /// [`TagError::EmptyName`], [`TagError::NameTooLong`], or
    /// [`TagError::Full`] when all [`MAX_CUSTOM_TAGS`](crate::MAX_CUSTOM_TAGS)
    /// numbers are taken.
    pub fn register_tag(&self, name: &str) -> Result<MemTag, TagError> {
        self.tags.register(name)
    }

    /// The name of `tag`, `None` for a custom number nobody registered.
    pub fn tag_name(&self, tag: MemTag) -> Option<&str> {
        self.tags.name(tag)
    }

    /// The stack to pass to an operation: the caller's at
    /// [`Level::Detail`], [`CallStack::EMPTY`] otherwise (so that summary
    /// mode pays nothing for stacks).
    #[inline]
    pub fn capture_stack(&self) -> CallStack {
        match self.level {
            Level::Detail => CallStack::capture(),
            Level::Off | Level::Summary => CallStack::EMPTY,
        }
    }

    #[inline]
    fn tracks(&self) -> bool {
        self.level != Level::Off
    }

    fn check_tag(tag: MemTag) -> Result<(), TrackError> {
        if usize::from(tag.raw()) < MAX_TAGS {
            Ok(())
        } else {
            Err(TrackError::TagOutOfRange { tag })
        }
    }

    /// Runs a change that records `stack` (at detail level), storing the
    /// stack only if the change succeeded.
    fn run_with_stack(
        &self,
        range: MemRange,
        stack: &CallStack,
        make: impl FnOnce(StackId) -> Change,
    ) -> Result<Delta, TrackError> {
        let mut inner = self.lock();
        let pending = match self.level {
            Level::Detail => Some(inner.stacks.prepare(stack)),
            Level::Off | Level::Summary => None,
        };
        let delta = inner.run(range, make(pending.map_or(StackId::NONE, |p| p.id())))?;
        if let Some(p) = pending {
            inner.stacks.keep(stack, p);
        }
        Ok(delta)
    }

    /// Records that `range` was reserved with `tag` by `stack`.
    ///
    /// # Errors
    /// [`TrackError::Empty`], [`TrackError::Overlap`] if any of it is
    /// already reserved, [`TrackError::TagOutOfRange`]. Nothing changes.
    pub fn reserve(
        &self,
        range: MemRange,
        tag: MemTag,
        stack: &CallStack,
    ) -> Result<Delta, TrackError> {
        if !self.tracks() {
            return Ok(Delta::default());
        }
        Self::check_tag(tag)?;
        self.run_with_stack(range, stack, |id| {
            Change::Reserve(RegionState::reserved(tag, id))
        })
    }

    /// Records that `range` was committed by `stack`. Parts that were
    /// committed already stay committed (their committing stack becomes
    /// `stack`, as the OS replaces their contents). The range may span
    /// adjacent reservations; each keeps its tag.
    ///
    /// # Errors
    /// [`TrackError::Empty`], [`TrackError::NotReserved`] if any of it is
    /// not reserved. Nothing changes.
    pub fn commit(&self, range: MemRange, stack: &CallStack) -> Result<Delta, TrackError> {
        if !self.tracks() {
            return Ok(Delta::default());
        }
        self.run_with_stack(range, stack, Change::Commit)
    }

    /// Records that `range` was uncommitted. Parts that were not committed
    /// are left as they are, as the OS does.
    ///
    /// # Errors
    /// As [`Tracker::commit`].
    pub fn uncommit(&self, range: MemRange) -> Result<Delta, TrackError> {
        if !self.tracks() {
            return Ok(Delta::default());
        }
        self.lock().run(range, Change::Uncommit)
    }

    /// Records that `range` was released (committed parts included). It may
    /// be part of a reservation, which is then split.
    ///
    /// # Errors
    /// As [`Tracker::commit`].
    pub fn release(&self, range: MemRange) -> Result<Delta, TrackError> {
        if !self.tracks() {
            return Ok(Delta::default());
        }
        self.lock().run(range, Change::Release)
    }

    /// Gives `range` the tag `tag` (part of a reservation is split off), e.g.
    /// when a runtime hands reserved space from one use to another.
    ///
    /// # Errors
    /// As [`Tracker::commit`], plus [`TrackError::TagOutOfRange`].
    pub fn set_tag(&self, range: MemRange, tag: MemTag) -> Result<Delta, TrackError> {
        if !self.tracks() {
            return Ok(Delta::default());
        }
        Self::check_tag(tag)?;
        self.lock().run(range, Change::SetTag(tag))
    }

    /// Reserved and committed bytes of `tag` now (zero for a number at or
    /// above [`MAX_TAGS`]). O(1), no allocation.
    pub fn totals(&self, tag: MemTag) -> Totals {
        self.lock()
            .totals
            .get(usize::from(tag.raw()))
            .copied()
            .unwrap_or_default()
    }

    /// A consistent copy of every tag's totals. O(tags), no allocation.
    pub fn summary(&self) -> Summary {
        Summary::from_totals(self.lock().totals)
    }

    /// The summary report in `scale`: print it with `{}` or serialize it.
    /// Takes the lock only to copy the totals.
    pub fn summary_report(&self, scale: Scale) -> SummaryReport<'_> {
        SummaryReport {
            summary: self.summary(),
            tags: &self.tags,
            scale,
        }
    }

    /// Writes the summary report into `w`. Allocates nothing, so it may run
    /// where the heap cannot be trusted (out-of-memory reporting, samplers).
    ///
    /// # Errors
    /// Whatever `w` returns.
    pub fn write_summary(&self, w: &mut dyn fmt::Write, scale: Scale) -> fmt::Result {
        write!(w, "{}", self.summary_report(scale))
    }

    /// Boundary points (tree) or list nodes (baseline) the tracker holds.
    pub fn node_count(&self) -> usize {
        self.lock().store.node_count()
    }

    /// Distinct call stacks stored (detail level).
    pub fn stack_count(&self) -> usize {
        self.lock().stacks.len()
    }

    /// Stacks not stored because the store was full (regions recorded
    /// without them).
    pub fn dropped_stacks(&self) -> u64 {
        self.lock().stacks.dropped()
    }

    /// The stack with id `id`, `None` for [`StackId::NONE`] or an unknown id.
    pub fn stack(&self, id: StackId) -> Option<CallStack> {
        self.lock().stacks.get(id).copied()
    }

    /// Events from a [`hotmem_os::Memory`] that the tracker rejected
    /// (an observer cannot return errors), and the last such error. Nonzero
    /// means the tracker was attached after some memory was reserved, or the
    /// same range is tracked twice.
    pub fn rejected_events(&self) -> (u64, Option<TrackError>) {
        let inner = self.lock();
        (inner.rejected_events, inner.last_rejected)
    }
}

impl<S: RegionStore> MemoryObserver for Tracker<S> {
    fn observe(&self, event: &MemoryEvent) {
        if !self.tracks() {
            return;
        }
        let stack = self.capture_stack();
        let result = match *event {
            MemoryEvent::Reserve { range, tag } => self.reserve(range, tag, &stack),
            MemoryEvent::Commit { range, .. } => self.commit(range, &stack),
            MemoryEvent::Uncommit { range, .. } => self.uncommit(range),
            MemoryEvent::Release { range, .. } => self.release(range),
            // An event this version does not know changes nothing it tracks.
            _ => return,
        };
        if let Err(e) = result {
            let mut inner = self.lock();
            inner.rejected_events += 1;
            inner.last_rejected = Some(e);
        }
    }
}
