//! Threads: [`std::thread`] normally, `loom::thread` under `cfg(hotmem_loom)`,
//! with what loom lacks filled in.
//!
//! Under loom, [`sleep`] yields (a model has no time) and
//! [`available_parallelism`] is std's (it asks the machine, not the model).

pub use crate::base::thread::*;

#[cfg(hotmem_loom)]
pub use std::thread::available_parallelism;

/// Gives up the CPU for `duration`; under loom, where there is no time,
/// yields to the other model threads instead.
#[cfg(hotmem_loom)]
pub fn sleep(duration: std::time::Duration) {
    let _ = duration;
    yield_now();
}
