//! `GET_PROPERTY`, `SET_PROPERTY`, `GET_SUPER`: a field from the
//! instance's table, else a method of its class bound to the instance.
//! Growing a field table and binding a method allocate: the stack is saved
//! before and the registers reloaded after (invariant 3).

use super::super::Machine;
use super::super::error::RuntimeError;
use super::super::home::TableHome;
use super::super::object::{Kind, Obj, class, instance, is};
use super::super::table::{self, Pairs, SetOutcome};
use super::super::value::Value;
use super::regs::{Regs, Site};
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `GET_PROPERTY k`: `instance -> instance.name`, a field or a bound
    /// method.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_get_property(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: the receiver is checked to be an instance before it is
        // used as one (4); `k` is a string constant (1); its fields and
        // class are read through the barrier (5); a method found is pushed
        // (2) and bound by `bind_top`, which saves and reloads (3).
        unsafe {
            let receiver = r.peek(0);
            if !is(receiver, Kind::Instance) {
                return Err(self.throw(r.site(), "Only instances have properties."));
            }
            let k = r.byte();
            let name = r.constant(&self.heap, k);
            let object = Obj::new(receiver);
            // Two ways to a field, each with its own exit: one test of what
            // was found after both would cost every field read.
            if let Some(fields) = Pairs::inline_fields(object) {
                if let Some(value) = table::lookup(&self.heap, fields, name) {
                    r.replace(0, value);
                    return Ok(());
                }
            } else if let Some(value) = table::get_field_elsewhere(&self.heap, object, name) {
                r.replace(0, value);
                return Ok(());
            }
            let class = Obj::new(self.heap.peek(object.word(instance::CLASS)));
            let Some(method) = self.method(class, name) else {
                return Err(self.undefined_property(r.site(), name));
            };
            r.push(method);
            self.bind_top(r)
        }
    }

    /// `SET_PROPERTY k`: `instance value -> value`, `instance.name = value`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_set_property(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: as in `op_get_property`; the value is stored through the
        // barrier (5); a full table grows with the stack saved and the
        // registers reloaded after (3), then the instruction runs again
        // (`ip` back over its operand and opcode, inside the code: 1).
        unsafe {
            let receiver = r.peek(1);
            if !is(receiver, Kind::Instance) {
                return Err(self.throw(r.site(), "Only instances have fields."));
            }
            let k = r.byte();
            let name = r.constant(&self.heap, k);
            let value = r.peek(0);
            let object = Obj::new(receiver);
            match table::set_field(&self.heap, object, name, value) {
                SetOutcome::Added => {
                    object.set_count(object.count() + 1);
                    // A new field named like a method of the class: from
                    // now on `INVOKE` looks at the fields first.
                    let class = Obj::new(self.heap.peek(object.word(instance::CLASS)));
                    if class.raw(class::SHADOWED) == 0 && self.method(class, name).is_some() {
                        class.set_raw(class::SHADOWED, 1);
                    }
                }
                SetOutcome::Replaced => {}
                SetOutcome::Full => {
                    self.save(r);
                    let holder = r.sp.sub(2);
                    self.grow_table(TableHome::Fields { holder })
                        .map_err(|e| self.heap_error(e))?;
                    self.reload(r);
                    // Again, now that the table has room.
                    r.ip = r.ip.sub(2);
                    return Ok(());
                }
            }
            r.replace(1, value);
            r.drop_values(1);
        }
        Ok(())
    }

    /// `GET_SUPER k`: `this superclass -> bound method`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_get_super(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a string constant (1); `super_method` checks the
        // superclass's kind (4); the method replaces the superclass on the
        // stack (2) and is bound by `bind_top` (3).
        unsafe {
            let k = r.byte();
            let name = r.constant(&self.heap, k);
            let superclass = r.pop();
            let Some(method) = self.super_method(superclass, name) else {
                return Err(self.undefined_property(r.site(), name));
            };
            r.push(method);
            self.bind_top(r)
        }
    }

    /// Binds the method on top to the receiver below it, leaving the bound
    /// method in the receiver's place. **Allocates.**
    ///
    /// # Safety
    /// The handlers' contract; the top is a closure, a receiver below it.
    #[inline(always)]
    unsafe fn bind_top(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: the stack saved before the allocation and the registers
        // reloaded after (3); the two words are the frame's (2).
        unsafe {
            self.save(r);
            self.bind_method(r.sp).map_err(|e| self.heap_error(e))?;
            r.drop_values(1);
            self.reload(r);
        }
        Ok(())
    }

    /// "Undefined property" for the name `name` (a string valid now), at
    /// `site`.
    ///
    /// # Safety
    /// As [`Vm::throw`].
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn undefined_property(&mut self, site: Site, name: Value) -> RuntimeError {
        // SAFETY: the caller's site; `text` copies the name out before
        // anything may collect.
        unsafe { self.throw_message(site, format!("Undefined property '{}'.", self.text(name))) }
    }
}
