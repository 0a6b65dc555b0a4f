//! Loom models of the crate (run with `--cfg hotmem_loom`, see the
//! workspace's COMMON notes / `cargo xtask loom`).

#[cfg(hotmem_loom)]
mod loom_arenas;
