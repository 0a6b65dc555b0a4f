//! The interpreter: one loop over the verified bytecode of the running
//! frame, with the instruction pointer, the stack top, the frame's base,
//! its closure's constants and the root and frame blocks in one local of
//! registers
//! ([`Regs`](regs::Regs)). `run` dispatches; each instruction that needs
//! more than a few lines is a handler of its own (`op_*`, beside the slow
//! paths it calls: `globals`, `properties`, `operators`, `calls`,
//! `upvalues`, `objects`), `#[inline(always)]` into the loop, its error
//! paths out of line (`Vm::throw`).
//!
//! The loop's invariants (what its `unsafe` relies on):
//! 1. **Code**: the frame's code passed [`verify`](super::verify): every
//!    byte `ip` reaches is an opcode of a well-formed instruction, its
//!    operands are in range (a constant of the right kind, a local below
//!    the stack height, an upvalue the closure has), jumps land on
//!    instructions, and the code ends with `RETURN` on every path.
//! 2. **Stack**: a call checks that its function's deepest stack plus
//!    [`SLACK`] fits above the frame's base, so every push of a verified
//!    instruction (and the one extra root an allocating instruction
//!    pushes) stays inside the value stack, and every pop above the base.
//! 3. **Collections**: before each call that may collect (an allocation,
//!    a poll) the loop publishes `sp` (and saves `ip` for a stack trace);
//!    afterwards it reloads `closure` and `consts` from the frame's root
//!    word ([`Vm::reload`]); nothing else heap-allocated is kept in a local
//!    across such a call.
//! 4. **Objects**: a value read from the stack, a root or a slot since the
//!    last such call is valid; an object's kind is checked before it is
//!    used as that kind, unless the compiler's output guarantees it (a
//!    frame's closure, a function constant, the class under `METHOD`).
//! 5. **Barriers**: every reference read out of a heap object goes through
//!    [`Heap::load`](super::gc::Heap::load), but those of the slots that
//!    hold only objects that never move (a function's constants, a
//!    closure's function, a table's keys: see `loader`), read with
//!    [`Heap::peek`](super::gc::Heap::peek); every value written into one
//!    that may be old goes through [`Heap::store`](super::gc::Heap::store).
//!
//! **The handlers' contract.** Every `unsafe fn` that takes `r: &mut Regs`
//! needs `r` to be the running frame's registers, `r.ip` just past the
//! opcode of the instruction it executes, with the invariants above
//! holding; it leaves them holding for the next instruction (or returns
//! the error that ends the run). Each handler's `unsafe` block names the
//! invariants it relies on.

mod calls;
mod errors;
mod globals;
mod objects;
mod operators;
mod properties;
mod regs;
mod upvalues;

