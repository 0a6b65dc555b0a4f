//! The mutator's side: its handle, the poll, and its state transitions.
//!
//! # The poll
//! [`MutatorHandle::poll`] is one load of the thread's own poll word and one
//! branch that is never taken until a safepoint or handshake arms the word;
//! the work is in a separate `#[cold]` function. Put a poll on every loop
//! back-edge and at every call that may run long, like a compiler would in
//! managed code. On x86-64 the disarmed poll costs about a nanosecond or
//! less (the bench `safepoint/poll` measures it); the word sits on a cache
//! line of its own, so polling never contends with anything until the word
//! is written.
//!
//! # Transitions
//! Entering and leaving native and blocked regions, and the poll's slow
//! path, are the protocol's (`protocol.rs`, with the fence argument); this
//! file has the types that the mutator thread holds.
//!
//! # Beginning a safepoint from a mutator
//! A registered thread may own a safepoint only while it is in a safe state
//! that it cannot leave before the safepoint ends: otherwise it would meet
//! its own armed poll and wait for itself. [`MutatorHandle::safepoint`] and
//! [`SafeRegion::safepoint`] give that by borrowing (the handle, the
//! region) for as long as the safepoint lives; [`Coordinator::begin`] from
//! a registered thread is an error.

use crate::coordinator::Coordinator;
use crate::error::{BeginError, HandshakeError};
use crate::guard::{SafepointGuard, SafepointTicket};
use crate::handshake::{HandshakeContext, HandshakeReport};
use crate::ids::{MutatorId, SafepointId};
use crate::protocol::{Caller, Shared};
use crate::registry::Slot;
use crate::state::ThreadState;
use crate::sync::Arc;
use std::borrow::Cow;
use std::marker::PhantomData;

/// A registered mutator thread's handle: poll through it, and mark native
/// and blocked regions with it. Not `Send`: it belongs to the thread that
/// registered. Dropping it unregisters the thread (also during a panic), and
/// a safepoint in progress stops waiting for it.
pub struct MutatorHandle {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for MutatorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatorHandle")
            .field("id", &self.slot.id)
            .field("state", &self.state())
            .finish()
    }
}

impl MutatorHandle {
    /// Wrap a freshly registered slot and enter managed code.
    pub(crate) fn attach(shared: Arc<Shared>, slot: Arc<Slot>) -> Self {
        shared.leave_safe(&slot);
        MutatorHandle {
            shared,
            slot,
            _not_send: PhantomData,
        }
    }

    /// This registration's id (the target of handshakes).
    pub fn id(&self) -> MutatorId {
        self.slot.id
    }

    /// The thread's published state (`Managed` whenever code can call this).
    pub fn state(&self) -> ThreadState {
        self.slot.state.snapshot().state
    }

