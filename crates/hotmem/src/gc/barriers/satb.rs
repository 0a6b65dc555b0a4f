//! The mutators' logs of overwritten references (snapshot at the
//! beginning): while marking runs, a mutator that overwrites a reference
//! logs the old value first, so that an object reachable at mark start is
//! marked even if the only reference to it moves into an object that was
//! scanned already. Each mutator logs into its own buffer; a full buffer
//! goes to a shared queue that the GC thread drains while marking, and
//! mark end drains every buffer with the mutators stopped.

use crate::sync::{Arc, AtomicUsize, Mutex, Ordering};
use crate::vm::ObjectReference;

/// Entries a mutator's buffer holds before it goes to the shared queue.
const BUFFER: usize = 1024;

/// Slots of the filter of recent shared entries (a power of two).
const RECENT: usize = 1024;

/// One mutator's log.
#[derive(Default)]
pub(crate) struct SatbBuffer {
    entries: Vec<usize>,
}

/// Every mutator's log and the full buffers waiting for the GC thread.
pub(crate) struct SatbQueues {
    buffers: Mutex<Vec<Arc<Mutex<SatbBuffer>>>>,
    full: Mutex<Vec<Vec<usize>>>,
    /// Objects kept alive from outside a mutator's barrier (a weak handle
    /// read while marking runs).
    shared: Mutex<Vec<usize>>,
    /// The objects logged to `shared` lately in this cycle, by address
    /// (direct-mapped): a weak handle read in a loop is logged once per
    /// cycle, not at every read. Emptied at mark start.
    recent: Box<[AtomicUsize]>,
}

impl Default for SatbQueues {
    fn default() -> Self {
        SatbQueues {
            buffers: Mutex::default(),
            full: Mutex::default(),
            shared: Mutex::default(),
            recent: (0..RECENT).map(|_| AtomicUsize::new(0)).collect(),
        }
    }
}

impl SatbQueues {
    /// A log for a mutator that attaches.
    pub(crate) fn register(&self) -> Arc<Mutex<SatbBuffer>> {
        let b = Arc::new(Mutex::new(SatbBuffer::default()));
        self.buffers.lock().push(b.clone());
        b
    }

    /// Logs `old`, overwritten by a mutator while marking runs; a full
    /// buffer goes to the shared queue.
    pub(crate) fn log(&self, buffer: &Mutex<SatbBuffer>, old: ObjectReference) {
        let mut b = buffer.lock();
        b.entries.push(old.get());
        if b.entries.len() >= BUFFER {
            let full = std::mem::replace(&mut b.entries, Vec::with_capacity(BUFFER));
            drop(b);
            self.full.lock().push(full);
        }
    }

    /// Logs `obj` from any thread (no buffer of its own), unless it was
    /// logged lately in this cycle. The caller holds the pause gate open
    /// until this returns, so an entry another thread is about to push
    /// (it filled the filter first) is pushed before the pause that
    /// drains the log.
    pub(crate) fn log_shared(&self, obj: ObjectReference) {
        let a = obj.get();
        let slot = &self.recent[(a >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54 & (RECENT - 1)];
        if slot.load(Ordering::Relaxed) == a {
            return;
        }
        slot.store(a, Ordering::Relaxed);
        self.shared.lock().push(a);
    }

    /// Empties the filter of recent shared entries: at mark start, in the
    /// pause (no thread logs meanwhile), so that this cycle logs every
    /// object again.
    pub(crate) fn forget_recent(&self) {
        for slot in self.recent.iter() {
            slot.store(0, Ordering::Relaxed);
        }
    }

    /// Takes the full buffers and the shared log (while marking runs).
    pub(crate) fn take_full(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.full.lock().drain(..).flatten().collect();
        all.append(&mut self.shared.lock());
        all
    }

    /// Takes everything: the full buffers and every mutator's (at mark
    /// end, with the mutators stopped). Forgets detached mutators' logs.
    pub(crate) fn take_all(&self) -> Vec<usize> {
        let mut all = self.take_full();
        self.buffers.lock().retain(|b| {
            all.append(&mut b.lock().entries);
            Arc::strong_count(b) > 1
        });
        all
    }

    /// Empties every log without looking (a cycle that failed).
    pub(crate) fn clear(&self) {
        let _ = self.take_all();
    }
}

#[cfg(all(test, not(hotmem_loom)))]
mod tests {
    use super::*;
    use hotmem_os::Address;

    fn r(a: usize) -> ObjectReference {
        ObjectReference::from_address(Address::new(a)).unwrap()
    }

    #[test]
    fn full_buffers_go_to_the_queue_and_mark_end_takes_the_rest() {
        let q = SatbQueues::default();
        let a = q.register();
        let b = q.register();
        for i in 1..=BUFFER + 3 {
            q.log(&a, r(8 * i));
        }
        q.log(&b, r(0x8000));
        let full = q.take_full();
        assert_eq!(full.len(), BUFFER);
        let mut rest = q.take_all();
        rest.sort_unstable();
        assert_eq!(
            rest,
            vec![8 * (BUFFER + 1), 8 * (BUFFER + 2), 8 * (BUFFER + 3), 0x8000]
        );
        drop(b);
        q.log(&a, r(16));
        assert_eq!(
            q.take_all(),
            vec![16],
            "a detached mutator's log is forgotten"
        );
    }
}
