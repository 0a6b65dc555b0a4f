//! The coordinator: begins and ends safepoints, runs handshakes, keeps the
//! statistics.
//!
//! # How a safepoint begins (wait-barrier strategy)
//! Under the registry lock: set the count of threads to wait for to
//! `threads + 1` (the extra one is the coordinator's own, so the count
//! cannot reach zero while it is still looking), arm the barrier with the
//! new id, arm every poll word with the id, then read each thread's state
//! and count the safe ones. Threads in managed code count themselves when
//! they reach a poll or enter a safe state; the one that brings the count to
//! zero wakes the coordinator, which sleeps on the count (a futex) in the
//! meantime instead of burning a core. Each thread is counted at most once
//! per safepoint, by whoever claims it first.
//!
//! # How it ends
//! Disarm every poll word, disarm the barrier and wake all its sleepers with
//! one `FUTEX_WAKE`, then sleep until the last stopped thread has run again
//! (that is the "leaving" time).

use crate::RegisterError;
use crate::barrier::WaitBarrier;
use crate::error::{BeginError, EndError, HandshakeError};
use crate::handshake::{self, HandshakeContext, HandshakeOp, HandshakeReport};
use crate::ids::{MutatorId, SafepointId};
use crate::leaving::LeaveTracker;
use crate::legacy::{self, LegacyGate};
use crate::mutator::MutatorHandle;
use crate::operation::{HandshakeTicket, OperationGate};
use crate::registry::{Registry, Slot};
use crate::state::ThreadState;
use crate::stats::{InFlight, LeaveEnd, SafepointRecord, SafepointStats, StatsCollector};
use crate::sync::{self, Arc, CachePadded, FutexWord, Mutex, MutexGuard, Ordering, fence};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::marker::PhantomData;
use std::time::Instant;

/// How a coordinator waits for threads and wakes them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// Threads count themselves in and sleep on a futex wait barrier keyed
    /// by the safepoint id; the last one in wakes the coordinator; one
    /// wake-all releases them (HotSpot since JDK-8203469).
    #[default]
    WaitBarrier,
    /// The coordinator polls the thread list, spinning, then yielding, then
    /// sleeping 1 ms; threads wait on one shared mutex and resume through it
    /// one at a time (HotSpot before JDK-8203469). The baseline.
    Legacy,
}

/// Where each safepoint's `-Xlog:safepoint`-shaped line goes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SafepointLog {
    /// Nowhere (statistics are still kept).
    #[default]
    Off,
    /// One line per safepoint on standard error.
    Stderr,
}

/// The state every handle of one coordinator shares.
pub(crate) struct Shared {
    pub(crate) strategy: Strategy,
    log: SafepointLog,
    pub(crate) registry: Mutex<Registry>,
    operations: OperationGate,
    /// Wait-barrier strategy: threads not yet counted, plus the
    /// coordinator's own token.
    pending: CachePadded<FutexWord>,
    pub(crate) barrier: WaitBarrier,
    pub(crate) gate: LegacyGate,
    /// Threads stopped in the last safepoint that have not run again yet.
    pub(crate) leaving: LeaveTracker,
    epoch: Instant,
    stats: Mutex<StatsCollector>,
    /// The legacy coordinator's snapshot of the thread list.
    legacy_scratch: Mutex<(Vec<Arc<Slot>>, Vec<bool>)>,
}

impl Shared {
    pub(crate) fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// `slot` is safe while `id` may be in progress: count it, once.
    pub(crate) fn count_safe(&self, slot: &Slot, id: SafepointId) {
        if self.strategy == Strategy::WaitBarrier
            && slot.claim_accounting(id)
            && self.pending.word().fetch_sub(1, Ordering::AcqRel) == 1
        {
            // The last one in: the coordinator may be asleep.
            self.pending.wake_all();
        }
    }

