//! The interpreter: one loop over the verified bytecode of the running
//! frame, with the instruction pointer, the stack top, the frame's base,
//! its closure and its constants in locals.
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
//!    word ([`reload`]); nothing else heap-allocated is kept in a local
//!    across such a call.
//! 4. **Objects**: a value read from the stack, a root or a slot since the
//!    last such call is valid; an object's kind is checked before it is
//!    used as that kind, unless the compiler's output guarantees it (a
//!    frame's closure, a function constant, the class under `METHOD`).
//! 5. **Barriers**: every reference read out of a heap object goes through
//!    [`Heap::load`](super::gc::heap::Heap::load) and every reference written
//!    into one that may be old through
//!    [`Heap::store`](super::gc::heap::Heap::store).

mod calls;
mod errors;
mod objects;
mod upvalues;

use super::Vm;
use super::error::RuntimeError;
use super::gc::roots::{FRAMES, GLOBAL_VALUES, OPEN_UPVALUES};
use super::gc::stack::SLACK;
use super::object::{Kind, Obj, closure, function, instance, upvalue};
use super::table::{self, SetOutcome};
use super::value::Value;
use super::{Frame, home::TableHome};
use crate::bytecode::{FunctionProto, OpCode};

/// Whether `v` is an object of `kind`.
///
/// # Safety
/// `v` is valid now.
#[inline(always)]
unsafe fn is(v: Value, kind: Kind) -> bool {
    // SAFETY: the caller's valid value; an object's first byte is its kind.
    v.is_object() && unsafe { Obj::new(v) }.is(kind)
}

impl Vm {
    /// Loads `script`, wraps it in a closure in frame 0, and runs it.
    pub(super) fn load_and_run(&mut self, script: &FunctionProto) -> Result<(), RuntimeError> {
        let function = self.load(script)?;
        self.push_root(function)?;
        let addr = self
            .heap
            .alloc(super::object::size_of(Kind::Closure, 0))
            .map_err(|e| self.heap_error(e))?;
        let function = self.pop_root();
        // SAFETY: a fresh closure of no upvalues; its function is valid
        // (read from its root after the allocation).
        let script_closure = unsafe {
            let c = Obj::at(addr);
            c.set_raw(0, super::object::header(Kind::Closure, 0));
            c.set_raw(closure::FUNCTION, function.bits());
            c
        };
        let base = self.push_root(script_closure.value())?;
        // SAFETY: the script's function (verified), read now.
        let meta = unsafe { super::print::function_meta(Obj::new(function)) };
        if !self.stack.fits(base, meta.max_stack as usize + SLACK) {
            return Err(self.runtime_error("Stack overflow.".into()));
        }
        self.frames[0] = Frame {
            ip: meta.code,
            base,
        };
        self.roots.set(FRAMES, script_closure.value());
        self.frame_count = 1;
        self.run()
    }

