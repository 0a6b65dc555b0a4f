//! Loom models of the crate, compiled only with `--cfg hotmem_loom`
//! (`cargo xtask loom`).

#[cfg(hotmem_loom)]
mod loom_arenas;
#[cfg(hotmem_loom)]
mod loom_lock;
