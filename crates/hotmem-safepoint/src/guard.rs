//! Owning a safepoint: the guard and the ticket that `begin` returns. Only
//! they can end it.

use crate::coordinator::Coordinator;
use crate::ids::SafepointId;
use crate::registry::OwnerToken;
use crate::sync::Arc;
use std::marker::PhantomData;

/// The one capability to end a safepoint in progress, for embedders that
/// cannot keep a scoped [`SafepointGuard`] (a C API, a state machine):
/// returned by [`Coordinator::begin_unscoped`], consumed by
/// [`Coordinator::end_unscoped`] or [`SafepointTicket::end`]. Dropping it
/// ends the safepoint too, so a lost ticket never leaves the world stopped.
///
/// It is the only way to end its safepoint: it has no public constructor,
/// is neither `Clone` nor `Copy`, and ending checks it by identity against
/// the coordinator's live safepoint, never by id. Like the guard it belongs
/// to the thread that began the safepoint (it is not `Send`): that thread
/// is the safepoint's owner, which the coordinator uses to refuse calls
/// that would wait for the owner itself (a nested `begin`, a handshake, a
/// `register`).
///
/// Leaking it (`mem::forget`) leaks the safepoint, as a leaked `MutexGuard`
/// leaks its lock: the world stays stopped and the next `begin` waits.
/// That is safe, and the only way to keep a safepoint past its owner.
///
/// ```
/// use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let ticket = c.begin_unscoped("from C")?;
/// assert_eq!(c.in_progress(), Some(ticket.id()));
/// c.end_unscoped(ticket)?;
/// assert_eq!(c.in_progress(), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// An id does not end a safepoint:
/// ```compile_fail,E0308
/// # use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let _ticket = c.begin_unscoped("x").unwrap();
/// c.end_unscoped(c.in_progress().unwrap()).unwrap();
/// ```
/// A ticket cannot be made by hand:
/// ```compile_fail,E0451
/// # use hotmem_safepoint::SafepointTicket;
/// let forged = SafepointTicket { coordinator: todo!(), owner: None, id: todo!(), _not_send: std::marker::PhantomData };
/// ```
/// nor cloned:
/// ```compile_fail,E0599
/// # use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let ticket = c.begin_unscoped("x").unwrap();
/// let twin = ticket.clone();
/// ```
/// nor sent to another thread:
/// ```compile_fail,E0277
/// # use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let ticket = c.begin_unscoped("x").unwrap();
/// std::thread::spawn(move || ticket.end());
/// ```
#[must_use = "dropping the ticket ends the safepoint"]
pub struct SafepointTicket {
    coordinator: Coordinator,
    /// `None` once ended.
    owner: Option<Arc<OwnerToken>>,
    id: SafepointId,
    // The thread that began the safepoint owns it.
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for SafepointTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafepointTicket")
            .field("id", &self.id)
            .finish()
    }
}

impl SafepointTicket {
    pub(crate) fn new(coordinator: Coordinator, id: SafepointId, owner: Arc<OwnerToken>) -> Self {
        SafepointTicket {
            coordinator,
            owner: Some(owner),
            id,
            _not_send: PhantomData,
        }
    }

    /// The safepoint's id.
    pub fn id(&self) -> SafepointId {
        self.id
    }

    /// The coordinator the safepoint belongs to.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    /// End the safepoint and wake every stopped thread (see
    /// [`Coordinator::end_unscoped`]).
    pub fn end(mut self) {
        self.end_now();
    }

    /// End through `coordinator`, which must be the ticket's: otherwise the
    /// ticket comes back unchanged.
    pub(crate) fn end_on(mut self, coordinator: &Coordinator) -> Result<(), Self> {
        let ended = match &self.owner {
            Some(owner) => coordinator.shared.end(owner),
            None => true,
        };
        if ended {
            self.owner = None;
            Ok(())
        } else {
            Err(self)
        }
    }

    fn end_now(&mut self) {
        if let Some(owner) = self.owner.take() {
            // The ticket is the live safepoint's owner: nobody else can end
            // it, so this always ends it.
            let ended = self.coordinator.shared.end(&owner);
            debug_assert!(ended, "a live ticket ends its safepoint");
        }
    }
}

impl Drop for SafepointTicket {
    fn drop(&mut self) {
        self.end_now();
    }
}

/// A safepoint in progress: every registered thread is stopped (or in a
/// safe state it cannot leave) while this lives. Dropping it ends the
/// safepoint; so does [`SafepointGuard::end`].
///
/// `'a` is `'static` for [`Coordinator::begin`]; a guard from
/// [`SafeRegion::safepoint`](crate::SafeRegion::safepoint) borrows the
/// region, so the thread cannot leave it (and stop in its own safepoint)
/// while the guard lives:
/// ```compile_fail,E0505
/// # use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let mut me = c.register().unwrap();
/// let mut region = me.enter_native();
/// let guard = region.safepoint("x").unwrap();
/// drop(region); // back to managed code while owning the safepoint
/// drop(guard);
/// ```
/// The guard stays on the thread that began the safepoint:
/// ```compile_fail,E0277
/// # use hotmem_safepoint::{Coordinator, Strategy};
/// let c = Coordinator::new(Strategy::WaitBarrier);
/// let guard = c.begin("x").unwrap();
/// std::thread::spawn(move || drop(guard));
/// ```
#[must_use = "the safepoint ends when the guard is dropped"]
pub struct SafepointGuard<'a> {
    ticket: SafepointTicket,
    _region: PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for SafepointGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafepointGuard")
            .field("id", &self.ticket.id)
            .finish()
    }
}

impl SafepointGuard<'_> {
    pub(crate) fn new(ticket: SafepointTicket) -> Self {
        SafepointGuard {
            ticket,
            _region: PhantomData,
        }
    }

    /// The safepoint's id.
    pub fn id(&self) -> SafepointId {
        self.ticket.id
    }

    /// The coordinator the safepoint belongs to.
    pub fn coordinator(&self) -> &Coordinator {
        &self.ticket.coordinator
    }

    /// End the safepoint and wake every stopped thread (the timings go to
    /// [`Coordinator::stats`]). Same as dropping the guard.
    pub fn end(self) {
        self.ticket.end();
    }
}
