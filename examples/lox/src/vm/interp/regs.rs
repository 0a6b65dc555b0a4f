//! [`Regs`]: the running frame's registers, which `run` keeps in one local
//! (the instruction pointer, the stack's top and the frame's base, the
//! closure's constants, and the first words of the root block and of the
//! frames, which never move), the operand and stack accessors every
//! instruction uses, and the moves around a call that may collect
//! (invariant 3 of the module): [`Vm::save`] before it, [`Vm::reload`]
//! after it, [`Vm::enter`] after a call or a return.
//!
//! Every accessor is `#[inline(always)]`: once inlined into `run`, the
//! registers live in machine registers, as the locals of the loop did when
//! it was one function. Which values are registers matters more than it
//! looks: with the root block and the frames reached through `self`, every
//! call and return took two more dependent loads and the benches ran 1.10x
//! slower (fib 1.37x).

use super::super::error::RuntimeError;
use super::super::gc::Heap;
use super::super::gc::roots::{FRAMES, GLOBAL_VALUES};
use super::super::object::{Obj, closure, function};
use super::super::value::Value;
use super::super::{Frame, Machine};
use crate::bytecode::OpCode;
use hotmem::BarrierSet;

/// The running frame's registers.
#[derive(Copy, Clone, Debug)]
pub(super) struct Regs {
    /// The next byte of the running frame's code (in metaspace: it never
    /// moves).
    pub(super) ip: *const u8,
    /// One past the top of the value stack.
    pub(super) sp: *mut u64,
    /// Slot 0 of the running frame.
    pub(super) base: *mut u64,
    /// The first constant of the running closure's function (the closure
    /// itself is read from its frame's root word when an instruction
    /// needs it: [`Vm::running_closure`]; one register fewer to keep).
    pub(super) consts: *mut u64,
    /// The root block's first word (`Vm::roots`, which never moves): kept
    /// here so that calls and returns reach the frames' root words
    /// without a load through `self`.
    pub(super) roots: *mut u64,
    /// The first frame (`Vm::frames`, boxed: it never moves).
    pub(super) frames: *mut Frame,
}

/// Where a runtime error happens: the two registers [`Vm::throw`] saves.
#[derive(Copy, Clone, Debug)]
pub(super) struct Site {
    ip: *const u8,
    sp: *mut u64,
}

impl Regs {
    /// Where the running instruction is, for [`Vm::throw`].
    #[inline(always)]
    pub(super) fn site(&self) -> Site {
        Site {
            ip: self.ip,
            sp: self.sp,
        }
    }

    /// The opcode at `ip`, which moves past it.
    ///
    /// # Safety
    /// `ip` is at an instruction of verified code (invariant 1).
    #[inline(always)]
    pub(super) unsafe fn opcode(&mut self) -> OpCode {
        // SAFETY: the caller's verified instruction starts with a valid
        // opcode byte, and `OpCode` is `repr(u8)`.
        unsafe { std::mem::transmute::<u8, OpCode>(self.byte()) }
    }

    /// The one-byte operand at `ip`, which moves past it.
    ///
    /// # Safety
    /// `ip` is at a one-byte operand of verified code (invariant 1).
    #[inline(always)]
    pub(super) unsafe fn byte(&mut self) -> u8 {
        // SAFETY: the caller's operand byte, inside the code; the next
        // byte is still inside it (or one past its end).
        unsafe {
            let b = *self.ip;
            self.ip = self.ip.add(1);
            b
        }
    }

    /// The two-byte (little-endian) operand at `ip`, which moves past it.
    ///
    /// # Safety
    /// `ip` is at a two-byte operand of verified code (invariant 1).
    #[inline(always)]
    pub(super) unsafe fn short(&mut self) -> usize {
        // SAFETY: the caller's two operand bytes, read unaligned.
        unsafe {
            let s = (self.ip as *const u16).read_unaligned();
            self.ip = self.ip.add(2);
            usize::from(u16::from_le(s))
        }
    }

    /// Pushes `v`.
    ///
    /// # Safety
    /// The instruction's pushes fit the frame's window (invariant 2).
    #[inline(always)]
    pub(super) unsafe fn push(&mut self, v: Value) {
        // SAFETY: the caller's room above the top.
        unsafe {
            *self.sp = v.bits();
            self.sp = self.sp.add(1);
        }
    }