    fn registry_checked(
        &self,
        caller: sync::ThreadKey,
    ) -> Result<MutexGuard<'_, Registry>, MutatorId> {
        let registry = self.registry.lock();
        match registry.owned_by(caller) {
            Some(slot) if slot.state.snapshot().state == ThreadState::Managed => Err(slot.id),
            _ => Ok(registry),
        }
    }

    fn begin(&self, name: Cow<'static, str>) -> Result<SafepointId, BeginError> {
        let caller = sync::current_thread();
        drop(
            self.registry_checked(caller)
                .map_err(BeginError::CallerIsManaged)?,
        );
        self.operations
            .start_safepoint(caller)
            .map_err(|owned| BeginError::Nested { current: owned.0 })?;
        let begun = self.now();

        let mut registry = self.registry.lock();
        registry.counter += 1;
        let id = SafepointId::from_counter(registry.counter)
            .expect("the counter is odd while in progress");
        // Threads of the previous safepoint that have not run yet are
        // stopped in this one now: its leaving phase ends here.
        self.settle_previous(begun);
        self.leaving.open(id);
        registry.in_progress = Some(id);
        let threads = registry.slots.len() as u32;
        self.operations.publish_id(id);
        match self.strategy {
            Strategy::WaitBarrier => self.synchronize(registry, id),
            Strategy::Legacy => self.synchronize_legacy(registry, id),
        }

        let safe = self.now();
        self.stats.lock().in_flight = Some(InFlight {
            id,
            name,
            threads,
            begun,
            safe,
        });
        Ok(id)
    }

    fn synchronize(&self, registry: MutexGuard<'_, Registry>, id: SafepointId) {
        let pending = self.pending.word();
        pending.store(registry.slots.len() as u32 + 1, Ordering::SeqCst);
        self.barrier.arm(id);
        for slot in &registry.slots {
            slot.poll.arm_safepoint(id);
        }
        // Arm, fence, read, against the threads' publish, fence, read: a
        // thread that we see in managed code will see its armed poll.
        fence(Ordering::SeqCst);
        for slot in &registry.slots {
            if slot.state.snapshot().state.is_safe() {
                self.count_safe(slot, id);
            }
        }
        drop(registry);
        if pending.fetch_sub(1, Ordering::AcqRel) != 1 {
            loop {
                let left = pending.load(Ordering::Acquire);
                if left == 0 {
                    break;
                }
                self.pending.wait(left);
            }
        }
    }

    fn synchronize_legacy(&self, registry: MutexGuard<'_, Registry>, id: SafepointId) {
        self.gate.close(id);
        for slot in &registry.slots {
            slot.poll.arm_safepoint(id);
        }
        fence(Ordering::SeqCst);
        let mut scratch = self.legacy_scratch.lock();
        let (threads, seen) = &mut *scratch;
        threads.clone_from(&registry.slots);
        drop(registry);
        legacy::wait_until_safe(threads, seen);
        threads.clear();
    }

    fn end(&self, id: SafepointId) -> Result<(), EndError> {
        let mut registry = self.registry.lock();
        match registry.in_progress {
            None => return Err(EndError::NotInProgress { given: id }),
            Some(current) if current != id => {
                return Err(EndError::Mismatch {
                    in_progress: current,
                    given: id,
                });
            }
            Some(_) => {}
        }
        let ended = self.now();
        registry.in_progress = None;
        registry.counter += 1;
        for slot in &registry.slots {
            slot.poll.disarm_safepoint();
        }
        drop(registry);
        {
            let mut stats = self.stats.lock();
            let stopped = self.leaving.stopped(id);
            stats.ended(ended, stopped);
        }
        match self.strategy {
            Strategy::WaitBarrier => self.barrier.disarm_and_wake(),
            Strategy::Legacy => self.gate.open(),
        }
        if self.leaving.close_if_empty(id) {
            // Nobody was stopped: leaving is the wake-up call itself.
            self.finish_leaving(id, self.now());
        }
        self.operations.finish_safepoint();
        Ok(())
    }

    /// The last thread stopped in `id` runs again at `resumed`: complete
    /// the record (once; a later safepoint may have cut it short already).
    pub(crate) fn finish_leaving(&self, id: SafepointId, resumed: u64) {
        let record = self.stats.lock().finish(id, resumed, LeaveEnd::AllRunning);
        if let Some(record) = record {
            self.log_record(&record);
        }
        self.leaving.mark_done(id);
    }

    /// A new safepoint begins at `now`: if the previous one's stopped
    /// threads have not all run again, its leaving phase ends here.
    fn settle_previous(&self, now: u64) {
        let cut = {
            let mut stats = self.stats.lock();
            let id = stats.leaving_id();
            id.and_then(|id| {
                stats
                    .finish(id, now, LeaveEnd::CutByNextSafepoint)
                    .map(|r| (id, r))
            })
        };
        if let Some((id, record)) = cut {
            self.log_record(&record);
            self.leaving.mark_done(id);
        }
    }

    fn log_record(&self, record: &SafepointRecord) {
        if self.log == SafepointLog::Stderr {
            eprintln!("[safepoint] {record}");
        }
    }

    /// Statistics, after the last safepoint's leaving phase is complete.
    fn stats(&self) -> SafepointStats {
        loop {
            let stats = self.stats.lock();
            match stats.leaving_id() {
                None => return stats.snapshot(),
                Some(id) => {
                    drop(stats);
                    self.leaving.wait_done(id);
                }
            }
        }
    }

    fn wait_until_resumed(&self) {
        loop {
            // Not in the loop condition: its temporary guard would be held
            // while we sleep, and the last thread to leave needs the lock.
            let leaving = self.stats.lock().leaving_id();
            match leaving {
                Some(id) => self.leaving.wait_done(id),
                None => return,
            }
        }
    }
}

