//! The runtime's GC thread, with the concurrent collector: it runs the
//! concurrent cycles that mutators and the sizing policy ask for, while
//! the mutators run. Started at the first request; it holds the runtime
//! only for the length of a cycle, so dropping the last `Runtime` ends it.

use super::inner::Inner;
use crate::GcError;
use crate::gc::{CollectStats, CollectionKind, GcCause, GcRequest};
use parking_lot::{Condvar, Mutex};
use std::sync::{Arc, Weak};
use std::thread::{JoinHandle, ThreadId};

/// What the GC thread was asked and what it did.
#[derive(Default)]
struct Requests {
    /// A cycle asked for and not started yet: why, and of which kind.
    pending: Option<Pending>,
    /// A cycle runs now.
    running: bool,
    /// Cycles finished (successfully or not) so far.
    finished: u64,
    /// The last cycle's outcome.
    last: Option<Result<CollectStats, GcError>>,
    shutdown: bool,
}

/// A cycle asked for: why, and young or full (`None`: as the collector's
/// policy chooses).
#[derive(Copy, Clone)]
struct Pending {
    cause: GcCause,
    kind: Option<CollectionKind>,
}

impl Pending {
    /// One cycle for two requests: full if either asks for full, the
    /// policy's choice if either leaves it to the policy; the first cause.
    fn merge(self, kind: Option<CollectionKind>) -> Pending {
        let kind = match (self.kind, kind) {
            (Some(CollectionKind::Full), _) | (_, Some(CollectionKind::Full)) => {
                Some(CollectionKind::Full)
            }
            (None, _) | (_, None) => None,
            (Some(k), Some(_)) => Some(k),
        };
        Pending { kind, ..self }
    }
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Requests>,
    /// The GC thread waits here for a request.
    wake: Condvar,
    /// Those who asked wait here for cycles to finish.
    done: Condvar,
}

/// The GC thread's handle in the runtime.
#[derive(Default)]
pub(crate) struct GcThread {
    shared: Arc<Shared>,
    thread: Mutex<Option<(JoinHandle<()>, ThreadId)>>,
}

impl GcThread {
    /// Asks for a cycle of `kind` (one that has not started yet is not
    /// asked for twice: see [`Pending::merge`]) and returns the number of
    /// finished cycles to wait past: the cycle that serves this request has
    /// finished once more than that many have.
    pub(crate) fn request(
        &self,
        inner: &Arc<Inner>,
        cause: GcCause,
        kind: Option<CollectionKind>,
    ) -> u64 {
        self.start(inner);
        let mut r = self.shared.requests.lock();
        r.pending = Some(match r.pending {
            Some(p) => p.merge(kind),
            None => Pending { cause, kind },
        });
        self.shared.wake.notify_one();
        // A cycle that is running started before this request: it may have
        // missed what the caller needs, so wait for the next one as well.
        r.finished + u64::from(r.running)
    }

    /// Asks for a cycle unless one runs or is asked for already (the
    /// pacing trigger: one cycle at a time).
    pub(crate) fn request_if_idle(&self, inner: &Arc<Inner>, cause: GcCause) {
        {
            let r = self.shared.requests.lock();
            if r.running || r.pending.is_some() {
                return;
            }
        }
        self.request(inner, cause, None);
    }

    /// Cycles finished so far.
    pub(crate) fn finished(&self) -> u64 {
        self.shared.requests.lock().finished
    }

    /// Waits until more than `finished` cycles have finished; the outcome
    /// of the last one.
    pub(crate) fn wait_past(&self, finished: u64) -> Result<CollectStats, GcError> {
        let mut r = self.shared.requests.lock();
        while r.finished <= finished && !r.shutdown {
            self.shared.done.wait(&mut r);
        }
        r.last.clone().unwrap_or(Err(GcError::InsideCollection))
    }

    /// Starts the thread at the first request.
    fn start(&self, inner: &Arc<Inner>) {
        let mut t = self.thread.lock();
        if t.is_some() {
            return;
        }
        let shared = self.shared.clone();
        let weak = Arc::downgrade(inner);
        let handle = std::thread::Builder::new()
            .name("hotmem-gc".into())
            .spawn(move || run(&shared, &weak))
            .expect("cannot start the GC thread");
        let id = handle.thread().id();
        *t = Some((handle, id));
    }

    /// Ends the thread (when the runtime is dropped). On the GC thread
    /// itself (it held the last reference to the runtime) it is detached.
    pub(crate) fn stop(&self) {
        self.shared.requests.lock().shutdown = true;
        self.shared.wake.notify_all();
        self.shared.done.notify_all();
        if let Some((handle, id)) = self.thread.lock().take() {
            if std::thread::current().id() != id {
                let _ = handle.join();
            }
        }
    }
}

/// The GC thread: a cycle for each request, until shutdown or the runtime
/// is gone.
fn run(shared: &Shared, inner: &Weak<Inner>) {
    loop {
        let pending = {
            let mut r = shared.requests.lock();
            loop {
                if r.shutdown {
                    return;
                }
                if let Some(pending) = r.pending.take() {
                    r.running = true;
                    break pending;
                }
                shared.wake.wait(&mut r);
            }
        };
        let outcome = match inner.upgrade() {
            Some(inner) => {
                let request = GcRequest {
                    cause: pending.cause,
                    kind: pending.kind,
                    seen_epoch: None,
                };
                inner
                    .run_collector(request, None)
                    .map(|s| s.expect("an unconditional cycle always runs"))
            }
            None => return,
        };
        let mut r = shared.requests.lock();
        r.running = false;
        r.finished += 1;
        r.last = Some(outcome);
        shared.done.notify_all();
    }
}
