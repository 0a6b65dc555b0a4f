//! Panic payloads of workers' closures: dropping one without unwinding.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Drops a panic payload, whose own `Drop` may panic (`panic_any` of a
/// value that panics when dropped): that second panic is caught, so that a
/// worker never unwinds past its restore, and its payload (usually a plain
/// message) is dropped the same way. Only a payload that still panics after
/// a few rounds is leaked.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    /// Payloads whose drop panics, each yielding the next, before giving up.
    const ROUNDS: usize = 8;
    let mut next = payload;
    for _ in 0..ROUNDS {
        match catch_unwind(AssertUnwindSafe(move || drop(next))) {
            Ok(()) => return,
            Err(again) => next = again,
        }
    }
    std::mem::forget(next);
}