    /// Runs until the script's frame returns or an error stops it.
    #[allow(clippy::too_many_lines)] // One dispatch loop: every instruction is one arm.
    fn run(&mut self) -> Result<(), RuntimeError> {
        let roots = self.roots.word(0);
        let frames: *mut Frame = self.frames.as_mut_ptr();
        let frame = self.frames[self.frame_count - 1];
        let mut ip: *const u8 = frame.ip;
        let mut base: *mut u64 = frame.base;
        let mut sp: *mut u64 = self.stack.published();
        let mut closure: Obj;
        let mut consts: *mut u64;

        // SAFETY: the module's invariants 1 to 5, which each arm names
        // where it relies on one: operands and jumps are in range (1),
        // pushes and pops stay inside the frame's window of the value stack
        // (2), object addresses are read again after every call that may
        // collect (3), kinds are checked or guaranteed before an object is
        // used as one (4), and heap reads and writes of references take the
        // barriers (5). Frame and root words are indexed below
        // `frame_count <= FRAMES_MAX`.
        unsafe {
            macro_rules! byte {
                () => {{
                    let b = *ip;
                    ip = ip.add(1);
                    b
                }};
            }
            macro_rules! short {
                () => {{
                    let s = (ip as *const u16).read_unaligned();
                    ip = ip.add(2);
                    u16::from_le(s) as usize
                }};
            }
            macro_rules! push {
                ($v:expr) => {{
                    *sp = $v.bits();
                    sp = sp.add(1);
                }};
            }
            macro_rules! pop {
                () => {{
                    sp = sp.sub(1);
                    Value::from_bits(*sp)
                }};
            }
            macro_rules! peek {
                ($distance:expr) => {
                    Value::from_bits(*sp.sub(1 + $distance))
                };
            }
            macro_rules! constant {
                ($k:expr) => {
                    self.heap.load(consts.add($k as usize))
                };
            }
            // Before a call that may collect (3).
            macro_rules! save {
                () => {{
                    (*frames.add(self.frame_count - 1)).ip = ip;
                    self.stack.publish(sp);
                }};
            }
            // After one (3): the running closure and its constants.
            macro_rules! reload {
                () => {{
                    closure = Obj::new(Value::from_bits(*roots.add(FRAMES + self.frame_count - 1)));
                    consts = Obj::new(self.heap.load(closure.word(closure::FUNCTION)))
                        .word(function::CONSTANTS);
                }};
            }
            // Enters the frame on top after a call or a return.
            macro_rules! enter {
                () => {{
                    let frame = *frames.add(self.frame_count - 1);
                    ip = frame.ip;
                    base = frame.base;
                    reload!();
                }};
            }
            macro_rules! throw {
                ($message:expr) => {{
                    save!();
                    return Err(self.runtime_error($message));
                }};
            }
            macro_rules! heap {
                ($result:expr) => {
                    match $result {
                        Ok(value) => value,
                        Err(error) => {
                            save!();
                            return Err(self.heap_error(error));
                        }
                    }
                };
            }
            // Calls the closure `$c` with `$argc` arguments below `sp` (2:
            // the new frame's deepest stack is checked against the room).
            macro_rules! call_closure {
                ($c:expr, $argc:expr) => {{
                    let c: Obj = $c;
                    let argc: usize = $argc;
                    let f = Obj::new(self.heap.load(c.word(closure::FUNCTION)));
                    let meta = super::print::function_meta(f);
                    if argc != usize::from(meta.arity) {
                        throw!(format!("Expected {} arguments but got {argc}.", meta.arity));
                    }
                    let new_base = sp.sub(argc + 1);
                    if self.frame_count == super::gc::roots::FRAMES_MAX
                        || !self.stack.fits(new_base, meta.max_stack as usize + SLACK)
                    {
                        throw!("Stack overflow.".into());
                    }
                    (*frames.add(self.frame_count - 1)).ip = ip;
                    *frames.add(self.frame_count) = Frame {
                        ip: meta.code,
                        base: new_base,
                    };
                    *roots.add(FRAMES + self.frame_count) = c.value().bits();
                    self.frame_count += 1;
                    ip = meta.code;
                    base = new_base;
                    closure = c;
                    consts = f.word(function::CONSTANTS);
                }};
            }
            // Calls any value (4: its kind decides how).
            macro_rules! call_value {
                ($callee:expr, $argc:expr) => {{
                    let argc: usize = $argc;
                    let mut callee: Value = $callee;
                    if is(callee, Kind::BoundMethod) {
                        let bound = Obj::new(callee);
                        *sp.sub(argc + 1) = self
                            .heap
                            .load(bound.word(super::object::bound::RECEIVER))
                            .bits();
                        callee = self.heap.load(bound.word(super::object::bound::METHOD));
                    }
                    if is(callee, Kind::Closure) {
                        call_closure!(Obj::new(callee), argc);
                    } else if is(callee, Kind::Class) {
                        save!();
                        let init = heap!(self.instantiate(sp.sub(argc + 1)));
                        reload!();
                        if init.is_object() {
                            call_closure!(Obj::new(init), argc);
                        } else if argc != 0 {
                            throw!(format!("Expected 0 arguments but got {argc}."));
                        }
                    } else if is(callee, Kind::Native) {
                        let result = self.call_native(Obj::new(callee), sp, argc);
                        sp = sp.sub(argc + 1);
                        push!(result);
                    } else {
                        throw!("Can only call functions and classes.".into());
                    }
                }};
            }
            macro_rules! numbers {
                ($make:expr, $op:tt) => {{
                    let b = peek!(0);
                    let a = peek!(1);
                    if !(a.is_number() && b.is_number()) {
                        throw!("Operands must be numbers.".into());
                    }
                    sp = sp.sub(1);
                    *sp.sub(1) = $make(a.as_number() $op b.as_number()).bits();
                }};
            }
            macro_rules! undefined {
                ($k:expr) => {{
                    let name = constant!($k);
                    throw!(format!("Undefined variable '{}'.", self.text(name)));
                }};
            }
            macro_rules! global {
                ($k:expr) => {{
                    let slots = *consts.sub(function::CONSTANTS - function::GLOBALS) as *const u32;
                    let slot = *slots.add($k as usize) as usize;
                    Obj::new(Value::from_bits(*roots.add(GLOBAL_VALUES))).word(1 + slot)
                }};
            }

            reload!();
            loop {
                // (1): a valid opcode byte.
                let op: OpCode = std::mem::transmute::<u8, OpCode>(byte!());
                match op {
                    OpCode::Constant => {
                        let k = byte!();
                        push!(constant!(k));
                    }
                    OpCode::Nil => push!(Value::NIL),
                    OpCode::True => push!(Value::TRUE),
                    OpCode::False => push!(Value::FALSE),
                    OpCode::Pop => sp = sp.sub(1),
                    OpCode::GetLocal => {
                        let slot = byte!() as usize;
                        *sp = *base.add(slot);
                        sp = sp.add(1);
                    }
                    OpCode::SetLocal => {
                        let slot = byte!() as usize;
                        *base.add(slot) = *sp.sub(1);
                    }
                    OpCode::GetGlobal => {
                        let k = byte!();
                        let value = self.heap.load(global!(k));
                        if value == Value::ABSENT {
                            undefined!(k);
                        }
                        push!(value);
                    }
                    OpCode::DefineGlobal => {
                        let k = byte!();
                        let value = pop!();
                        self.heap.store(global!(k), value);
                    }
                    OpCode::SetGlobal => {
                        let k = byte!();
                        let word = global!(k);
                        if self.heap.load(word) == Value::ABSENT {
                            undefined!(k);
                        }
                        self.heap.store(word, peek!(0));
                    }
                    OpCode::GetUpvalue => {
                        let i = byte!() as usize;
                        let up = Obj::new(self.heap.load(closure.word(closure::UPVALUES + i)));
                        let location = up.raw(upvalue::LOCATION) as *const u64;
                        let value = if location.is_null() {
                            self.heap.load(up.word(upvalue::CLOSED))
                        } else {
                            Value::from_bits(*location)
                        };
                        push!(value);
                    }
                    OpCode::SetUpvalue => {
                        let i = byte!() as usize;
                        let up = Obj::new(self.heap.load(closure.word(closure::UPVALUES + i)));
                        let location = up.raw(upvalue::LOCATION) as *mut u64;
                        if location.is_null() {
                            self.heap.store(up.word(upvalue::CLOSED), peek!(0));
                        } else {
                            *location = peek!(0).bits();
                        }
                    }
                    OpCode::GetProperty => {
                        let receiver = peek!(0);
                        if !is(receiver, Kind::Instance) {
                            throw!("Only instances have properties.".into());
                        }
                        let name = constant!(byte!());
                        let object = Obj::new(receiver);
                        let fields = self.heap.load(object.word(instance::FIELDS));
                        if let Some(value) = table::get(&self.heap, fields, name) {
                            *sp.sub(1) = value.bits();
                            continue;
                        }
                        let class = Obj::new(self.heap.load(object.word(instance::CLASS)));
                        let Some(method) = self.method(class, name) else {
                            throw!(format!("Undefined property '{}'.", self.text(name)));
                        };
                        push!(method);
                        save!();
                        heap!(self.bind_method(sp));
                        sp = sp.sub(1);
                        reload!();
                    }
                    OpCode::SetProperty => {
                        let receiver = peek!(1);
                        if !is(receiver, Kind::Instance) {
                            throw!("Only instances have fields.".into());
                        }
                        let name = constant!(byte!());
                        let value = peek!(0);
                        let object = Obj::new(receiver);
                        let fields = self.heap.load(object.word(instance::FIELDS));
                        match table::set(&self.heap, fields, object.count(), name, value) {
                            SetOutcome::Added => object.set_count(object.count() + 1),
                            SetOutcome::Replaced => {}
                            SetOutcome::Full => {
                                save!();
                                heap!(self.grow_table(TableHome::Fields { holder: sp.sub(2) }));
                                reload!();
                                // Again, now that the table has room.
                                ip = ip.sub(2);
                                continue;
                            }
                        }
                        *sp.sub(2) = value.bits();
                        sp = sp.sub(1);
                    }
                    OpCode::GetSuper => {
                        let name = constant!(byte!());
                        let superclass = pop!();
                        let Some(method) = self.super_method(superclass, name) else {
                            throw!(format!("Undefined property '{}'.", self.text(name)));
                        };
                        push!(method);
                        save!();
                        heap!(self.bind_method(sp));
                        sp = sp.sub(1);
                        reload!();
                    }
                    OpCode::Equal => {
                        let b = pop!();
                        let a = peek!(0);
                        *sp.sub(1) = Value::bool(a.equals(b)).bits();
                    }
                    OpCode::Greater => numbers!(Value::bool, >),
                    OpCode::Less => numbers!(Value::bool, <),
                    OpCode::Add => {
                        let b = peek!(0);
                        let a = peek!(1);
                        if a.is_number() && b.is_number() {
                            sp = sp.sub(1);
                            *sp.sub(1) = Value::number(a.as_number() + b.as_number()).bits();
                        } else if is(a, Kind::String) && is(b, Kind::String) {
                            save!();
                            let result = heap!(self.concatenate(sp.sub(2), sp.sub(1)));
                            sp = sp.sub(1);
                            *sp.sub(1) = result.bits();
                            reload!();
                        } else {
                            throw!("Operands must be two numbers or two strings.".into());
                        }
                    }
                    OpCode::Subtract => numbers!(Value::number, -),
                    OpCode::Multiply => numbers!(Value::number, *),
                    OpCode::Divide => numbers!(Value::number, /),
                    OpCode::Not => *sp.sub(1) = Value::bool(peek!(0).is_falsey()).bits(),
                    OpCode::Negate => {
                        let value = peek!(0);
                        if !value.is_number() {
                            throw!("Operand must be a number.".into());
                        }
                        *sp.sub(1) = Value::number(-value.as_number()).bits();
                    }
                    OpCode::Print => {
                        let value = pop!();
                        self.print_line(value);
                    }
                    OpCode::Jump => {
                        let distance = short!();
                        ip = ip.add(distance);
                    }
                    OpCode::JumpIfFalse => {
                        let distance = short!();
                        if peek!(0).is_falsey() {
                            ip = ip.add(distance);
                        }
                    }
                    OpCode::Loop => {
                        let distance = short!();
                        ip = ip.sub(distance);
                        // A back-edge: the safepoint poll (3).
                        self.stack.publish(sp);
                        self.heap.poll();
                        reload!();
                    }
                    OpCode::Call => {
                        let argc = byte!() as usize;
                        call_value!(peek!(argc), argc);
                    }
                    OpCode::Invoke => {
                        let name = constant!(byte!());
                        let argc = byte!() as usize;
                        let receiver = peek!(argc);
                        if !is(receiver, Kind::Instance) {
                            throw!("Only instances have methods.".into());
                        }
                        let object = Obj::new(receiver);
                        let fields = self.heap.load(object.word(instance::FIELDS));
                        if let Some(value) = table::get(&self.heap, fields, name) {
                            *sp.sub(argc + 1) = value.bits();
                            call_value!(value, argc);
                            continue;
                        }
                        let class = Obj::new(self.heap.load(object.word(instance::CLASS)));
                        let Some(method) = self.method(class, name) else {
                            throw!(format!("Undefined property '{}'.", self.text(name)));
                        };
                        call_closure!(Obj::new(method), argc);
                    }
                    OpCode::SuperInvoke => {
                        let name = constant!(byte!());
                        let argc = byte!() as usize;
                        let superclass = pop!();
                        let Some(method) = self.super_method(superclass, name) else {
                            throw!(format!("Undefined property '{}'.", self.text(name)));
                        };
                        call_closure!(Obj::new(method), argc);
                    }
                    OpCode::Closure => {
                        let k = byte!();
                        save!();
                        let count = heap!(self.new_closure(k, sp));
                        sp = sp.add(1);
                        reload!();
                        for i in 0..count {
                            let is_local = byte!();
                            let index = byte!() as usize;
                            let captured = if is_local != 0 {
                                save!();
                                let up = heap!(self.capture_upvalue(base.add(index)));
                                reload!();
                                up
                            } else {
                                self.heap.load(closure.word(closure::UPVALUES + index))
                            };
                            let new = Obj::new(peek!(0));
                            self.heap.store(new.word(closure::UPVALUES + i), captured);
                        }
                    }
                    OpCode::CloseUpvalue => {
                        self.close_upvalues(sp.sub(1));
                        sp = sp.sub(1);
                    }
                    OpCode::Return => {
                        let result = pop!();
                        if Value::from_bits(*roots.add(OPEN_UPVALUES)).is_object() {
                            self.close_upvalues(base);
                        }
                        self.frame_count -= 1;
                        *roots.add(FRAMES + self.frame_count) = Value::NIL.bits();
                        sp = base;
                        if self.frame_count == 0 {
                            self.stack.publish(sp);
                            return Ok(());
                        }
                        push!(result);
                        enter!();
                    }
                    OpCode::Class => {
                        let k = byte!();
                        save!();
                        heap!(self.new_class(k, sp));
                        sp = sp.add(1);
                        reload!();
                    }
                    OpCode::Inherit => {
                        if !is(peek!(1), Kind::Class) {
                            throw!("Superclass must be a class.".into());
                        }
                        save!();
                        heap!(self.inherit(sp));
                        sp = sp.sub(1);
                        reload!();
                    }
                    OpCode::Method => {
                        let k = byte!();
                        save!();
                        heap!(self.define_method(k, sp));
                        sp = sp.sub(1);
                        reload!();
                    }
                }
            }
        }
    }
}
