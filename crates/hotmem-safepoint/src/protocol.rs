//! The protocol: every state transition of safepoints and handshakes, and
//! the fences that make them sound, in this one file. The types people use
//! ([`Coordinator`](crate::Coordinator), [`MutatorHandle`](crate::MutatorHandle),
//! the guards) only call in here.
//!
//! # The Dekker pairs
//! Every decision "does this thread need to stop / be waited for?" is made
//! by two parties that each write one word, issue a `SeqCst` fence, and then
//! read the other's word. With a `SeqCst` fence between the write and the
//! read on both sides, at least one of them sees the other's write:
//!
//! | writer of the request            | fence | reads       | thread            | fence | reads     |
//! |----------------------------------|-------|-------------|-------------------|-------|-----------|
//! | [`Shared::arm`]: arm polls | yes | state words | [`Shared::enter_safe`] / [`Shared::leave_safe`]: publish state | yes | poll word |
//! | handshake push: arm poll bit     | yes   | state word  | same as above     | yes   | poll word |
//!
//! * Safepoint: the coordinator arms every poll word, fences, then reads each
//!   state. A thread it sees in managed code will see its armed poll (at its
//!   next poll or its next transition). A thread it sees safe counts as
//!   stopped; if that thread leaves the safe state it publishes `Managed`,
//!   fences, reads its armed poll word and blocks before running managed
//!   code. Each thread is counted at most once per safepoint, by whoever
//!   claims it first ([`Slot::claim_accounting`]).
//! * A thread seen `AtSafepoint` of an *earlier* id is still on its way out
//!   of that safepoint: every way out publishes `Managed`, fences and re-reads
//!   the poll word, so it counts as safe.
//! * Handshake: the requester queues the operation and arms the poll bit,
//!   fences, reads the target's state; the target publishes a safe state,
//!   fences, reads its poll word. Either the target runs the queue at its
//!   transition or poll, or the requester sees it safe and runs the queue
//!   for it under the target's processing lock, which the target must take
//!   before it can leave the safe state with work queued. An operation is
//!   popped under the queue lock before it runs: exactly once.
//!
//! # Waiting
//! The coordinator sleeps on `pending` (threads not yet counted, plus its
//! own token, so the count cannot reach zero while it is still looking);
//! whoever brings it to zero wakes it, with a system call only if it flagged
//! itself asleep (`pending.rs`). Before it sleeps it spins briefly, as
//! `parking_lot`'s own locks do. Stopped threads spin briefly too, then
//! sleep on the wait barrier keyed by the id.
//!
//! # Ending
//! `end` does all of its bookkeeping (disarming, the record, the operation
//! gate) first and wakes last, and the woken threads take no lock that it
//! holds: with more threads than cores the threads it wakes take its CPU.
//! Stopped threads spin briefly before they sleep; if one is still awake
//! it relays the wake-up to the sleepers and the coordinator makes no
//! system call at all, otherwise the coordinator wakes one thread, which
//! relays (see `barrier.rs`).
//!
//! # Handshakes with a thread that is not running
//! With more busy threads than cores, a target in managed code may wait
//! for a whole round of time slices before it polls. After a short grace
//! period the requester arms [`YIELD_BIT`](crate::poll::YIELD_BIT) on the
//! other threads' poll words; while any requester is waiting they yield
//! their CPU at each poll, so the scheduler runs the target. The bit is
//! advisory: it never stops a thread and never decides who runs an
//! operation.
//!
//! # Who may wait for what
//! Nothing here waits for a party that only the caller can release: the
//! caller's role is checked first ([`OperationGate::check`], and the
//! registry for registered threads), and such calls return typed errors.
//! Across coordinators, the two cycles that are certain when a `begin` or
//! a handshake is asked for are refused the same way (`elsewhere.rs`).

use crate::barrier::{WaitBarrier, Wake};
use crate::elsewhere;
use crate::error::{BeginError, HandshakeError, RegisterError};
use crate::handshake::{Executor, HandshakeOp};
use crate::ids::SafepointId;
use crate::legacy::{self, LegacyGate};
use crate::operation::{Busy, HandshakeTicket, OperationGate};
use crate::options::{SafepointLog, Strategy};
use crate::pending::Pending;
use crate::records::Records;
use crate::registry::{OwnerToken, Registry, Slot};
use crate::state::ThreadState;
use crate::sync::{
    Arc, AtomicU32, AtomicU64, CachePadded, Mutex, MutexGuard, Ordering, fence, thread,
};
use std::borrow::Cow;
use std::num::NonZero;
use std::time::Duration;

