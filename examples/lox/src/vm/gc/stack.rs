//! The value stack: a [`ShadowStack`] the interpreter pushes and pops in
//! place through a raw top pointer, publishing its height to the runtime
//! before anything that may collect.

use hotmem::{Mutator, ShadowStack};

use super::super::error::VmError;
use super::roots::FRAMES_MAX;

/// Words of the value stack: clox's 256 per frame, twice over (a frame's
/// temporaries may exceed its 256 locals; the loader computes every
/// function's deepest stack and a call that would not fit is a stack
/// overflow).
pub(crate) const STACK_WORDS: usize = 2 * FRAMES_MAX * 256;

/// Words a frame may use beyond its function's deepest stack: the
/// interpreter roots a value there while it allocates.
pub(crate) const SLACK: usize = 4;

/// The value stack.
pub(crate) struct Stack {
    stack: ShadowStack,
    base: *mut u64,
    limit: *mut u64,
}

impl Stack {
    /// An empty stack, scanned from now on as `me`'s.
    ///
    /// # Errors
    /// The runtime's, if the shadow stack cannot be mapped.
    pub(crate) fn new(me: &Mutator) -> Result<Stack, VmError> {
        let stack = me.new_shadow_stack(STACK_WORDS)?;
        let base = stack.as_ptr();
        let limit = base.wrapping_add(stack.capacity());
        Ok(Stack { stack, base, limit })
    }

    /// The first word.
    #[inline(always)]
    pub(crate) fn base(&self) -> *mut u64 {
        self.base
    }

    /// Whether `words` more words fit above `top`.
    #[inline(always)]
    pub(crate) fn fits(&self, top: *mut u64, words: usize) -> bool {
        (self.limit as usize - top as usize) / 8 >= words
    }

    /// Publishes `top` (one past the last value in use) as the stack's
    /// height: the words below it are what the next collection scans.
    ///
    /// # Safety
    /// `top` lies in `[base, limit]` and every word below it holds a valid
    /// value (a number, nil, a boolean, or a reference to a live object).
    #[inline(always)]
    pub(crate) unsafe fn publish(&self, top: *mut u64) {
        debug_assert!(self.base <= top && top <= self.limit);
        let len = (top as usize - self.base as usize) / 8;
        // SAFETY: the caller's contract is `set_len`'s.
        unsafe { self.stack.set_len(len) };
    }

    /// The published height.
    pub(crate) fn published(&self) -> *mut u64 {
        self.base.wrapping_add(self.stack.len())
    }
}