/// Stops the world and runs handshakes for the threads registered with it.
///
/// Cheap to clone: clones share one coordinator. Threads register with
/// [`Coordinator::register`] and poll through the returned
/// [`MutatorHandle`].
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("strategy", &self.shared.strategy)
            .field("registered", &self.registered())
            .field("in_progress", &self.in_progress())
            .finish()
    }
}

impl Default for Coordinator {
    fn default() -> Self {
        Coordinator::new(Strategy::default())
    }
}

/// Builds a [`Coordinator`].
#[derive(Copy, Clone, Debug, Default)]
pub struct CoordinatorBuilder {
    strategy: Strategy,
    log: SafepointLog,
}

impl CoordinatorBuilder {
    /// How threads are stopped and woken.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Where the per-safepoint log lines go.
    pub fn log(mut self, log: SafepointLog) -> Self {
        self.log = log;
        self
    }

    /// The coordinator.
    pub fn build(self) -> Coordinator {
        Coordinator {
            shared: Arc::new(Shared {
                strategy: self.strategy,
                log: self.log,
                registry: Mutex::new(Registry::default()),
                operations: OperationGate::new(),
                pending: CachePadded::new(FutexWord::new(0)),
                barrier: WaitBarrier::new(),
                gate: LegacyGate::new(),
                leaving: LeaveTracker::new(),
                epoch: Instant::now(),
                stats: Mutex::new(StatsCollector::new(self.strategy)),
                legacy_scratch: Mutex::new((Vec::new(), Vec::new())),
            }),
        }
    }
}

impl Coordinator {
    /// A coordinator with `strategy` and no log.
    pub fn new(strategy: Strategy) -> Self {
        CoordinatorBuilder::default().strategy(strategy).build()
    }

    /// A builder, for the strategy and the log.
    pub fn builder() -> CoordinatorBuilder {
        CoordinatorBuilder::default()
    }

    /// The strategy this coordinator uses.
    pub fn strategy(&self) -> Strategy {
        self.shared.strategy
    }

    /// Register the calling thread as a mutator. The thread is in managed
    /// code when this returns (it waits if a safepoint is in progress);
    /// dropping the handle unregisters it, also when the thread unwinds.
    ///
    /// # Errors
    /// [`RegisterError::AlreadyRegistered`] if the thread already holds a
    /// handle from this coordinator.
    pub fn register(&self) -> Result<MutatorHandle, RegisterError> {
        let me = sync::current_thread();
        let slot = {
            let mut registry = self.shared.registry.lock();
            if let Some(existing) = registry.owned_by(me) {
                return Err(RegisterError::AlreadyRegistered(existing.id));
            }
            registry.insert(me)
        };
        Ok(MutatorHandle::attach(Arc::clone(&self.shared), slot))
    }

