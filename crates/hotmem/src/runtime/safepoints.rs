//! [`Safepoints`]: the runtime's safepoint coordinator, for the embedder's
//! own safepoints and handshakes.
//!
//! A wrapper rather than the coordinator itself: binding callbacks run on
//! the collecting thread and on the GC workers while the collection holds
//! the runtime's safepoint, and a safepoint or handshake requested from
//! there would wait for that collection, which waits for the callback. The
//! coordinator can tell its owner thread apart but not the owner's workers;
//! the runtime can (see `gc::in_collection`), so every request goes through it.

use super::inner::Inner;
use crate::error::SafepointRequestError;
use crate::gc::in_collection;
use hotmem_safepoint::{
    HandshakeContext, HandshakeReport, MutatorId, SafepointGuard, SafepointStats, Strategy,
    ThreadState,
};
use std::borrow::Cow;
use std::fmt;

/// The runtime's safepoint coordinator: stop every attached mutator, or run
/// an operation on each of them at its next poll, and read the statistics.
#[derive(Clone, Copy)]
pub struct Safepoints<'a> {
    inner: &'a Inner,
}

impl<'a> Safepoints<'a> {
    pub(crate) fn new(inner: &'a Inner) -> Self {
        Safepoints { inner }
    }

    fn check(&self) -> Result<(), SafepointRequestError> {
        if in_collection::inside(&self.inner.gc) {
            Err(SafepointRequestError::InsideCollection)
        } else {
            Ok(())
        }
    }

    /// Stops every attached mutator until the guard is dropped (see
    /// [`hotmem_safepoint::Coordinator::begin`]). Waits while a collection
    /// runs. From an attached thread, use a native region's `safepoint`.
    ///
    /// # Errors
    /// [`SafepointRequestError::InsideCollection`] from a binding callback;
    /// [`SafepointRequestError::Begin`] with the coordinator's refusal (the
    /// caller is an attached mutator, owns a safepoint, runs a handshake
    /// operation...).
    pub fn begin(
        &self,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<SafepointGuard<'static>, SafepointRequestError> {
        self.check()?;
        self.inner
            .safepoints
            .begin(name)
            .map_err(SafepointRequestError::Begin)
    }

    /// Runs `op` for mutator `target` at its next poll (or here, if it is in
    /// a safe state), without stopping the others; returns once it ran.
    ///
    /// # Errors
    /// [`SafepointRequestError::InsideCollection`] from a binding callback;
    /// [`SafepointRequestError::Handshake`] with the coordinator's refusal
    /// or the target's panic.
    ///
    /// # Panics
    /// If `op` panics while it runs on the calling thread.
    pub fn handshake<F>(
        &self,
        target: MutatorId,
        op: F,
    ) -> Result<HandshakeReport, SafepointRequestError>
    where
        F: FnOnce(HandshakeContext) + Send + 'static,
    {
        self.check()?;
        self.inner
            .safepoints
            .handshake(target, op)
            .map_err(SafepointRequestError::Handshake)
    }

    /// Runs `op` once for every attached mutator, each at its own next poll.
    ///
    /// # Errors
    /// As [`Safepoints::handshake`].
    ///
    /// # Panics
    /// If `op` panics while it runs on the calling thread.
    pub fn handshake_all<F>(&self, op: F) -> Result<Vec<HandshakeReport>, SafepointRequestError>
    where
        F: Fn(HandshakeContext) + Send + Sync + 'static,
    {
        self.check()?;
        self.inner
            .safepoints
            .handshake_all(op)
            .map_err(SafepointRequestError::Handshake)
    }

    /// Percentiles of every phase over all safepoints so far (collections
    /// included).
    pub fn stats(&self) -> SafepointStats {
        self.inner.safepoints.stats()
    }

    /// How threads are stopped and woken.
    pub fn strategy(&self) -> Strategy {
        self.inner.safepoints.strategy()
    }

    /// How many threads are attached.
    pub fn registered(&self) -> usize {
        self.inner.safepoints.registered()
    }

    /// The attached threads and their states, as of now.
    pub fn mutators(&self) -> Vec<(MutatorId, ThreadState)> {
        self.inner.safepoints.mutators()
    }

    /// Native regions that were leaked (`mem::forget`) and found since the
    /// runtime was built (see
    /// [`Coordinator::leaked_regions`](hotmem_safepoint::Coordinator::leaked_regions)).
    pub fn leaked_regions(&self) -> u64 {
        self.inner.safepoints.leaked_regions()
    }
}

impl fmt::Debug for Safepoints<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Safepoints")
            .field("strategy", &self.strategy())
            .field("registered", &self.registered())
            .finish()
    }
}
