//! [`Pause`]: the mutators stopped for a collector's work, with the pause
//! gate closed (see [`PauseGate`](crate::pause_gate::PauseGate)), however
//! many pauses a collector's collection takes: the stop-the-world
//! collector one, the concurrent collector three.

use super::driver::DriverContext;
use super::heap::GcHeap;
use crate::GcError;
use crate::pause_gate::Closed;
use hotmem_safepoint::{SafeRegion, SafepointGuard, SafepointId};
use std::time::{Duration, Instant};

/// One pause: the safepoint, the closed gate, how long the mutators took
/// to stop and when the pause's work began.
pub(crate) struct Pause<'s, 'h> {
    guard: SafepointGuard<'s>,
    closed: Option<Closed<'h>>,
    began: Instant,
    time_to_safepoint: Duration,
}

impl<'s, 'h> Pause<'s, 'h> {
    /// Begins the pause `name` of `heap`: every mutator stopped (through
    /// `region`, the calling mutator's safe region, when a mutator
    /// collects), then the gate closed, so that no other thread reads a
    /// weak reference between marking and clearing or makes a handle the
    /// root scan misses.
    pub(crate) fn begin(
        cx: &DriverContext<'s>,
        heap: &'h GcHeap,
        name: &'static str,
        region: Option<&'s mut SafeRegion<'_>>,
    ) -> Result<Pause<'s, 'h>, GcError> {
        let asked = Instant::now();
        let guard = match region {
            Some(region) => region.safepoint(name),
            None => cx.safepoints.begin(name),
        }
        .map_err(GcError::Safepoint)?;
        let time_to_safepoint = asked.elapsed();
        // The previous safepoint's record is complete now that this one began.
        cx.log.safepoints(cx.safepoints);
        let closed = Some(heap.gate.close());
        Ok(Pause {
            guard,
            closed,
            began: Instant::now(),
            time_to_safepoint,
        })
    }

    /// How long the mutators took to stop.
    pub(crate) fn time_to_safepoint(&self) -> Duration {
        self.time_to_safepoint
    }

    /// The safepoint's id (what its log line is found by).
    pub(crate) fn safepoint_id(&self) -> SafepointId {
        self.guard.id()
    }

    /// Opens the gate before the pause ends: the work that decides what
    /// lives and where it is is done, what follows (the record, the log,
    /// whose outputs may call an embedder's callback that reads a weak
    /// handle) must not wait for it.
    pub(crate) fn open_gate(&mut self) {
        self.closed = None;
    }

    /// Ends the pause: the gate opened, the mutators released; the time
    /// since its work began.
    pub(crate) fn end(mut self, cx: &DriverContext<'_>) -> Duration {
        let took = self.began.elapsed();
        self.open_gate();
        self.guard.end();
        cx.log.safepoints(cx.safepoints);
        took
    }
}
