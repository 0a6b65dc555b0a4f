//! Loom models of the crate's races (run by `cargo xtask loom`).

#[cfg(hotmem_loom)]
mod loom_handoff;
#[cfg(hotmem_loom)]
mod loom_phase_end;
