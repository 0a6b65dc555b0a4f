//! Commit/uncommit/write sequences on a real reservation against a page model.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_os::model::fuzz(data));
