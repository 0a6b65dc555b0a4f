//! [`PlainPool`]: GC workers without NUMA, started at the first phase that
//! needs them and kept for the runtime's life, so that a collection's
//! phases do not pay a thread start each (a small collection's pause was
//! twice as long with a thread per worker per phase).

use crate::thread_stack::ThreadStack;
use hotmem_nmt::Tracker;
use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A phase's work as the workers see it: a call that takes items from the
/// phase's queue until it is empty. Its lifetime is erased: the pointer is
/// valid while the phase runs, which [`PlainPool::run`] waits out.
#[derive(Clone, Copy)]
struct JobRef(*const (dyn Fn() + Sync + 'static));

// SAFETY: a `JobRef` points at a `Sync` closure, and it is used only while
// the phase that owns the closure waits for every worker to finish with it
// (see `PlainPool::run`).
unsafe impl Send for JobRef {}

/// What the workers and the phase's caller share.
struct State {
    /// The phase being run.
    job: Option<JobRef>,
    /// Phases started so far: a worker runs each one once.
    phase: u64,
    /// Workers still in the current phase.
    running: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Workers wait here for a phase.
    wake: Condvar,
    /// The caller waits here for the phase's end.
    done: Condvar,
}

/// Persistent unbound GC worker threads.
pub(crate) struct PlainPool {
    threads: usize,
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    /// Each worker records its stack here (tag Thread Stack) while it lives.
    nmt: Option<Arc<Tracker>>,
}

impl PlainPool {
    /// A pool of `threads` workers, none started yet. Their stacks are
    /// recorded in `nmt`.
    pub(crate) fn new(threads: usize, nmt: Option<Arc<Tracker>>) -> PlainPool {
        PlainPool {
            threads: threads.max(1),
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    job: None,
                    phase: 0,
                    running: 0,
                    shutdown: false,
                }),
                wake: Condvar::new(),
                done: Condvar::new(),
            }),
            handles: Vec::new(),
            nmt,
        }
    }

    /// How many workers.
    pub(crate) fn count(&self) -> usize {
        self.threads
    }

    /// Processes every item exactly once, on the workers; the results in no
    /// particular order, or the payload of the first item that panicked
    /// (after every other item was processed).
    pub(crate) fn run<T, R, F>(
        &mut self,
        items: Vec<T>,
        f: F,
    ) -> Result<Vec<R>, Box<dyn Any + Send>>
    where
        T: Send,
        R: Send,
        F: Fn(T) -> R + Sync,
    {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.start();
        let results = Mutex::new(Vec::with_capacity(items.len()));
        let panicked = Mutex::new(None);
        let queue = Mutex::new(items);
        let job = || {
            loop {
                let next = queue.lock().pop();
                let Some(item) = next else { break };
                match catch_unwind(AssertUnwindSafe(|| f(item))) {
                    Ok(r) => results.lock().push(r),
                    Err(p) => {
                        panicked.lock().get_or_insert(p);
                    }
                }
            }
        };
        let job: &(dyn Fn() + Sync) = &job;
        // SAFETY: only the lifetime is erased. The workers call the job only
        // between the phase's start below and their `running` count-down,
        // and this function returns (letting `job`, `queue`, `results`, `f`
        // and the items die) only after `running` reached 0 and the job was
        // taken back.
        let erased = JobRef(unsafe {
            std::mem::transmute::<*const (dyn Fn() + Sync + '_), *const (dyn Fn() + Sync + 'static)>(
                job,
            )
        });
        let mut st = self.shared.state.lock();
        st.job = Some(erased);
        st.phase += 1;
        st.running = self.handles.len();
        self.shared.wake.notify_all();
        while st.running > 0 {
            self.shared.done.wait(&mut st);
        }
        st.job = None;
        drop(st);
        match panicked.into_inner() {
            Some(p) => Err(p),
            None => Ok(results.into_inner()),
        }
    }

    /// Starts the workers, the first time.
    fn start(&mut self) {
        while self.handles.len() < self.threads {
            let shared = self.shared.clone();
            let nmt = self.nmt.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("hotmem-gc-{}", self.handles.len()))
                .spawn(move || worker(&shared, nmt.as_deref()));
            match spawned {
                Ok(h) => self.handles.push(h),
                // Fewer workers than asked for: the phases still complete
                // (each worker drains the queue), more slowly.
                Err(_) if !self.handles.is_empty() => break,
                Err(e) => panic!("cannot start a GC worker thread: {e}"),
            }
        }
    }
}

/// A worker: runs each phase's job once, until the pool is dropped.
fn worker(shared: &Shared, nmt: Option<&Tracker>) {
    let stack = nmt.and_then(ThreadStack::record_current);
    let mut seen = 0;
    loop {
        let mut st = shared.state.lock();
        while st.phase == seen && !st.shutdown {
            shared.wake.wait(&mut st);
        }
        if st.shutdown {
            break;
        }
        seen = st.phase;
        let job = st.job.expect("a phase has a job");
        drop(st);
        // SAFETY: the phase's caller keeps the job alive until this worker
        // counts itself out below (`PlainPool::run`). Item panics are caught
        // inside the job; this guard only keeps the count right.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { (*job.0)() }));
        let mut st = shared.state.lock();
        st.running -= 1;
        if st.running == 0 {
            shared.done.notify_all();
        }
    }
    if let (Some(stack), Some(nmt)) = (stack, nmt) {
        stack.release(nmt);
    }
}

impl Drop for PlainPool {
    fn drop(&mut self) {
        self.shared.state.lock().shutdown = true;
        self.shared.wake.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_across_phases_with_borrowed_data() {
        let mut pool = PlainPool::new(3, None);
        for round in 0..50u64 {
            let base = round * 1000; // borrowed by the closure below
            let items: Vec<u64> = (0..100).collect();
            let mut out = pool.run(items, |i| base + i).unwrap();
            out.sort_unstable();
            assert_eq!(out, (0..100).map(|i| base + i).collect::<Vec<_>>());
        }
        assert!(pool.run(Vec::<u8>::new(), |_| ()).unwrap().is_empty());
    }

    #[test]
    fn a_panicking_item_is_reported_after_the_others_ran() {
        let mut pool = PlainPool::new(2, None);
        let done = Mutex::new(0);
        let err = pool
            .run((0..20).collect(), |i: u32| {
                if i == 7 {
                    panic!("item seven");
                }
                *done.lock() += 1;
            })
            .unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"item seven"));
        assert_eq!(*done.lock(), 19);
        // The pool works on.
        assert_eq!(pool.run(vec![1, 2], |i: i32| i * 2).unwrap().len(), 2);
    }
}
