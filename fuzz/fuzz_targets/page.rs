//! Page allocate/free/undo/uncommit sequences (with the flushes, splits and
//! defragmentation they cause) on real memory, against a reference model.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_page::model::fuzz(data));
