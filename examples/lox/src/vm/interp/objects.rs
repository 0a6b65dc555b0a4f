//! Classes, instances and methods: `CLASS`, `INHERIT` and `METHOD`, the
//! slow paths that allocate (an instance, a bound method, a class, a
//! method table) and the method lookups.
//!
//! Each allocating helper is called with the value stack published and
//! reads its operands from the stack (or the running frame's constants)
//! after allocating, never before.

use super::super::Machine;
use super::super::error::{HeapError, RuntimeError};
use super::super::gc::roots::{FRAMES, INIT};
use super::super::home::TableHome;
use super::super::object::{
    Kind, Obj, bound, class, closure, function, header, instance, instance_header, is, size_of,
    string_bytes,
};
use super::super::print::function_meta;
use super::super::table::{self, Birth, Pairs, SetOutcome, entries_size};
use super::super::value::Value;
use super::regs::Regs;
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `CLASS k`: `-> class` named by constant `k`. **Allocates.**
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_class(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a string constant (1); the class is pushed (2);
        // the stack is saved before the allocation and the registers
        // reloaded after (3).
        unsafe {
            let k = r.byte();
            self.save(r);
            self.new_class(k, r.sp).map_err(|e| self.heap_error(e))?;
            r.sp = r.sp.add(1);
            self.reload(r);
        }
        Ok(())
    }

    /// `INHERIT`: `superclass class -> superclass`, the class getting the
    /// superclass's methods. **Allocates.**
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_inherit(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: the superclass's kind is checked (4), the class below it
        // is the one `CLASS` made (1); saved and reloaded around the
        // allocation (3).
        unsafe {
            if !is(r.peek(1), Kind::Class) {
                return Err(self.throw(r.site(), "Superclass must be a class."));
            }
            self.save(r);
            self.inherit(r.sp).map_err(|e| self.heap_error(e))?;
            r.drop_values(1);
            self.reload(r);
        }
        Ok(())
    }

    /// `METHOD k`: `class closure -> class`, the closure its method named
    /// by constant `k`. **May allocate.**
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_method(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a string constant and the stack holds a class and
        // a closure (1: the compiler's output); saved and reloaded around
        // the allocation (3).
        unsafe {
            let k = r.byte();
            self.save(r);
            self.define_method(k, r.sp)
                .map_err(|e| self.heap_error(e))?;
            r.drop_values(1);
            self.reload(r);
        }
        Ok(())
    }

    /// Constant `k` of the running frame's function.
    ///
    /// # Safety
    /// `k` is below the function's constant count.
    pub(super) unsafe fn constant(&self, k: u8) -> Value {
        let c = self.roots.get(FRAMES + self.frame_count - 1);
        // SAFETY: a frame's closure and its function, valid now (read from
        // the root); the caller's constant index. A closure's function and
        // a function's constants never move (`Heap::peek`): no load
        // barrier, which in the concurrent copy made this function too
        // large to inline.
        unsafe {
            let f = Obj::new(self.heap.peek(Obj::new(c).word(closure::FUNCTION)));
            self.heap.peek(f.word(function::CONSTANTS + usize::from(k)))
        }
    }

    /// A string's text, for an error message.
    pub(super) fn text(&self, s: Value) -> String {
        // SAFETY: a name constant (a string, valid now), copied out at once.
        String::from_utf8_lossy(unsafe { string_bytes(Obj::new(s)) }).into_owned()
    }

    /// The method `name` of `class`.
    ///
    /// # Safety
    /// `class` is a class and `name` a string, valid now.
    #[inline(always)]
    pub(super) unsafe fn method(&self, class: Obj, name: Value) -> Option<Value> {
        // SAFETY: the caller's class (its methods slot holds entries or
        // nil) and string.
        unsafe {
            table::get(
                &self.heap,
                Pairs::of_entries(self.heap.peek(class.word(class::METHODS))),
                name,
            )
        }
    }

    /// The method `name` of `superclass` (`None` if it is not a class:
    /// the compiler only ever puts the superclass there).
    ///
    /// # Safety
    /// `superclass` and `name` (a string) are valid now.
    pub(super) unsafe fn super_method(&self, superclass: Value, name: Value) -> Option<Value> {
        // SAFETY: the caller's valid values; the kind is checked first.
        unsafe {
            if !is(superclass, Kind::Class) {
                return None;
            }
            self.method(Obj::new(superclass), name)
        }
    }

    /// Binds the method in stack word `top - 1` to the receiver in
    /// `top - 2`, leaving the bound method in `top - 2`. **Allocates.**
    ///
    /// # Safety
    /// The stack is published up to `top`; `top - 1` holds a closure.
    pub(super) unsafe fn bind_method(&mut self, top: *mut u64) -> Result<(), HeapError> {
        let addr = self.heap.alloc(size_of(Kind::BoundMethod, 0))?;
        // SAFETY: a fresh bound method, every word written; receiver and
        // method read from their stack words after the allocation.
        unsafe {
            let b = Obj::at(addr);
            b.set_raw(0, header(Kind::BoundMethod, 0));
            b.set_raw(bound::RECEIVER, top.sub(2).read());
            b.set_raw(bound::METHOD, top.sub(1).read());
            top.sub(2).write(b.value().bits());
        }
        Ok(())
    }

    /// Replaces the class in stack word `slot` by a new instance of it and
    /// returns the class's initializer (nil for none). **Allocates.**
    ///
    /// The instance has room in its own words for the class's fields hint:
    /// as many fields as its initializer sets on `this`, or as an instance
    /// of the class has had, whichever is more.
    ///
    /// # Safety
    /// The stack is published past `slot`, which holds a class.
    pub(super) unsafe fn instantiate(&mut self, slot: *mut u64) -> Result<Value, HeapError> {
        // SAFETY: the caller's class, read before the allocation only for
        // its hint (a number).
        let inline = table::inline_capacity(unsafe {
            Obj::new(Value::from_bits(slot.read())).raw(class::FIELDS_HINT)
        });
        let addr = self.heap.alloc(size_of(Kind::Instance, inline))?;
        // SAFETY: a fresh instance, every word written; the class read from
        // its stack word after the allocation.
        unsafe {
            let class = Value::from_bits(slot.read());
            let object = Obj::at(addr);
            object.set_raw(0, instance_header(inline, 0));
            object.set_raw(instance::CLASS, class.bits());
            object.set_raw(instance::FIELDS, Value::NIL.bits());
            table::fill_empty(object.word(instance::INLINE), inline);
            slot.write(object.value().bits());
            Ok(self.heap.load(Obj::new(class).word(class::INIT)))
        }
    }

    /// Makes the class named by constant `k` in stack word `top` (the
    /// caller pushes it). **Allocates.**
    ///
    /// # Safety
    /// The stack is published up to `top`, which has room; constant `k` is
    /// a string.
    pub(super) unsafe fn new_class(&mut self, k: u8, top: *mut u64) -> Result<(), HeapError> {
        // Never moved, so that an instance's class is read without the
        // load barrier (`Heap::peek`): a method call reads it every time.
        let addr = self.heap.alloc_non_moving(size_of(Kind::Class, 0))?;
        // SAFETY: a fresh class, every word written; the name read after
        // the allocation.
        unsafe {
            let c = Obj::at(addr);
            c.set_raw(0, header(Kind::Class, 0));
            c.set_raw(class::NAME, self.constant(k).bits());
            c.set_raw(class::METHODS, Value::NIL.bits());
            c.set_raw(class::INIT, Value::NIL.bits());
            c.set_raw(class::FIELDS_HINT, 0);
            c.set_raw(class::SHADOWED, 0);
            top.write(c.value().bits());
        }
        Ok(())
    }

    /// `INHERIT`: copies the methods of the superclass in `top - 2` into
    /// the (new, method-less) class in `top - 1`. **Allocates.**
    ///
    /// # Safety
    /// The stack is published up to `top`; `top - 2` holds a class (the
    /// caller checked) and `top - 1` the class just made.
    pub(super) unsafe fn inherit(&mut self, top: *mut u64) -> Result<(), HeapError> {
        // SAFETY: the caller's classes, read from the stack now and again
        // after the allocation; the copy is a fresh `Entries` of the same
        // capacity, filled with the superclass's pairs before use.
        unsafe {
            let superclass = Obj::new(Value::from_bits(top.sub(2).read()));
            let methods = self.heap.load(superclass.word(class::METHODS));
            if methods.is_object() {
                let capacity = Obj::new(methods).count();
                // Never moved, as every class's methods (`grow_table`), and
                // so filled through the store barrier.
                let addr = self.heap.alloc_non_moving(entries_size(capacity))?;
                let superclass = Obj::new(Value::from_bits(top.sub(2).read()));
                let from = self.heap.load(superclass.word(class::METHODS));
                let from = Pairs::of_entries(from);
                let copy = table::fill_grown(&self.heap, addr, capacity, from, Birth::NonMoving);
                let subclass = Obj::new(Value::from_bits(top.sub(1).read()));
                self.heap.store(subclass.word(class::METHODS), copy.value());
                subclass.set_count(superclass.count());
            }
            let superclass = Obj::new(Value::from_bits(top.sub(2).read()));
            let subclass = Obj::new(Value::from_bits(top.sub(1).read()));
            let init = self.heap.load(superclass.word(class::INIT));
            self.heap.store(subclass.word(class::INIT), init);
            // A subclass's instances have its superclass's fields too.
            subclass.set_raw(class::FIELDS_HINT, superclass.raw(class::FIELDS_HINT));
        }
        Ok(())
    }

    /// `METHOD k`: adds the closure in `top - 1` to the class in `top - 2`
    /// as the method named by constant `k`. **May allocate.**
    ///
    /// # Safety
    /// The stack is published up to `top`; `top - 2` holds a class and
    /// `top - 1` a closure (the compiler's output); constant `k` is a
    /// string.
    pub(super) unsafe fn define_method(&mut self, k: u8, top: *mut u64) -> Result<(), HeapError> {
        let home = TableHome::Methods {
            holder: top.wrapping_sub(2),
        };
        // SAFETY: the caller's stack words and constant, read again on each
        // round (growing the table allocates).
        unsafe {
            loop {
                let name = self.constant(k);
                let method = Value::from_bits(top.sub(1).read());
                let (entries, count) = self.table(home);
                match table::set(&self.heap, entries, count, name, method) {
                    SetOutcome::Added => self.count_key(home),
                    SetOutcome::Replaced => {}
                    SetOutcome::Full => {
                        self.grow_table(home)?;
                        continue;
                    }
                }
                if name == self.roots.get(INIT) {
                    let class = Obj::new(Value::from_bits(top.sub(2).read()));
                    self.heap.store(class.word(class::INIT), method);
                    // The fields the initializer sets: each instance gets
                    // room for them when it is made, the first one too.
                    let function =
                        Obj::new(self.heap.load(Obj::new(method).word(closure::FUNCTION)));
                    let fields = u64::from(function_meta(function).this_fields);
                    let hint = class.raw(class::FIELDS_HINT).max(fields);
                    class.set_raw(class::FIELDS_HINT, hint);
                }
                return Ok(());
            }
        }
    }
}
