//! Random tracker operations on the tree and the linked-list baseline
//! against the page model: results, errors, deltas, totals, regions.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_nmt::model::fuzz(data));