    /// Stop every registered thread. The operation runs while the returned
    /// guard lives; dropping it (or [`SafepointGuard::end`]) resumes them.
    /// Waits while another thread's safepoint or any handshake is running.
    ///
    /// # Errors
    /// [`BeginError::Nested`] if the calling thread owns the safepoint in
    /// progress; [`BeginError::CallerIsManaged`] if the calling thread is a
    /// registered mutator in managed code.
    pub fn begin(&self, name: impl Into<Cow<'static, str>>) -> Result<SafepointGuard, BeginError> {
        let id = self.shared.begin(name.into())?;
        Ok(SafepointGuard {
            coordinator: self.clone(),
            id: Some(id),
            _not_send: PhantomData,
        })
    }

    /// [`Coordinator::begin`] without a guard, for embedders that cannot
    /// keep one (a C API): pair it with [`Coordinator::end_unscoped`], which
    /// may be called from any thread.
    ///
    /// # Errors
    /// As [`Coordinator::begin`].
    pub fn begin_unscoped(
        &self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<SafepointId, BeginError> {
        self.shared.begin(name.into())
    }

    /// End safepoint `id` and wake every stopped thread. Returns right
    /// after the wake-up; the safepoint's record (with its leaving time)
    /// reaches the statistics and the log when the last stopped thread runs
    /// again, or when the next safepoint begins, whichever comes first.
    ///
    /// # Errors
    /// [`EndError::NotInProgress`] or [`EndError::Mismatch`] if `id` is not
    /// the safepoint in progress; nothing changes then.
    pub fn end_unscoped(&self, id: SafepointId) -> Result<(), EndError> {
        self.shared.end(id)
    }

    /// The safepoint in progress, if any.
    pub fn in_progress(&self) -> Option<SafepointId> {
        self.shared.registry.lock().in_progress
    }

    /// How many threads are registered.
    pub fn registered(&self) -> usize {
        self.shared.registry.lock().slots.len()
    }

    /// The registered threads and their states, as of now.
    pub fn mutators(&self) -> Vec<(MutatorId, ThreadState)> {
        let registry = self.shared.registry.lock();
        registry
            .slots
            .iter()
            .map(|s| (s.id, s.state.snapshot().state))
            .collect()
    }

    /// Percentiles of every phase over all safepoints so far.
    ///
    /// Waits until every thread stopped in the last safepoint runs again (or
    /// a new safepoint begins), so that its leaving time is included.
    pub fn stats(&self) -> SafepointStats {
        self.shared.stats()
    }

    /// Sleep until every thread that stopped in the last safepoint runs
    /// again (or a new safepoint begins). [`Coordinator::end_unscoped`] does
    /// not wait for that; benchmarks and callers that want the whole cycle do.
    pub fn wait_until_resumed(&self) {
        self.shared.wait_until_resumed();
    }

    /// Forget the statistics gathered so far.
    pub fn reset_stats(&self) {
        self.shared.stats.lock().reset();
    }

    /// Checks that the calling thread may request a handshake (it is not a
    /// mutator in managed code, and does not own the safepoint in progress)
    /// and takes the ticket that keeps safepoints out while it lasts.
    fn start_handshake(&self) -> Result<HandshakeTicket<'_>, HandshakeError> {
        let caller = sync::current_thread();
        drop(
            self.shared
                .registry_checked(caller)
                .map_err(HandshakeError::CallerIsManaged)?,
        );
        self.shared
            .operations
            .start_handshake(caller)
            .map_err(|owned| HandshakeError::InsideSafepoint(owned.0))
    }

