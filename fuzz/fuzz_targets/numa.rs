//! Synthetic topology descriptions, structured and free text, against a model.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_numa::model::fuzz(data));
