//! The arithmetic and comparison instructions that can fail: on numbers
//! only, except `ADD`, which also concatenates two strings (allocating).

use super::super::Machine;
use super::super::error::RuntimeError;
use super::super::object::{Kind, is};
use super::super::value::Value;
use super::regs::Regs;
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `GREATER`, `LESS`, `SUBTRACT`, `MULTIPLY`, `DIVIDE`:
    /// `a b -> op(a, b)` on two numbers.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_numbers(
        &mut self,
        r: &mut Regs,
        op: impl FnOnce(f64, f64) -> Value,
    ) -> Result<(), RuntimeError> {
        // SAFETY: two operands on the frame's stack (1: the verifier's
        // stack heights; 2).
        unsafe {
            let b = r.peek(0);
            let a = r.peek(1);
            if !(a.is_number() && b.is_number()) {
                return Err(self.throw(r.site(), "Operands must be numbers."));
            }
            r.drop_values(1);
            r.replace(0, op(a.as_number(), b.as_number()));
        }
        Ok(())
    }

    /// `ADD`: `a b -> a + b`, two numbers or two strings.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_add(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: two operands on the frame's stack (2); the strings'
        // kinds are checked (4) and concatenated with the stack saved
        // before and the registers reloaded after (3).
        unsafe {
            let b = r.peek(0);
            let a = r.peek(1);
            if a.is_number() && b.is_number() {
                r.drop_values(1);
                r.replace(0, Value::number(a.as_number() + b.as_number()));
            } else if is(a, Kind::String) && is(b, Kind::String) {
                self.save(r);
                let result = self
                    .concatenate(r.sp.sub(2), r.sp.sub(1))
                    .map_err(|e| self.heap_error(e))?;
                r.drop_values(1);
                r.replace(0, result);
                self.reload(r);
            } else {
                return Err(self.throw(r.site(), "Operands must be two numbers or two strings."));
            }
        }
        Ok(())
    }

    /// `NEGATE`: `a -> -a` on a number.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_negate(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: an operand on the frame's stack (2).
        unsafe {
            let value = r.peek(0);
            if !value.is_number() {
                return Err(self.throw(r.site(), "Operand must be a number."));
            }
            r.replace(0, Value::number(-value.as_number()));
        }
        Ok(())
    }
}
