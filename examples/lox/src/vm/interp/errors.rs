//! Runtime errors: clox's message and its stack trace, innermost frame
//! first, each frame's line the one of the instruction it was executing.

use super::super::Machine;
use super::super::error::{HeapError, RuntimeError, TraceFrame};
use super::super::gc::roots::FRAMES;
use super::super::object::{Obj, closure};
use super::super::print::function_meta;
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// The error `message` at the current instruction of every frame
    /// (their `ip`s saved).
    #[cold]
    #[inline(never)]
    pub(crate) fn runtime_error(&self, message: String) -> RuntimeError {
        let mut trace = Vec::with_capacity(self.frame_count);
        for i in (0..self.frame_count).rev() {
            // SAFETY: frame `i`'s closure from its root word and its
            // function, valid now; its saved `ip` points past the last byte
            // it read, inside its code.
            unsafe {
                let c = Obj::new(self.roots.get(FRAMES + i));
                let meta = function_meta(Obj::new(self.heap.load(c.word(closure::FUNCTION))));
                let offset = (self.frames[i].ip as usize).saturating_sub(meta.code as usize + 1);
                trace.push(TraceFrame {
                    line: meta.line_of(offset),
                    function: meta.name().map(|n| String::from_utf8_lossy(n).into_owned()),
                });
            }
        }
        RuntimeError { message, trace }
    }

    /// A heap failure (out of memory) as a runtime error where it
    /// happened.
    #[cold]
    #[inline(never)]
    pub(crate) fn heap_error(&self, error: HeapError) -> RuntimeError {
        self.runtime_error(error.to_string())
    }
}