    /// The coordinator this thread is registered with.
    pub fn coordinator(&self) -> Coordinator {
        Coordinator {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The safepoint poll: stops here while a safepoint is in progress and
    /// runs handshake operations queued for this thread. One load and one
    /// branch when there is nothing to do.
    #[inline]
    pub fn poll(&self) {
        if self.slot.poll.is_armed() {
            self.poll_slow();
        }
    }

    /// Whether [`MutatorHandle::poll`] would do anything now (a safepoint
    /// or a handshake is pending, or a leaked region is to be left): the
    /// poll's one load, without its work. For an interpreter that caches
    /// heap addresses in registers: `if h.poll_pending() { publish; h.poll();
    /// reload }` keeps the common back-edge to one load and one branch.
    /// Something may become pending right after it answers `false`: it is
    /// seen at the next check, as a poll's would be.
    #[inline]
    pub fn poll_pending(&self) -> bool {
        self.slot.poll.is_armed()
    }

    #[cold]
    #[inline(never)]
    fn poll_slow(&self) {
        if self.slot.poll.in_region() {
            self.shared.leave_leaked_region(&self.slot);
        }
        self.shared.slow_path(&self.slot);
    }

    /// Makes sure the thread is published as running managed code: if a
    /// [`SafeRegion`] of this handle was leaked (`mem::forget`), the thread
    /// leaves its safe state now, as the region's drop would have (stopping
    /// first if a safepoint is in progress), and the leak is counted in
    /// [`Coordinator::leaked_regions`]. One load and one branch otherwise;
    /// unlike [`MutatorHandle::poll`] it never stops for a safepoint that
    /// the thread is not leaving a leaked region into.
    ///
    /// [`MutatorHandle::poll`] does the same. An embedder whose safe API
    /// relies on a region's borrow (nothing that needs managed code can be
    /// called while the region lives) calls this at the start of such an
    /// operation that does not poll: a leaked region no longer borrows the
    /// handle.
    ///
    /// Returns whether it left a leaked region: a safepoint may have run
    /// while the thread was counted as safe, so what it read before this
    /// call is as stale as after any region.
    #[inline]
    pub fn ensure_managed(&self) -> bool {
        if self.slot.poll.in_region() {
            self.shared.leave_leaked_region(&self.slot);
            return true;
        }
        false
    }

    /// Enter native code: safepoints and handshakes no longer wait for this
    /// thread until the returned guard is dropped. Leaving stops the thread
    /// if a safepoint is in progress.
    pub fn enter_native(&mut self) -> SafeRegion<'_> {
        self.enter(ThreadState::Native)
    }

    /// Enter a blocking call (a lock, I/O, a sleep): like
    /// [`MutatorHandle::enter_native`], with state `Blocked`.
    pub fn enter_blocked(&mut self) -> SafeRegion<'_> {
        self.enter(ThreadState::Blocked)
    }

    fn enter(&mut self, state: ThreadState) -> SafeRegion<'_> {
        self.shared.enter_safe(&self.slot, state);
        SafeRegion {
            handle: self,
            state,
        }
    }

    /// Begin a safepoint from this mutator thread: the thread counts as
    /// blocked until the returned guard is dropped, which ends the safepoint
    /// and then returns the thread to managed code.
    ///
    /// # Errors
    /// [`BeginError::InsideHandshake`] from a handshake operation, and the
    /// errors across coordinators of [`Coordinator::begin`] (the thread is
    /// back in managed code then).
    pub fn safepoint(
        &mut self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<MutatorSafepoint<'_>, BeginError> {
        let region = self.enter_blocked();
        let guard = region.begin(name.into())?;
        Ok(MutatorSafepoint {
            guard,
            _region: region,
        })
    }

    /// [`Coordinator::handshake`] from this mutator thread: the thread counts
    /// as blocked while it waits, so a safepoint never waits for it.
    ///
    /// # Errors
    /// As [`Coordinator::handshake`].
    ///
    /// # Panics
    /// If `op` panics while it runs on this thread.
    pub fn handshake<F>(
        &mut self,
        target: MutatorId,
        op: F,
    ) -> Result<HandshakeReport, HandshakeError>
    where
        F: FnOnce(HandshakeContext) + Send + 'static,
    {
        let coordinator = self.coordinator();
        let _blocked = self.enter_blocked();
        coordinator.handshake(target, op)
    }

    /// [`Coordinator::handshake_all`] from this mutator thread (this thread
    /// included: it is safe, so its operation runs right here).
    ///
    /// # Errors
    /// As [`Coordinator::handshake_all`].
    ///
    /// # Panics
    /// If `op` panics while it runs on this thread.
    pub fn handshake_all<F>(&mut self, op: F) -> Result<Vec<HandshakeReport>, HandshakeError>
    where
        F: Fn(HandshakeContext) + Send + Sync + 'static,
    {
        let coordinator = self.coordinator();
        let _blocked = self.enter_blocked();
        coordinator.handshake_all(op)
    }
}

impl Drop for MutatorHandle {
    fn drop(&mut self) {
        self.shared.unregister(&self.slot);
    }
}

