//! The tracker, as the observer of a `Memory`, ends up with exactly the
//! kernel's view of a range, whatever threads do to it concurrently.
//!
//! Each check compares, page by page, only the range the test reserved:
//! the tracker's regions clipped to it against `/proc/self/smaps` clipped
//! to it (a committed page is mapped accessible, an uncommitted one
//! `PROT_NONE`), never whole mappings or process totals.

mod common;

use common::{Page, kernel_view, tracker_view};
use hotmem_nmt::{Level, Tracker};
use hotmem_os::{MemTag, Memory, Reservation, page_size};
use std::sync::{Arc, Barrier};

/// A small xorshift generator: the test needs varied, not good, numbers.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const PAGES: usize = 32;
const THREADS: usize = 4;
const OPS: usize = 64;
const ROUNDS: usize = 100;

/// Every thread commits, uncommits, recommits, maps and unmaps random,
/// overlapping page ranges of one shared reservation; afterwards the
/// tracker's page states equal the kernel's. Without the reservation's
/// operation lock, two threads' `mmap`s of one page could reach the tracker
/// in the opposite order from the kernel's.
#[test]
fn racing_commits_and_uncommits_leave_the_tracker_equal_to_the_kernel() {
    let page = page_size();
    let nmt = Arc::new(Tracker::new(Level::Summary));
    let memory = Memory::with_observer(nmt.clone());
    let phys = Arc::new(memory.physical(4 * page).unwrap());
    for round in 0..ROUNDS {
        let r: Arc<Reservation> = Arc::new(memory.reserve(PAGES * page, MemTag::GC).unwrap());
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (r, barrier, phys) = (r.clone(), barrier.clone(), phys.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((round * THREADS + t) as u64 + 1));
                    barrier.wait();
                    for _ in 0..OPS {
                        // Most ranges fall in the first 8 pages, so that the
                        // threads keep colliding on them.
                        let span = if rng.below(4) == 0 { PAGES } else { 8 };
                        let first = rng.below(span);
                        let len = 1 + rng.below((span - first).min(6));
                        let range = r.subrange(first * page, len * page).unwrap();
                        match rng.below(5) {
                            0 | 1 => r.commit(range).unwrap(),
                            2 | 3 => r.uncommit(range).unwrap(),
                            _ => {
                                let len = len.min(4);
                                r.map(range.start(), &phys, 0, len * page).unwrap();
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let range = r.range();
        assert_eq!(
            tracker_view(&nmt, range),
            kernel_view(range),
            "round {round}: the tracker disagrees with the kernel on {range:?}"
        );
        drop(r);
        assert_eq!(
            tracker_view(&nmt, range),
            vec![Page::Unmapped; PAGES],
            "round {round}: released"
        );
    }
    assert_eq!(nmt.rejected_events(), (0, None));
}
