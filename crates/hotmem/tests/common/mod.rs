//! Setup the integration tests share: the runtime most of them start from,
//! and the old-holder scenario of the update-scope and generations tests.
//!
//! Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

mod holder;

#[allow(unused_imports)] // not every test binary uses the holder scenario
pub(crate) use holder::*;

use hotmem::{NumaConfig, Runtime, RuntimeBuilder};

/// The builder the tests start from: a heap of `heap_max` bytes, NUMA off
/// (one partition, unbound workers: what every machine can give), and
/// `workers` GC workers (`None`: the default count).
pub(crate) fn builder(heap_max: usize, workers: Option<usize>) -> RuntimeBuilder {
    let b = Runtime::builder().heap_max(heap_max).numa(NumaConfig::Off);
    match workers {
        Some(n) => b.gc_workers(n),
        None => b,
    }
}