/// A native or blocked region: the thread is safe until this is dropped.
///
/// Leaking it (`mem::forget`) ends the borrow of the handle while the
/// thread is still published as safe: a safepoint would not wait for it
/// although it runs again. The handle finds the leak at its next use (a
/// [`poll`](MutatorHandle::poll), [`ensure_managed`](MutatorHandle::ensure_managed),
/// a new region, a safepoint, a handshake, or unregistering), counts it in
/// [`Coordinator::leaked_regions`] and leaves the safe state then, as the
/// region's drop would have. Until then the thread counts as safe: a
/// safepoint that begins between the leak and that use does not wait for
/// it.
///
/// ```
/// use hotmem_safepoint::{Coordinator, ThreadState};
/// let c = Coordinator::default();
/// let mut me = c.register()?;
/// std::mem::forget(me.enter_native());
/// assert_eq!(me.state(), ThreadState::Native); // counted as safe
/// me.poll();
/// assert_eq!(me.state(), ThreadState::Managed);
/// assert_eq!(c.leaked_regions(), 1);
/// # Ok::<(), hotmem_safepoint::RegisterError>(())
/// ```
#[must_use = "the thread leaves the safe state when the region is dropped"]
pub struct SafeRegion<'a> {
    handle: &'a mut MutatorHandle,
    state: ThreadState,
}

impl std::fmt::Debug for SafeRegion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafeRegion")
            .field("mutator", &self.handle.id())
            .field("state", &self.state)
            .finish()
    }
}

impl SafeRegion<'_> {
    /// `Native` or `Blocked`.
    pub fn state(&self) -> ThreadState {
        self.state
    }

    /// Leave the region now (same as dropping it): back to managed code,
    /// after waiting out a safepoint in progress.
    pub fn leave(self) {}

    /// Whether this thread, safe in this region, may block until a
    /// safepoint that another thread begins on the region's coordinator
    /// has ended: [`Coordinator::check_wait`] for a mutator, which the
    /// safepoint does not wait for while the region lives.
    ///
    /// # Errors
    /// [`BeginError::Nested`], [`BeginError::InsideHandshake`],
    /// [`BeginError::ManagedElsewhere`],
    /// [`BeginError::StoppedInCallersSafepoint`] (see [`Coordinator::begin`]).
    pub fn check_wait(&self) -> Result<(), BeginError> {
        let handle = &*self.handle;
        handle.shared.check_wait(Caller::SafeMutator(&handle.slot))
    }

    /// Begin a safepoint from inside this region. The guard borrows the
    /// region, so the thread stays safe until the safepoint has ended (the
    /// rule that lets a registered thread own a safepoint; see
    /// [`MutatorHandle::safepoint`] for the same with its own region).
    ///
    /// # Errors
    /// [`BeginError::InsideHandshake`] from a handshake operation, and the
    /// errors across coordinators of [`Coordinator::begin`].
    pub fn safepoint(
        &mut self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<SafepointGuard<'_>, BeginError> {
        self.begin(name.into()).map(SafepointGuard::new)
    }

    fn begin(&self, name: Cow<'static, str>) -> Result<SafepointTicket, BeginError> {
        let handle = &*self.handle;
        let (id, owner) = handle
            .shared
            .begin(name, Caller::SafeMutator(&handle.slot))?;
        Ok(SafepointTicket::new(handle.coordinator(), id, owner))
    }
}

impl Drop for SafeRegion<'_> {
    fn drop(&mut self) {
        self.handle.shared.leave_safe(&self.handle.slot);
    }
}

/// A safepoint begun by a mutator thread (see [`MutatorHandle::safepoint`]).
#[must_use = "the safepoint ends when this is dropped"]
pub struct MutatorSafepoint<'a> {
    guard: SafepointTicket,
    // Dropped after the guard: the thread returns to managed code only
    // once the safepoint is over.
    _region: SafeRegion<'a>,
}

impl std::fmt::Debug for MutatorSafepoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatorSafepoint")
            .field("guard", &self.guard)
            .finish()
    }
}

impl MutatorSafepoint<'_> {
    /// The safepoint's id.
    pub fn id(&self) -> SafepointId {
        self.guard.id()
    }

    /// End the safepoint; the thread is back in managed code afterwards.
    /// Same as dropping it.
    pub fn end(self) {
        let MutatorSafepoint { guard, _region } = self;
        guard.end();
        drop(_region);
    }
}