    /// Pops the top value.
    ///
    /// # Safety
    /// The frame's stack holds a value above its base (invariant 2).
    #[inline(always)]
    pub(super) unsafe fn pop(&mut self) -> Value {
        // SAFETY: the caller's word in use.
        unsafe {
            self.sp = self.sp.sub(1);
            Value::from_bits(*self.sp)
        }
    }

    /// Drops the `n` values on top.
    ///
    /// # Safety
    /// The frame's stack holds `n` values above its base (invariant 2).
    #[inline(always)]
    pub(super) unsafe fn drop_values(&mut self, n: usize) {
        // SAFETY: the caller's words in use.
        self.sp = unsafe { self.sp.sub(n) };
    }

    /// The value `distance` words below the top (0: the top).
    ///
    /// # Safety
    /// The frame's stack holds more than `distance` values (invariant 2).
    #[inline(always)]
    pub(super) unsafe fn peek(&self, distance: usize) -> Value {
        // SAFETY: the caller's word in use.
        Value::from_bits(unsafe { *self.sp.sub(1 + distance) })
    }

    /// Replaces the value `distance` words below the top.
    ///
    /// # Safety
    /// As [`Regs::peek`]; `v` is valid now.
    #[inline(always)]
    pub(super) unsafe fn replace(&self, distance: usize, v: Value) {
        // SAFETY: the caller's word in use.
        unsafe { *self.sp.sub(1 + distance) = v.bits() }
    }

    /// The word of the frame's local `slot`.
    ///
    /// # Safety
    /// `slot` is below the stack's height in the frame (invariant 1: the
    /// verifier checks local operands).
    #[inline(always)]
    pub(super) unsafe fn local(&self, slot: usize) -> *mut u64 {
        // SAFETY: the caller's slot, inside the frame's window.
        unsafe { self.base.add(slot) }
    }

    /// Constant `k` of the running function: a number, or a string or
    /// function that never moves, read without the load barrier (see
    /// `loader`).
    ///
    /// # Safety
    /// `k` is below the function's constant count (invariant 1), and
    /// `consts` was reloaded since the last call that may collect
    /// (invariant 3).
    #[inline(always)]
    pub(super) unsafe fn constant<B: BarrierSet>(&self, heap: &Heap<B>, k: u8) -> Value {
        // SAFETY: the caller's constant, a slot of the live function that
        // holds a number or an object that never moves.
        unsafe { heap.peek(self.consts.add(usize::from(k))) }
    }

    /// The root word that holds frame `i`'s closure.
    ///
    /// # Safety
    /// `i < FRAMES_MAX`.
    #[inline(always)]
    pub(super) unsafe fn frame_root(&self, i: usize) -> *mut u64 {
        // SAFETY: `roots` is the root block's first word, which has
        // `FRAMES + FRAMES_MAX` words at least.
        unsafe { self.roots.add(FRAMES + i) }
    }
}

impl<B: BarrierSet> Machine<B> {
    /// The slot of the globals array that the name constant `k` was
    /// resolved to at load time.
    ///
    /// # Safety
    /// As [`Regs::constant`]; `k` is a global's name constant (the loader
    /// gave it a slot in the function's global-slot array).
    #[inline(always)]
    pub(super) unsafe fn global(&self, r: &Regs, k: u8) -> *mut u64 {
        // SAFETY: the function's `GLOBALS` word, read through `consts`,
        // points at its global-slot array in metaspace, which has an entry
        // for `k`; the globals array (a root) has that slot.
        unsafe {
            let slots = *r.consts.sub(function::CONSTANTS - function::GLOBALS) as *const u32;
            let slot = *slots.add(usize::from(k)) as usize;
            Obj::new(Value::from_bits(*r.roots.add(GLOBAL_VALUES))).word(1 + slot)
        }
    }

    /// The registers of the frame on top, entered.
    ///
    /// # Safety
    /// A frame is on top (`frame_count > 0`), its closure in its root word
    /// and its `ip` and `base` up to date; the value stack is published.
    #[inline(always)]
    pub(super) unsafe fn registers(&mut self) -> Regs {
        let frame = self.frames[self.frame_count - 1];
        // SAFETY: the caller's frame on top, whose closure is in its root.
        let consts = unsafe { self.running_constants() };
        Regs {
            ip: frame.ip,
            sp: self.stack.published(),
            base: frame.base,
            consts,
            roots: self.roots.word(0),
            frames: self.frames.as_mut_ptr(),
        }
    }

