//! The uncommitter: a thread that gives the heap's cached pages back to the
//! OS once they have gone unused for the uncommit delay
//! ([`RuntimeBuilder::uncommit_delay`](crate::RuntimeBuilder::uncommit_delay)),
//! whether or not collections run. Each collection uncommits too, but a VM
//! that goes idle after a burst runs no collection: without this thread its
//! cache stayed committed for as long as the process lived. ZGC has the
//! same thread (its uncommitter), for the same reason.
//!
//! It starts at the first collection (no page is cached before one) and
//! looks at the cache every quarter of the delay (at least every 10 ms, at
//! most every minute), so a page goes back at most a quarter of the delay
//! late. It holds the page allocator, not the runtime; the runtime stops
//! and joins it when dropped.

use hotmem_page::PageAllocator;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shortest and the longest wait between two looks at the cache.
const PERIOD: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(60));

/// The runtime's handle on the thread.
pub(crate) struct Uncommitter {
    delay: Duration,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct Shared {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Uncommitter {
    /// Not started yet; it will uncommit pages cached for `delay`.
    pub(crate) fn new(delay: Duration) -> Uncommitter {
        Uncommitter {
            delay,
            shared: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    /// The wait between two looks at the cache.
    fn period(&self) -> Duration {
        (self.delay / 4).clamp(PERIOD.0, PERIOD.1)
    }

    /// Starts the thread on `pages` unless it runs already (or was
    /// stopped). A thread that cannot be started leaves the uncommitting
    /// to the collections.
    pub(crate) fn start_once(&self, pages: &Arc<PageAllocator>) {
        let mut thread = self.thread.lock();
        if thread.is_some() || *self.shared.stopped.lock() {
            return;
        }
        let (shared, pages, period) = (self.shared.clone(), pages.clone(), self.period());
        *thread = std::thread::Builder::new()
            .name("hotmem-uncommit".into())
            .spawn(move || run(&shared, &pages, period))
            .ok();
    }

    /// Stops the thread and waits for it.
    pub(crate) fn stop(&self) {
        *self.shared.stopped.lock() = true;
        self.shared.wake.notify_all();
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Uncommitter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The thread: every `period`, uncommits what has been cached for the
/// delay, until stopped.
fn run(shared: &Shared, pages: &PageAllocator, period: Duration) {
    let mut stopped = shared.stopped.lock();
    while !*stopped {
        let _ = shared.wake.wait_for(&mut stopped, period);
        if *stopped {
            return;
        }
        // An OS error keeps the page cached; the next look tries again.
        parking_lot::MutexGuard::unlocked(&mut stopped, || {
            let _ = pages.uncommit(Instant::now());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_a_quarter_of_the_delay_within_its_bounds() {
        let p = |d| Uncommitter::new(d).period();
        assert_eq!(p(Duration::from_secs(300)), Duration::from_secs(60));
        assert_eq!(p(Duration::from_secs(20)), Duration::from_secs(5));
        assert_eq!(p(Duration::ZERO), Duration::from_millis(10));
    }

    #[test]
    fn a_stopped_uncommitter_does_not_start() {
        let u = Uncommitter::new(Duration::ZERO);
        u.stop();
        let memory = hotmem_os::Memory::new();
        let pages =
            Arc::new(PageAllocator::new(&memory, hotmem_page::HeapConfig::new(16 << 20)).unwrap());
        u.start_once(&pages);
        assert!(u.thread.lock().is_none());
    }
}