/// How the coordinator waits for the last threads to reach a safepoint
/// before it sleeps on `pending`: (rounds of pauses, yields). Spinning and
/// yielding first means a safepoint reached within some microseconds costs
/// no wake-up, and the wake-up is the expensive part of reaching: on a
/// 16-core VM a sleeping coordinator took 50-60 us to run again after the
/// last thread counted itself in.
///
/// * Every thread it waits for has a CPU of its own: six rounds of pauses
///   (2 to 64), then ten yields. With pauses alone the p99 of reaching was
///   63 us at 2 threads on 16 cores, against 19 us for a
///   `parking_lot::RwLock` writer, which spins and yields before it parks.
/// * More threads than the other CPUs: `parking_lot`'s own schedule (the
///   one its `RwLock` writer and our wait barrier use), three short rounds,
///   then seven yields. Here the coordinator's CPU is one a thread that
///   has not reached its poll is waiting for: the yields hand it over, and
///   long spinning only delays it. On 2 cores with 2 busy threads (the
///   case of 16 threads on 16 cores in small), `safepoint_latency --threads
///   2`: the median ratio to the `RwLock` in the same run went from 1.61 to
///   1.09 for reaching p50 and from 1.76 to 1.00 for its p99 (18 runs
///   with six rounds and no yield, 40 runs with this schedule).
fn coordinator_schedule(spare: SpareCpus) -> (u32, u32) {
    match spare {
        SpareCpus::Yes => (6, 10),
        SpareCpus::No => (3, 7),
    }
}

/// Whether the machine has a CPU for the coordinator and every thread it
/// waits for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SpareCpus {
    Yes,
    No,
}

/// Who is beginning a safepoint.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Caller<'a> {
    /// Through [`Coordinator::begin`](crate::Coordinator::begin): must not be
    /// a registered thread of this coordinator.
    Outsider,
    /// A registered thread in a safe region that stays borrowed while the
    /// safepoint lives (the region cannot end before the safepoint does).
    SafeMutator(&'a Slot),
}

/// The state every handle of one coordinator shares.
pub(crate) struct Shared {
    pub(crate) strategy: Strategy,
    pub(crate) registry: Mutex<Registry>,
    pub(crate) operations: OperationGate,
    /// Wait-barrier strategy: threads not yet counted, plus the
    /// coordinator's own token.
    pending: CachePadded<Pending>,
    barrier: WaitBarrier,
    gate: LegacyGate,
    pub(crate) records: Records,
    /// The legacy coordinator's list of threads still running.
    legacy_scratch: Mutex<Vec<Arc<Slot>>>,
    /// CPUs available to the process (the legacy back-off spins only on a
    /// multiprocessor, as HotSpot's did).
    cpus: usize,
    /// Handshake requesters that asked the other threads to yield.
    urgent: CachePadded<AtomicU32>,
    /// Safe regions found leaked (see `poll.rs`, the region bit).
    leaked_regions: AtomicU64,
}

/// How long a handshake requester waits for a managed target before it
/// asks the other threads to yield their CPUs to it.
const HANDSHAKE_GRACE: Duration = Duration::from_micros(50);

impl Shared {
    pub(crate) fn new(strategy: Strategy, log: SafepointLog) -> Self {
        let cpus = thread::available_parallelism().map_or(1, NonZero::get);
        Shared {
            strategy,
            registry: Mutex::new(Registry::default()),
            operations: OperationGate::new(),
            pending: CachePadded::new(Pending::new()),
            barrier: WaitBarrier::new(),
            gate: LegacyGate::new(),
            records: Records::new(strategy, log, cpus),
            legacy_scratch: Mutex::new(Vec::new()),
            cpus,
            urgent: CachePadded::new(AtomicU32::new(0)),
            leaked_regions: AtomicU64::new(0),
        }
    }

    /// `slot` is safe while `id` may be in progress: count it, once.
    fn count_safe(&self, slot: &Slot, id: SafepointId) {
        if self.strategy == Strategy::WaitBarrier && slot.claim_accounting(id) {
            // The last one in wakes the coordinator if it sleeps.
            self.pending.arrive();
        }
    }

