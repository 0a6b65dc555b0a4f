//! `GET_GLOBAL`, `DEFINE_GLOBAL`, `SET_GLOBAL`: a global is a slot of the
//! globals array that the loader resolved each name constant to, so an
//! access is two loads from metaspace and one through the barrier; an
//! undefined global's slot holds [`Value::ABSENT`].

use super::super::Machine;
use super::super::error::RuntimeError;
use super::super::value::Value;
use super::regs::{Regs, Site};
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `GET_GLOBAL k`: `-> globals[k]`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_get_global(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a global's name constant (1); the slot is one of
        // the live globals array, read through the barrier (5); the push
        // fits (2).
        unsafe {
            let k = r.byte();
            let value = self.heap.load(self.global(r, k));
            if value == Value::ABSENT {
                return Err(self.undefined(r.site(), r.constant(&self.heap, k)));
            }
            r.push(value);
        }
        Ok(())
    }

    /// `DEFINE_GLOBAL k`: `value ->`, `globals[k] = value`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_define_global(&mut self, r: &mut Regs) {
        // SAFETY: as in `op_get_global`; the value popped is the frame's
        // (2), stored through the barrier (5).
        unsafe {
            let k = r.byte();
            let value = r.pop();
            self.heap.store(self.global(r, k), value);
        }
    }

    /// `SET_GLOBAL k`: `globals[k] = top` if it is defined.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_set_global(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: as in `op_define_global`; the value stays on the stack.
        unsafe {
            let k = r.byte();
            let word = self.global(r, k);
            if self.heap.load(word) == Value::ABSENT {
                return Err(self.undefined(r.site(), r.constant(&self.heap, k)));
            }
            self.heap.store(word, r.peek(0));
        }
        Ok(())
    }

    /// "Undefined variable" for the global named `name` (a string valid
    /// now), at `site`.
    ///
    /// # Safety
    /// As [`Vm::throw`].
    #[cold]
    #[inline(never)]
    unsafe fn undefined(&mut self, site: Site, name: Value) -> RuntimeError {
        // SAFETY: the caller's site; `text` copies the name out before
        // anything may collect.
        unsafe { self.throw_message(site, format!("Undefined variable '{}'.", self.text(name))) }
    }
}
