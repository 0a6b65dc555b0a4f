//! The one place this crate takes its synchronization primitives from,
//! `hotmem-sync`'s names (CONVENTIONS §5).
//!
//! Modelled (loom's under `cfg(hotmem_loom)`): the locks and `Arc`s of the
//! phase-end handshake ([`Latch`](crate::latch::Latch) plus the report
//! slots), so that the models in `src/tests/loom_*.rs` explore every
//! interleaving of the code that uses them. Normally the locks are
//! parking_lot's rather than std's because parking_lot is compiled with the
//! rest of the crate: under ThreadSanitizer its atomics are instrumented, so
//! TSan sees the phase-end handshake order the workers' writes before the
//! coordinator's reads (std's prebuilt locks are invisible to it).
//!
//! Unmodelled, in every build: the work queues (crossbeam's `ArrayQueue`)
//! and the job channels (`crossbeam-channel`), which loom cannot model; the
//! race the models check does not go through them.

pub(crate) use crossbeam::queue::ArrayQueue;
pub(crate) use crossbeam_channel as channel;
pub(crate) use hotmem_sync::{Arc, Condvar, Mutex};
