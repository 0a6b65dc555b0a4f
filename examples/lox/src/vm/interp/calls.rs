//! Calls and returns: `CALL`, `INVOKE`, `SUPER_INVOKE`, `RETURN`. A call to
//! a closure pushes a frame (its function's deepest stack checked against
//! the room left: invariant 2); a class is instantiated, then its
//! initializer called; a bound method calls its method with its receiver
//! in slot 0; a native runs at once.

use super::super::Frame;
use super::super::Machine;
use super::super::error::RuntimeError;
use super::super::gc::roots::{FRAMES_MAX, OPEN_UPVALUES};
use super::super::gc::stack::SLACK;
use super::super::natives::Native;
use super::super::object::{Kind, Obj, bound, class, closure, function, instance, is};
use super::super::print::function_meta;
use super::super::table;
use super::super::value::Value;
use super::regs::{Regs, Site};
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `CALL argc`: `callee args -> result`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_call(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: the callee and its `argc` arguments are on the frame's
        // stack (1: the verifier's stack heights).
        unsafe {
            let argc = usize::from(r.byte());
            self.call_value(r, r.peek(argc), argc)
        }
    }

    /// `INVOKE k argc`: `receiver args -> result`, calling the receiver's
    /// field or method named by constant `k`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_invoke(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a string constant and the receiver and arguments
        // are on the frame's stack (1); the receiver's kind is checked (4);
        // its fields and class are read through the barrier (5); a field
        // replaces the receiver (2) before it is called.
        unsafe {
            let k = r.byte();
            let name = r.constant(&self.heap, k);
            let argc = usize::from(r.byte());
            let receiver = r.peek(argc);
            if !is(receiver, Kind::Instance) {
                return Err(self.throw(r.site(), "Only instances have methods."));
            }
            let object = Obj::new(receiver);
            let class = Obj::new(self.heap.peek(object.word(instance::CLASS)));
            // A field shadows a method of the same name; until an instance
            // of the class has had such a field, the method is looked for
            // first (the field lookup would miss).
            let shadowed = class.raw(class::SHADOWED) != 0;
            if !shadowed && let Some(method) = self.method(class, name) {
                return self.call_closure(r, Obj::new(method), argc);
            }
            if let Some(value) = table::get_field_elsewhere(&self.heap, object, name) {
                r.replace(argc, value);
                return self.call_value(r, value, argc);
            }
            let method = if shadowed {
                self.method(class, name)
            } else {
                None
            };
            let Some(method) = method else {
                return Err(self.undefined_property(r.site(), name));
            };
            self.call_closure(r, Obj::new(method), argc)
        }
    }

    /// `SUPER_INVOKE k argc`: `this args superclass -> result`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_super_invoke(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a string constant and the operands are on the
        // frame's stack (1); `super_method` checks the superclass's kind
        // (4) and finds a closure (only closures are methods).
        unsafe {
            let k = r.byte();
            let name = r.constant(&self.heap, k);
            let argc = usize::from(r.byte());
            let superclass = r.pop();
            let Some(method) = self.super_method(superclass, name) else {
                return Err(self.undefined_property(r.site(), name));
            };
            self.call_closure(r, Obj::new(method), argc)
        }
    }

    /// `RETURN`: pops the frame, its result replacing its window; whether
    /// that was the script's frame (the run is over).
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_return(&mut self, r: &mut Regs) -> bool {
        // SAFETY: the result is on the frame's stack (1); upvalues open on
        // the frame's words are closed while those words still hold their
        // values; the caller's frame is entered and its registers reloaded
        // (3); the result's push fits where the callee was (2).
        unsafe {
            let result = r.pop();
            if Value::from_bits(*r.roots.add(OPEN_UPVALUES)).is_object() {
                self.close_upvalues(r.base);
            }
            self.frame_count -= 1;
            *r.frame_root(self.frame_count) = Value::NIL.bits();
            r.sp = r.base;
            if self.frame_count == 0 {
                self.stack.publish(r.sp);
                return true;
            }
            r.push(result);
            self.enter(r);
        }
        false
    }

    /// Calls `callee` with the `argc` arguments below `r.sp`: its kind
    /// decides how (4).
    ///
    /// # Safety
    /// The handlers' contract; `callee` is valid now and in the stack word
    /// below the arguments.
    #[inline(always)]
    unsafe fn call_value(
        &mut self,
        r: &mut Regs,
        callee: Value,
        argc: usize,
    ) -> Result<(), RuntimeError> {
        // SAFETY: each kind is checked before the callee is used as one
        // (4); a bound method's receiver replaces it on the stack (2) and
        // its method is read through the barrier (5); instantiating a
        // class allocates, with the stack saved before and the registers
        // reloaded after (3); a native's arguments are the frame's words.
        unsafe {
            let mut callee = callee;
            if is(callee, Kind::BoundMethod) {
                let method = Obj::new(callee);
                r.replace(argc, self.heap.load(method.word(bound::RECEIVER)));
                callee = self.heap.load(method.word(bound::METHOD));
            }
            if is(callee, Kind::Closure) {
                self.call_closure(r, Obj::new(callee), argc)
            } else if is(callee, Kind::Class) {
                self.save(r);
                let init = self
                    .instantiate(r.sp.sub(argc + 1))
                    .map_err(|e| self.heap_error(e))?;
                self.reload(r);
                if init.is_object() {
                    self.call_closure(r, Obj::new(init), argc)
                } else if argc != 0 {
                    Err(self.wrong_arity(r.site(), 0, argc))
                } else {
                    Ok(())
                }
            } else if is(callee, Kind::Native) {
                let result = self.call_native(Obj::new(callee), r.sp, argc);
                r.drop_values(argc + 1);
                r.push(result);
                Ok(())
            } else {
                Err(self.throw(r.site(), "Can only call functions and classes."))
            }
        }
    }

    /// Calls the closure `c` with the `argc` arguments below `r.sp`: a
    /// new frame, entered.
    ///
    /// # Safety
    /// The handlers' contract; `c` is a closure valid now, in the stack
    /// word below the arguments.
    #[inline(always)]
    unsafe fn call_closure(
        &mut self,
        r: &mut Regs,
        c: Obj,
        argc: usize,
    ) -> Result<(), RuntimeError> {
        // SAFETY: the closure's function (never moved, read without the
        // barrier: 5) has its metadata in metaspace; the new frame is below `FRAMES_MAX`
        // (the frames are indexed unchecked) and its deepest stack plus
        // `SLACK` fits above its base (2), both checked before it is
        // pushed; its code was verified (1).
        unsafe {
            let f = Obj::new(self.heap.peek(c.word(closure::FUNCTION)));
            let meta = function_meta(f);
            if argc != usize::from(meta.arity) {
                return Err(self.wrong_arity(r.site(), meta.arity.into(), argc));
            }
            let new_base = r.sp.sub(argc + 1);
            if self.frame_count == FRAMES_MAX
                || !self.stack.fits(new_base, meta.max_stack as usize + SLACK)
            {
                return Err(self.throw(r.site(), "Stack overflow."));
            }
            // `1 <= frame_count < FRAMES_MAX`: a frame runs, and one more
            // fits (checked above).
            (*r.frames.add(self.frame_count - 1)).ip = r.ip;
            *r.frames.add(self.frame_count) = Frame {
                ip: meta.code,
                base: new_base,
            };
            *r.frame_root(self.frame_count) = c.value().bits();
            self.frame_count += 1;
            r.ip = meta.code;
            r.base = new_base;
            r.consts = f.word(function::CONSTANTS);
        }
        Ok(())
    }

    /// "Expected `expected` arguments but got `got`", at `site`.
    ///
    /// # Safety
    /// As [`Vm::throw`].
    #[cold]
    #[inline(never)]
    unsafe fn wrong_arity(&mut self, site: Site, expected: usize, got: usize) -> RuntimeError {
        let message = format!("Expected {expected} arguments but got {got}.");
        // SAFETY: the caller's site.
        unsafe { self.throw_message(site, message) }
    }

    /// Calls the native `native` with the `argc` values below `top`.
    ///
    /// # Safety
    /// `native` is a native object valid now; the `argc` words below `top`
    /// are in use.
    unsafe fn call_native(&mut self, native: Obj, top: *mut u64, argc: usize) -> Value {
        // SAFETY: the caller's stack words, each a `Value` (`repr(transparent)`
        // over `u64`).
        let args = unsafe { std::slice::from_raw_parts(top.sub(argc) as *const Value, argc) };
        match Native::from_number(native.count()) {
            Some(native) => native.call(args),
            None => Value::NIL,
        }
    }
}
