//! Whole cycles (begin, end, every stopped thread running again) back to
//! back, as the benchmark runs them.

mod common;

use common::BusyThreads;
use hotmem_safepoint::{Coordinator, LeaveEnd, Strategy};

#[test]
fn full_cycles_back_to_back_complete() {
    for strategy in [Strategy::WaitBarrier, Strategy::Legacy] {
        for threads in [1, 4] {
            let c = Coordinator::new(strategy);
            let busy = BusyThreads::start(&c, threads);
            let rounds = if strategy == Strategy::Legacy {
                10
            } else {
                200
            };
            for _ in 0..rounds {
                c.begin("cycle").unwrap().end();
                c.wait_until_resumed();
                let last = c.stats().last.unwrap();
                assert_eq!(last.leave_end, LeaveEnd::AllRunning);
            }
            assert_eq!(c.stats().count, rounds);
            busy.finish();
        }
    }
}
