//! Page allocate/free/undo/uncommit sequences (with the merges, splits,
//! harvests and defragmentation they cause) on real memory, against a
//! reference model, in both cache modes (the first input byte picks the
//! mapped cache or the page cache).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hotmem_page::model::fuzz(data));
