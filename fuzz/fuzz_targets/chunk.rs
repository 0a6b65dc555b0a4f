//! Chunk get/return/enlarge/commit/purge and arena allocate/deallocate/drop
//! on a small space, buddy or baseline, against the crate's reference model.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_chunk::model::fuzz(data));