    // ---- registration -------------------------------------------------

    /// Add the calling thread's slot (safe, `Blocked`); the caller then
    /// leaves the safe state through [`Shared::leave_safe`].
    pub(crate) fn register(&self) -> Result<Arc<Slot>, RegisterError> {
        let me = thread::current().id();
        // Registering leaves a safe state, which waits out the safepoint in
        // progress: never for one the caller owns.
        self.operations.check(me).map_err(|busy| match busy {
            Busy::OwnsSafepoint(id) => RegisterError::OwnsSafepoint(id),
            Busy::RunsHandshakeOp => RegisterError::InsideHandshake,
        })?;
        let mut registry = self.registry.lock();
        if let Some(existing) = registry.owned_by(me) {
            return Err(RegisterError::AlreadyRegistered(existing.id));
        }
        let slot = registry.insert(me, elsewhere::record());
        drop(registry);
        elsewhere::registered(self.key(), &slot);
        Ok(slot)
    }

    /// The thread of `slot` unregisters (its handle is dropped).
    pub(crate) fn unregister(&self, slot: &Arc<Slot>) {
        self.enter_safe(slot, ThreadState::Exiting);
        self.registry.lock().remove(slot);
        elsewhere::unregistered(self.key(), slot);
    }

    /// This coordinator's identity among the ones a thread is registered
    /// with (its address: it lives while any handle, guard or ticket of
    /// it does).
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    // ---- waits for another thread's safepoint ------------------------

    /// Whether the calling thread may block until a safepoint that another
    /// thread begins on this coordinator has ended (a GC thread's pause):
    /// the checks of [`Shared::begin`] for such a caller, which would wait
    /// for the same threads.
    pub(crate) fn check_wait(&self, caller: Caller<'_>) -> Result<(), BeginError> {
        let me = thread::current().id();
        match caller {
            Caller::Outsider => {
                if let Some(slot) = self.registry.lock().owned_by(me) {
                    return Err(BeginError::CallerIsMutator(slot.id));
                }
            }
            Caller::SafeMutator(slot) => {
                debug_assert!(slot.owner == me && slot.state.snapshot().state.is_safe());
            }
        }
        self.check_elsewhere()?;
        self.operations.check(me).map_err(|busy| match busy {
            Busy::OwnsSafepoint(current) => BeginError::Nested { current },
            Busy::RunsHandshakeOp => BeginError::InsideHandshake,
        })
    }

    /// The waits that another coordinator would close into a cycle (see
    /// `elsewhere`).
    fn check_elsewhere(&self) -> Result<(), BeginError> {
        if let Some(elsewhere) = elsewhere::managed_elsewhere(self.key()) {
            return Err(BeginError::ManagedElsewhere(elsewhere));
        }
        let stopped = elsewhere::stopped_in_mine(self.key(), || self.registry.lock().slots.clone());
        if let Some((mutator, owned)) = stopped {
            return Err(BeginError::StoppedInCallersSafepoint { mutator, owned });
        }
        Ok(())
    }

    // ---- safepoints ---------------------------------------------------