use super::error::RuntimeError;
use super::gc::roots::FRAMES;
use super::gc::stack::SLACK;
use super::object::{Kind, Obj, closure, header, size_of};
use super::print::function_meta;
use super::value::Value;
use super::{Frame, Machine};
use crate::bytecode::{FunctionProto, OpCode};
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// Loads `script`, wraps it in a closure in frame 0, and runs it.
    pub(super) fn load_and_run(&mut self, script: &FunctionProto) -> Result<(), RuntimeError> {
        let function = self.load(script)?;
        self.push_root(function)?;
        let addr = self
            .heap
            .alloc(size_of(Kind::Closure, 0))
            .map_err(|e| self.heap_error(e))?;
        let function = self.pop_root();
        // SAFETY: a fresh closure of no upvalues; its function is valid
        // (read from its root after the allocation).
        let script_closure = unsafe {
            let c = Obj::at(addr);
            c.set_raw(0, header(Kind::Closure, 0));
            c.set_raw(closure::FUNCTION, function.bits());
            c
        };
        let base = self.push_root(script_closure.value())?;
        // SAFETY: the script's function (verified), read now.
        let meta = unsafe { function_meta(Obj::new(function)) };
        if !self.stack.fits(base, meta.max_stack as usize + SLACK) {
            return Err(self.runtime_error("Stack overflow.".into()));
        }
        self.frames[0] = Frame {
            ip: meta.code,
            base,
        };
        self.roots.set(FRAMES, script_closure.value());
        self.frame_count = 1;
        // SAFETY: frame 0 is on top, its closure in its root word, its
        // code verified and its deepest stack checked to fit; the stack
        // is published.
        unsafe { self.run() }
    }

    /// Runs until the script's frame returns or an error stops it: one
    /// instruction per round, dispatched on its opcode.
    ///
    /// # Safety
    /// As [`Vm::registers`]: a frame is on top, entered from verified code
    /// with its deepest stack checked to fit.
    #[inline(never)]
    unsafe fn run(&mut self) -> Result<(), RuntimeError> {
        // SAFETY: the caller's frame on top.
        let mut r = unsafe { self.registers() };
        loop {
            // SAFETY: the handlers' contract holds at the top of every
            // round: `r` is the running frame's registers, `r.ip` at an
            // instruction (1), and every arm leaves it so. The arms written
            // here rely on: `CONSTANT`'s index and the locals' slots (1),
            // pushes within the frame's window and pops above its base
            // (2), jumps landing on instructions (1), and the back-edge
            // poll saving before and reloading after (3).
            unsafe {
                match r.opcode() {
                    OpCode::Constant => {
                        let k = r.byte();
                        r.push(r.constant(&self.heap, k));
                    }
                    OpCode::Nil => r.push(Value::NIL),
                    OpCode::True => r.push(Value::TRUE),
                    OpCode::False => r.push(Value::FALSE),
                    OpCode::Pop => r.drop_values(1),
                    OpCode::GetLocal => {
                        let slot = usize::from(r.byte());
                        r.push(Value::from_bits(*r.local(slot)));
                    }
                    OpCode::SetLocal => {
                        let slot = usize::from(r.byte());
                        *r.local(slot) = r.peek(0).bits();
                    }
                    OpCode::GetGlobal => self.op_get_global(&mut r)?,
                    OpCode::DefineGlobal => {
                        std::hint::cold_path();
                        self.op_define_global(&mut r);
                    }
                    OpCode::SetGlobal => self.op_set_global(&mut r)?,
                    OpCode::GetUpvalue => self.op_get_upvalue(&mut r),
                    OpCode::SetUpvalue => self.op_set_upvalue(&mut r),
                    OpCode::GetProperty => self.op_get_property(&mut r)?,
                    OpCode::SetProperty => self.op_set_property(&mut r)?,
                    OpCode::GetSuper => self.op_get_super(&mut r)?,
                    OpCode::Equal => {
                        let b = r.pop();
                        r.replace(0, Value::bool(r.peek(0).equals(b)));
                    }
                    OpCode::Greater => self.op_numbers(&mut r, |a, b| Value::bool(a > b))?,
                    OpCode::Less => self.op_numbers(&mut r, |a, b| Value::bool(a < b))?,
                    OpCode::Add => self.op_add(&mut r)?,
                    OpCode::Subtract => self.op_numbers(&mut r, |a, b| Value::number(a - b))?,
                    OpCode::Multiply => self.op_numbers(&mut r, |a, b| Value::number(a * b))?,
                    OpCode::Divide => self.op_numbers(&mut r, |a, b| Value::number(a / b))?,
                    OpCode::Not => r.replace(0, Value::bool(r.peek(0).is_falsey())),
                    OpCode::Negate => self.op_negate(&mut r)?,
                    OpCode::Print => {
                        std::hint::cold_path();
                        let value = r.pop();
                        self.print_line(value);
                    }
                    OpCode::Jump => {
                        let distance = r.short();
                        r.ip = r.ip.add(distance);
                    }
                    OpCode::JumpIfFalse => {
                        let distance = r.short();
                        if r.peek(0).is_falsey() {
                            r.ip = r.ip.add(distance);
                        }
                    }
                    OpCode::Loop => {
                        let distance = r.short();
                        r.ip = r.ip.sub(distance);
                        // A back-edge: the safepoint poll (3).
                        self.stack.publish(r.sp);
                        self.heap.poll();
                        self.reload(&mut r);
                    }
                    OpCode::Call => self.op_call(&mut r)?,
                    OpCode::Invoke => self.op_invoke(&mut r)?,
                    OpCode::SuperInvoke => self.op_super_invoke(&mut r)?,
                    OpCode::Closure => self.op_closure(&mut r)?,
                    OpCode::CloseUpvalue => self.op_close_upvalue(&mut r),
                    OpCode::Return => {
                        if self.op_return(&mut r) {
                            return Ok(());
                        }
                    }
                    OpCode::Class => {
                        std::hint::cold_path();
                        self.op_class(&mut r)?;
                    }
                    OpCode::Inherit => {
                        std::hint::cold_path();
                        self.op_inherit(&mut r)?;
                    }
                    OpCode::Method => {
                        std::hint::cold_path();
                        self.op_method(&mut r)?;
                    }
                }
            }
        }
    }
}