    /// Run `op` for thread `target` without stopping the others: at the
    /// target's next poll, or right here if the target is safe. Runs exactly
    /// once; returns after it ran.
    ///
    /// # Errors
    /// [`HandshakeError::NoSuchMutator`] if `target` is not registered;
    /// [`HandshakeError::CallerIsManaged`] if the calling thread is a
    /// registered mutator in managed code;
    /// [`HandshakeError::InsideSafepoint`] if it owns the safepoint in
    /// progress; [`HandshakeError::OperationPanicked`] if `op` panicked on the
    /// target.
    ///
    /// # Panics
    /// If `op` panics while it runs on the calling thread.
    pub fn handshake<F>(&self, target: MutatorId, op: F) -> Result<HandshakeReport, HandshakeError>
    where
        F: FnOnce(HandshakeContext) + Send + 'static,
    {
        let _ticket = self.start_handshake()?;
        let slot = self
            .shared
            .registry
            .lock()
            .find(target)
            .cloned()
            .ok_or(HandshakeError::NoSuchMutator(target))?;
        let op = Arc::new(HandshakeOp::new(target, Box::new(op)));
        slot.handshakes.push(&slot.poll, Arc::clone(&op));
        handshake::drive(&slot, &op);
        op.outcome()
            .expect("drive returns once the operation ran")
            .map_err(HandshakeError::OperationPanicked)
    }

    /// Run `op` once for every registered thread, each at its own next poll
    /// (or here, for the ones that are safe), without stopping the others.
    /// Returns one report per thread, after all ran.
    ///
    /// # Errors
    /// As [`Coordinator::handshake`] (never `NoSuchMutator`); a panic on a
    /// target is reported after every other target is done.
    ///
    /// # Panics
    /// If `op` panics while it runs on the calling thread.
    pub fn handshake_all<F>(&self, op: F) -> Result<Vec<HandshakeReport>, HandshakeError>
    where
        F: Fn(HandshakeContext) + Send + Sync + 'static,
    {
        let _ticket = self.start_handshake()?;
        let slots = self.shared.registry.lock().slots.clone();
        let op = Arc::new(op);
        let ops: Vec<_> = slots
            .iter()
            .map(|slot| {
                let op = Arc::clone(&op);
                let queued = Arc::new(HandshakeOp::new(slot.id, Box::new(move |cx| op(cx))));
                slot.handshakes.push(&slot.poll, Arc::clone(&queued));
                queued
            })
            .collect();
        let mut reports = Vec::with_capacity(ops.len());
        let mut panicked = None;
        for (slot, queued) in slots.iter().zip(&ops) {
            handshake::drive(slot, queued);
            match queued
                .outcome()
                .expect("drive returns once the operation ran")
            {
                Ok(report) => reports.push(report),
                Err(target) => panicked = panicked.or(Some(target)),
            }
        }
        match panicked {
            Some(target) => Err(HandshakeError::OperationPanicked(target)),
            None => Ok(reports),
        }
    }
}

/// A safepoint in progress: every registered thread is stopped (or in a
/// safe state it cannot leave) while this lives. Dropping it ends the
/// safepoint; [`SafepointGuard::end`] does the same and returns the record.
#[must_use = "the safepoint ends when the guard is dropped"]
pub struct SafepointGuard {
    coordinator: Coordinator,
    id: Option<SafepointId>,
    // The thread that began the safepoint owns it (see BeginError::Nested).
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for SafepointGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafepointGuard")
            .field("id", &self.id)
            .finish()
    }
}

impl SafepointGuard {
    /// The safepoint's id.
    pub fn id(&self) -> SafepointId {
        self.id.expect("present until end")
    }

    /// The coordinator that owns the safepoint.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    /// End the safepoint and wake every stopped thread (see
    /// [`Coordinator::end_unscoped`]; the timings go to
    /// [`Coordinator::stats`]).
    ///
    /// # Errors
    /// Only if the safepoint was already ended through
    /// [`Coordinator::end_unscoped`] behind the guard's back.
    pub fn end(mut self) -> Result<(), EndError> {
        let id = self.id.take().expect("present until end");
        self.coordinator.end_unscoped(id)
    }
}

impl Drop for SafepointGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // An error means someone ended it through `end_unscoped`
            // already: nothing is left to do.
            let _ = self.coordinator.end_unscoped(id);
        }
    }
}