    /// Stop every registered thread; returns when all are safe, with the
    /// id and the owner token that alone can end it.
    pub(crate) fn begin(
        &self,
        name: Cow<'static, str>,
        caller: Caller<'_>,
    ) -> Result<(SafepointId, Arc<OwnerToken>), BeginError> {
        let me = thread::current().id();
        match caller {
            Caller::Outsider => {
                // A registered thread could leave its safe state while its
                // guard lives and wait for itself: only a borrowed region
                // may begin (`SafeRegion::safepoint`).
                if let Some(slot) = self.registry.lock().owned_by(me) {
                    return Err(BeginError::CallerIsMutator(slot.id));
                }
            }
            Caller::SafeMutator(slot) => {
                debug_assert!(slot.owner == me && slot.state.snapshot().state.is_safe());
            }
        }
        self.check_elsewhere()?;
        self.operations
            .start_safepoint(me)
            .map_err(|busy| match busy {
                Busy::OwnsSafepoint(current) => BeginError::Nested { current },
                Busy::RunsHandshakeOp => BeginError::InsideHandshake,
            })?;
        let begun = self.records.now();

        let mut registry = self.registry.lock();
        let Some(counter) = registry.counter.checked_add(1) else {
            drop(registry);
            self.operations.finish_safepoint();
            return Err(BeginError::Exhausted);
        };
        let Some(id) = SafepointId::from_counter(counter) else {
            drop(registry);
            self.operations.finish_safepoint();
            return Err(BeginError::Exhausted);
        };
        registry.counter = counter;
        // Threads of the previous safepoint that have not run yet are
        // stopped in this one now: its leaving phase ends here.
        self.records.settle_previous(begun);
        self.records.leaving.open(id);
        registry.in_progress = Some(id);
        let threads = u32::try_from(registry.slots.len()).unwrap_or(u32::MAX);
        match self.strategy {
            Strategy::WaitBarrier => self.arm(&registry, id, threads),
            Strategy::Legacy => self.arm_legacy(&registry, id),
        }
        // The threads are on their way to their polls: the bookkeeping that
        // none of them needs overlaps their way there. With a CPU per
        // thread, on 2 cores and 1 thread (`safepoint_latency --threads
        // 1`, 18 alternating runs), reaching p50 went from 2.2-2.5 us to
        // 1.4 us when the owner token's allocation and `publish_id` moved
        // here from before the arming.
        let owner = Arc::new(OwnerToken);
        registry.owner = Some(Arc::clone(&owner));
        match self.strategy {
            Strategy::WaitBarrier => self.wait_until_counted(registry, threads),
            Strategy::Legacy => self.wait_until_safe_legacy(registry),
        }
        // Only the owner's own calls read the id (to say which safepoint
        // they would nest in), and the owner is here.
        self.operations.publish_id(id);
        elsewhere::owns(self.key(), id);
        self.records.safe(id, name, threads, begun);
        Ok((id, owner))
    }

    /// Wait-barrier strategy: open the count for the `threads` registered
    /// threads, arm the barrier and every poll, and count the threads
    /// already safe (under the registry lock, so a thread registering now
    /// is armed and counted at birth instead).
    fn arm(&self, registry: &Registry, id: SafepointId, threads: u32) {
        self.pending.open(threads);
        // The barrier is armed before any poll word: a thread that sees an
        // armed poll finds an armed barrier.
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
    }

    /// Wait-barrier strategy, after [`Shared::arm`]: release the registry,
    /// give up the coordinator's token and wait until every thread counted.
    fn wait_until_counted(&self, registry: MutexGuard<'_, Registry>, threads: u32) {
        drop(registry);
        // The coordinator's token: if it was not the last, wait.
        if !self.pending.arrive() {
            let spare = if (threads as usize) < self.cpus {
                SpareCpus::Yes
            } else {
                SpareCpus::No
            };
            let (spins, yields) = coordinator_schedule(spare);
            self.pending.wait_until_zero(spins, yields);
        }
    }

    /// Legacy strategy: close the gate and arm every poll.
    fn arm_legacy(&self, registry: &Registry, id: SafepointId) {
        self.gate.close(id);
        for slot in &registry.slots {
            slot.poll.arm_safepoint(id);
        }
        fence(Ordering::SeqCst);
    }

    /// Legacy strategy, after [`Shared::arm_legacy`]: poll the thread list
    /// with JDK 11's back-off until every thread is safe.
    fn wait_until_safe_legacy(&self, registry: MutexGuard<'_, Registry>) {
        let mut threads = self.legacy_scratch.lock();
        threads.clone_from(&registry.slots);
        drop(registry);
        legacy::wait_until_safe(&mut threads, self.cpus);
        threads.clear();
    }

