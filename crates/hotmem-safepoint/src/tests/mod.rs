//! Loom models of the protocol (run with `--cfg hotmem_loom`).

mod loom_protocol;
