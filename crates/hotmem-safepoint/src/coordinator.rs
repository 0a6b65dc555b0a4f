//! The coordinator: the user-facing entry to safepoints, handshakes and
//! statistics. The protocol behind it (arming, counting, waking, and the
//! fences) is in `protocol.rs`.

use crate::RegisterError;
use crate::error::{BeginError, EndError, HandshakeError};
use crate::guard::{SafepointGuard, SafepointTicket};
use crate::handshake::{HandshakeContext, HandshakeOp, HandshakeReport};
use crate::ids::{MutatorId, SafepointId};
use crate::mutator::MutatorHandle;
use crate::options::{SafepointLog, Strategy};
use crate::protocol::{Caller, Shared};
use crate::state::ThreadState;
use crate::stats::SafepointStats;
use crate::sync::Arc;
use std::borrow::Cow;

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
            shared: Arc::new(Shared::new(self.strategy, self.log)),
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
    /// handle from this coordinator; [`RegisterError::OwnsSafepoint`] if it
    /// owns the safepoint in progress (it would stop in it);
    /// [`RegisterError::InsideHandshake`] from a handshake operation.
    pub fn register(&self) -> Result<MutatorHandle, RegisterError> {
        let slot = self.shared.register()?;
        Ok(MutatorHandle::attach(Arc::clone(&self.shared), slot))
    }

    /// Stop every registered thread. The operation runs while the returned
    /// guard lives; dropping it (or [`SafepointGuard::end`]) resumes them.
    /// Waits while another thread's safepoint or any handshake is running.
    ///
    /// Call it from a thread that is not registered with this coordinator;
    /// a mutator begins through [`MutatorHandle::safepoint`] or
    /// [`SafeRegion::safepoint`](crate::SafeRegion::safepoint).
    ///
    /// # Errors
    /// [`BeginError::Nested`] if the calling thread owns the safepoint in
    /// progress; [`BeginError::CallerIsMutator`] if it is a registered
    /// mutator of this coordinator; [`BeginError::InsideHandshake`] from a
    /// handshake operation; [`BeginError::ManagedElsewhere`] if it runs
    /// managed code on another coordinator;
    /// [`BeginError::StoppedInCallersSafepoint`] if a thread in managed
    /// code here is stopped in a safepoint it owns on another coordinator
    /// (see the crate docs, "Several coordinators").
    pub fn begin(
        &self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<SafepointGuard<'static>, BeginError> {
        self.begin_unscoped(name).map(SafepointGuard::new)
    }

    /// [`Coordinator::begin`] for embedders that cannot keep a scoped guard
    /// (a C API): the returned ticket is the one capability that ends the
    /// safepoint ([`Coordinator::end_unscoped`], [`SafepointTicket::end`],
    /// or dropping it). It stays on the calling thread, the owner.
    ///
    /// # Errors
    /// As [`Coordinator::begin`].
    pub fn begin_unscoped(
        &self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<SafepointTicket, BeginError> {
        let (id, owner) = self.shared.begin(name.into(), Caller::Outsider)?;
        Ok(SafepointTicket::new(self.clone(), id, owner))
    }

    /// End the safepoint that `ticket` owns and wake every stopped thread.
    /// Returns right after the wake-up; the safepoint's record (with its
    /// leaving time) reaches the statistics and the log when the last
    /// stopped thread runs again, or when the next safepoint begins,
    /// whichever comes first.
    ///
    /// # Errors
    /// [`EndError::ForeignTicket`] if the ticket belongs to another
    /// coordinator; it comes back inside the error, still owning its
    /// safepoint, and nothing changes.
    pub fn end_unscoped(&self, ticket: SafepointTicket) -> Result<(), EndError> {
        ticket.end_on(self).map_err(EndError::ForeignTicket)
    }

    /// Whether the calling thread, which is not a registered mutator of
    /// this coordinator, may block until a safepoint that another thread
    /// begins here has ended (a collector thread's pause, say): the checks
    /// of [`Coordinator::begin`], for a caller that waits for the same
    /// threads as one that begins. Call it before such a wait, so that a
    /// certain deadlock is a typed error instead of a hang.
    ///
    /// # Errors
    /// As [`Coordinator::begin`]: [`BeginError::CallerIsMutator`],
    /// [`BeginError::Nested`], [`BeginError::InsideHandshake`],
    /// [`BeginError::ManagedElsewhere`],
    /// [`BeginError::StoppedInCallersSafepoint`].
    ///
    /// ```
    /// use hotmem_safepoint::{BeginError, Coordinator};
    /// let (a, b) = (Coordinator::default(), Coordinator::default());
    /// assert_eq!(a.check_wait(), Ok(()));
    /// let me = b.register()?; // managed code on b
    /// assert_eq!(a.check_wait(), Err(BeginError::ManagedElsewhere(me.id())));
    /// # Ok::<(), hotmem_safepoint::RegisterError>(())
    /// ```
    pub fn check_wait(&self) -> Result<(), BeginError> {
        self.shared.check_wait(Caller::Outsider)
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

    /// [`SafeRegion`](crate::SafeRegion)s of this coordinator's threads
    /// that were leaked (`mem::forget`) and found since it was built: each
    /// is found at its thread's next poll, region, safepoint, handshake or
    /// [`MutatorHandle::ensure_managed`], or when the thread unregisters.
    pub fn leaked_regions(&self) -> u64 {
        self.shared.leaked_regions()
    }

    /// Percentiles of every phase over all safepoints so far.
    ///
    /// Waits until every thread stopped in the last safepoint runs again (or
    /// a new safepoint begins), so that its leaving time is included.
    pub fn stats(&self) -> SafepointStats {
        self.shared.records.stats()
    }

    /// Sleep until every thread that stopped in the last safepoint runs
    /// again (or a new safepoint begins). Ending a safepoint does not wait
    /// for that; benchmarks and callers that want the whole cycle do. Never
    /// waits for the caller: the threads it waits for are already woken.
    pub fn wait_until_resumed(&self) {
        self.shared.records.wait_until_resumed();
    }

    /// Forget the statistics gathered so far.
    pub fn reset_stats(&self) {
        self.shared.records.reset();
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
    /// progress; [`HandshakeError::InsideHandshake`] from a handshake
    /// operation; [`HandshakeError::ManagedElsewhere`] if it runs managed
    /// code on another coordinator; [`HandshakeError::OperationPanicked`]
    /// if `op` panicked on the target.
    ///
    /// # Panics
    /// If `op` panics while it runs on the calling thread.
    pub fn handshake<F>(&self, target: MutatorId, op: F) -> Result<HandshakeReport, HandshakeError>
    where
        F: FnOnce(HandshakeContext) + Send + 'static,
    {
        let _ticket = self.shared.start_handshake()?;
        let slot = self
            .shared
            .registry
            .lock()
            .find(target)
            .cloned()
            .ok_or(HandshakeError::NoSuchMutator(target))?;
        let op = Arc::new(HandshakeOp::new(target, Box::new(op)));
        self.shared.request(&slot, Arc::clone(&op));
        self.shared.drive(&slot, &op);
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
        let _ticket = self.shared.start_handshake()?;
        let slots = self.shared.registry.lock().slots.clone();
        let op = Arc::new(op);
        let ops: Vec<_> = slots
            .iter()
            .map(|slot| {
                let op = Arc::clone(&op);
                let queued = Arc::new(HandshakeOp::new(slot.id, Box::new(move |cx| op(cx))));
                self.shared.request(slot, Arc::clone(&queued));
                queued
            })
            .collect();
        let mut reports = Vec::with_capacity(ops.len());
        let mut panicked = None;
        for (slot, queued) in slots.iter().zip(&ops) {
            self.shared.drive(slot, queued);
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