    /// End the safepoint that `owner` was issued for and wake every stopped
    /// thread. False (and nothing changes) unless `owner` is the live
    /// safepoint's token of this coordinator.
    ///
    /// Everything but the wake-up comes first: a woken thread may take this
    /// thread's CPU, and nothing after the wake-up waits for it.
    pub(crate) fn end(&self, owner: &Arc<OwnerToken>) -> bool {
        let mut registry = self.registry.lock();
        let (Some(id), Some(live)) = (registry.in_progress, registry.owner.as_ref()) else {
            return false;
        };
        if !Arc::ptr_eq(live, owner) {
            return false;
        }
        let ended = self.records.now();
        registry.in_progress = None;
        registry.owner = None;
        registry.counter += 1; // odd -> even: cannot overflow
        for slot in &registry.slots {
            slot.poll.disarm_safepoint();
        }
        drop(registry);
        self.records.ended(id, ended);
        if self.records.leaving.close_if_empty(id) {
            // Nobody is stopped: nobody to wait for. A thread still on its
            // way in finds the count closed and the barrier still armed; it
            // sleeps until the wake-up below.
            self.records.finish_leaving(id, self.records.now());
        }
        // Disarmed before the gate opens, so the next safepoint finds the
        // barrier free; a thread of this one woken after the next one armed
        // it sees a different tag and leaves all the same.
        let wake = match self.strategy {
            Strategy::WaitBarrier => self.barrier.disarm(),
            Strategy::Legacy => {
                self.gate.open();
                Wake::One
            }
        };
        self.operations.finish_safepoint();
        // `end` runs on the owner's thread (the guard and the ticket stay
        // there).
        elsewhere::disowns(self.key());
        match (self.strategy, wake) {
            (_, Wake::Relayed) => {}
            (Strategy::WaitBarrier, Wake::One) => self.barrier.wake_first(),
            (Strategy::Legacy, Wake::One) => self.gate.wake(),
        }
        true
    }

    // ---- the mutator's transitions ------------------------------------

    /// Managed -> `state` (a safe one). A thread whose region bit is set
    /// already never left the safe state it was in (a leaked region): it is
    /// counted in [`Shared::leaked_regions`].
    pub(crate) fn enter_safe(&self, slot: &Slot, state: ThreadState) {
        debug_assert!(state.is_safe());
        slot.state.set(state);
        fence(Ordering::SeqCst);
        let request = slot.poll.enter_region();
        if request.region {
            self.count_leaked_region();
        }
        if let Some(id) = request.safepoint {
            self.count_safe(slot, id);
        }
        if request.handshake {
            self.process_by_target(slot);
        }
    }

    /// A safe state -> Managed, stopping first if a safepoint is in
    /// progress.
    pub(crate) fn leave_safe(&self, slot: &Slot) {
        slot.state.set(ThreadState::Managed);
        fence(Ordering::SeqCst);
        let request = slot.poll.leave_region();
        if request.safepoint.is_some() || request.handshake {
            self.slow_path(slot);
        }
    }

    /// The thread of `slot` runs again while its published state is still
    /// the safe one of a region that was leaked (`mem::forget`): count it,
    /// and leave the safe state as the region's drop would have, stopping
    /// if a safepoint is in progress.
    #[cold]
    #[inline(never)]
    pub(crate) fn leave_leaked_region(&self, slot: &Slot) {
        self.count_leaked_region();
        self.leave_safe(slot);
    }

    #[cold]
    fn count_leaked_region(&self) {
        self.leaked_regions.fetch_add(1, Ordering::Relaxed);
    }

    /// Regions found leaked so far.
    pub(crate) fn leaked_regions(&self) -> u64 {
        self.leaked_regions.load(Ordering::Relaxed)
    }

    /// Everything an armed poll word asks for, until it is disarmed.
    #[cold]
    #[inline(never)]
    pub(crate) fn slow_path(&self, slot: &Slot) {
        loop {
            let request = slot.poll.request();
            if request.handshake {
                self.process_by_target(slot);
            }
            match request.safepoint {
                Some(id) => self.block_at_safepoint(slot, id),
                None if request.handshake => {}
                None => {
                    if request.yield_cpu {
                        self.yield_for_handshake(slot);
                    }
                    return;
                }
            }
        }
    }

    /// A handshake waits for a thread that is not running: give up the
    /// CPU. Once none waits, clear the bit (re-armed if a requester came
    /// in between: its arm and our clear are ordered by the fence).
    #[cold]
    fn yield_for_handshake(&self, slot: &Slot) {
        if self.urgent.load(Ordering::SeqCst) > 0 {
            thread::yield_now();
            return;
        }
        slot.poll.disarm_yield();
        fence(Ordering::SeqCst);
        if self.urgent.load(Ordering::SeqCst) > 0 {
            slot.poll.arm_yield();
        }
    }