    /// The running frame's closure, read from its root word.
    ///
    /// # Safety
    /// A frame is running, its closure in its root word.
    #[inline(always)]
    pub(super) unsafe fn running_closure(&self) -> Obj {
        // SAFETY: the caller's root word holds a closure, live (a root).
        unsafe {
            Obj::new(Value::from_bits(
                *self.roots.word(FRAMES + self.frame_count - 1),
            ))
        }
    }

    /// The first constant of the running closure's function.
    ///
    /// # Safety
    /// As [`Vm::running_closure`].
    #[inline(always)]
    unsafe fn running_constants(&self) -> *mut u64 {
        // SAFETY: the caller's running closure, whose function slot holds
        // a function (the loader's output) that never moves: read without
        // the load barrier (`Heap::peek`).
        unsafe {
            let closure = self.running_closure();
            let function = Obj::new(self.heap.peek(closure.word(closure::FUNCTION)));
            function.word(function::CONSTANTS)
        }
    }

    /// Before a call that may collect (invariant 3): the running frame's
    /// `ip` saved (for a stack trace) and the stack's height published.
    ///
    /// # Safety
    /// `r` is the running frame's; every word below `r.sp` holds a valid
    /// value.
    #[inline(always)]
    pub(super) unsafe fn save(&mut self, r: &Regs) {
        // SAFETY: a frame runs (`1 <= frame_count <= FRAMES_MAX`); the
        // caller's stack words are what the collector scans.
        unsafe {
            (*r.frames.add(self.frame_count - 1)).ip = r.ip;
            self.stack.publish(r.sp);
        }
    }

    /// After a call that may collect (invariant 3): the running closure's
    /// constants, read again from the frame's root word.
    ///
    /// # Safety
    /// A frame is running, its closure in its root word.
    #[inline(always)]
    pub(super) unsafe fn reload(&self, r: &mut Regs) {
        // SAFETY: the caller's running frame (`1 <= frame_count <=
        // FRAMES_MAX`), whose root word holds its closure, whose function
        // slot holds a function that never moves, read without the
        // barrier. Read through `r.roots` rather than `running_constants`:
        // this runs on every call and return.
        r.consts = unsafe {
            let closure = Obj::new(Value::from_bits(*r.frame_root(self.frame_count - 1)));
            let function = Obj::new(self.heap.peek(closure.word(closure::FUNCTION)));
            function.word(function::CONSTANTS)
        };
    }

    /// Enters the frame on top after a call or a return: its `ip` and
    /// `base`, then [`Vm::reload`].
    ///
    /// # Safety
    /// As [`Vm::reload`]; the frame's `ip` and `base` are up to date.
    #[inline(always)]
    pub(super) unsafe fn enter(&self, r: &mut Regs) {
        // SAFETY: the caller's frame on top (`1 <= frame_count <=
        // FRAMES_MAX`).
        unsafe {
            let frame = *r.frames.add(self.frame_count - 1);
            r.ip = frame.ip;
            r.base = frame.base;
            self.reload(r);
        }
    }

    /// The runtime error `message` at `site` (saved first, for the stack
    /// trace). Out of line and cold, like every error path of the loop,
    /// with only the two registers it needs and a `&str` (the `String` is
    /// made here): the less of them `run` holds, the better its hot arms
    /// are laid out and its registers kept (inlined, the error paths made
    /// the loop 1.5x slower on `equality.lox`).
    ///
    /// # Safety
    /// `site` is the running frame's ([`Regs::site`]).
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn throw(&mut self, site: Site, message: &str) -> RuntimeError {
        // SAFETY: the caller's site.
        unsafe { self.throw_message(site, message.to_owned()) }
    }

    /// [`Vm::throw`] with a message made by a cold caller.
    ///
    /// # Safety
    /// As [`Vm::throw`].
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn throw_message(&mut self, site: Site, message: String) -> RuntimeError {
        // SAFETY: a frame runs (`1 <= frame_count <= FRAMES_MAX`); the
        // caller's stack top, every word below it in use.
        unsafe {
            self.frames.get_unchecked_mut(self.frame_count - 1).ip = site.ip;
            self.stack.publish(site.sp);
        }
        self.runtime_error(message)
    }
}