    /// Stop until safepoint `id` ends. Returns in state `Managed`; the
    /// caller re-reads the poll word (a later safepoint may be armed).
    fn block_at_safepoint(&self, slot: &Slot, id: SafepointId) {
        let leaving = &self.records.leaving;
        // Joined before the state says "safe", so the coordinator that sees
        // the state also finds this thread among the ones to wake.
        let joined = leaving.join(id);
        slot.state.set_at_safepoint(id);
        match self.strategy {
            Strategy::WaitBarrier => {
                self.count_safe(slot, id);
                self.barrier.wait(id);
            }
            Strategy::Legacy => self.gate.wait(id),
        }
        if joined && leaving.leave(id) == crate::leaving::Departure::Last {
            self.records.finish_leaving(id, self.records.now());
        }
        slot.state.set(ThreadState::Managed);
        // The caller's loop re-reads the poll word after this fence.
        fence(Ordering::SeqCst);
    }

    // ---- handshakes ---------------------------------------------------

    /// Check that the calling thread may request a handshake and take the
    /// ticket that keeps safepoints out while it lasts.
    pub(crate) fn start_handshake(&self) -> Result<HandshakeTicket<'_>, HandshakeError> {
        let me = thread::current().id();
        if let Some(slot) = self.registry.lock().owned_by(me) {
            if slot.state.snapshot().state == ThreadState::Managed {
                return Err(HandshakeError::CallerIsManaged(slot.id));
            }
        }
        if let Some(elsewhere) = elsewhere::managed_elsewhere(self.key()) {
            return Err(HandshakeError::ManagedElsewhere(elsewhere));
        }
        self.operations
            .start_handshake(me)
            .map_err(|busy| match busy {
                Busy::OwnsSafepoint(id) => HandshakeError::InsideSafepoint(id),
                Busy::RunsHandshakeOp => HandshakeError::InsideHandshake,
            })
    }

    /// Queue `op` for `slot`'s thread and arm its poll bit.
    pub(crate) fn request(&self, slot: &Slot, op: Arc<HandshakeOp>) {
        slot.handshakes.push(&slot.poll, op);
    }

    /// The requester's side: see `op` (queued on `slot`) through, running
    /// it here if the target is safe, sleeping until the target ran it
    /// otherwise.
    ///
    /// A target in managed code that has not run the operation after
    /// [`HANDSHAKE_GRACE`] is probably waiting for a CPU: the other threads
    /// are asked to yield theirs until the operation has run.
    pub(crate) fn drive(&self, slot: &Slot, op: &HandshakeOp) {
        let mut urged = false;
        let mut waited = false;
        while !op.is_done() {
            // Armed (when queued), fence, read the state: against the
            // target's publish, fence, read the poll word.
            fence(Ordering::SeqCst);
            let here = slot.state.snapshot().state.is_safe() && self.process_by_requester(slot);
            if here {
                continue;
            }
            if !waited {
                waited = true;
                op.wait_at_most(HANDSHAKE_GRACE);
                continue;
            }
            if !urged {
                urged = true;
                self.urge_others(slot);
            }
            op.wait_a_while();
        }
        if urged {
            self.urgent.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Ask every thread but `target` to yield its CPU at its next polls
    /// (counted in `urgent` first, so a thread that clears its bit re-arms
    /// it; see [`Shared::yield_for_handshake`]).
    #[cold]
    fn urge_others(&self, target: &Slot) {
        self.urgent.fetch_add(1, Ordering::SeqCst);
        for slot in &self.registry.lock().slots {
            if !std::ptr::eq(&**slot, target) {
                slot.poll.arm_yield();
            }
        }
    }

    /// The target processes its own queue (slow path or a transition into
    /// a safe state).
    fn process_by_target(&self, slot: &Slot) {
        let _processing = slot.handshakes.processing.lock();
        self.drain(slot, Executor::Target);
    }

    /// A requester processes the queue of a safe target; the state is
    /// re-read under the processing lock, which the target needs before it
    /// can leave the safe state with work queued.
    fn process_by_requester(&self, slot: &Slot) -> bool {
        let _processing = slot.handshakes.processing.lock();
        fence(Ordering::SeqCst);
        if !slot.state.snapshot().state.is_safe() {
            return false;
        }
        self.drain(slot, Executor::Requester);
        true
    }

    /// Run everything queued on `slot` (the caller holds its processing
    /// lock). While an operation runs, its thread is marked as running one,
    /// so that it cannot begin, register or request a handshake and wait
    /// for itself.
    fn drain(&self, slot: &Slot, executor: Executor) {
        while let Some(op) = slot.handshakes.pop_or_disarm(&slot.poll) {
            let _running = self.operations.running_op();
            op.run(executor);
        }
    }
}
