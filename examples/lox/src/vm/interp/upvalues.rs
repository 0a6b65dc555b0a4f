//! Closures and upvalues: `GET_UPVALUE`, `SET_UPVALUE`, `CLOSURE`,
//! `CLOSE_UPVALUE` and their slow paths. An open upvalue holds the address
//! of the stack word it captures (the shadow stack never moves); closing it
//! copies the value into the upvalue and zeroes the address. The open
//! upvalues form a list from the root block's `OPEN_UPVALUES`, highest
//! stack word first, linked through their `NEXT` slots.

use super::super::Machine;
use super::super::error::{HeapError, RuntimeError};
use super::super::gc::roots::OPEN_UPVALUES;
use super::super::object::{Kind, Obj, closure, header, size_of, upvalue};
use super::super::print::function_meta;
use super::super::value::Value;
use super::regs::Regs;
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// `GET_UPVALUE i`: `-> upvalue i` of the running closure.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_get_upvalue(&mut self, r: &mut Regs) {
        // SAFETY: the closure has upvalue `i` (1), read through the barrier
        // (5); an open upvalue's location is a word of the value stack in
        // use, a closed one's value a slot (5); the push fits (2).
        unsafe {
            let i = usize::from(r.byte());
            let up = Obj::new(
                self.heap
                    .load(self.running_closure().word(closure::UPVALUES + i)),
            );
            let location = up.raw(upvalue::LOCATION) as *const u64;
            let value = if location.is_null() {
                self.heap.load(up.word(upvalue::CLOSED))
            } else {
                Value::from_bits(*location)
            };
            r.push(value);
        }
    }

    /// `SET_UPVALUE i`: `upvalue i = top`.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_set_upvalue(&mut self, r: &mut Regs) {
        // SAFETY: as in `op_get_upvalue`; a closed upvalue's slot is
        // written through the barrier (5), an open one's stack word (a
        // root) directly.
        unsafe {
            let i = usize::from(r.byte());
            let up = Obj::new(
                self.heap
                    .load(self.running_closure().word(closure::UPVALUES + i)),
            );
            let location = up.raw(upvalue::LOCATION) as *mut u64;
            if location.is_null() {
                self.heap.store(up.word(upvalue::CLOSED), r.peek(0));
            } else {
                *location = r.peek(0).bits();
            }
        }
    }

    /// `CLOSURE k (is_local index)*`: `-> closure` of the function constant
    /// `k`, capturing its upvalues. **Allocates.**
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_closure(&mut self, r: &mut Regs) -> Result<(), RuntimeError> {
        // SAFETY: `k` is a function constant and each capture's operands
        // name a local of the frame or an upvalue of the running closure
        // (1); the stack is saved before each allocation and the registers
        // reloaded after (3); the new closure is read from its stack word
        // (pushed: 2) after each, and may be old by then, so its upvalue
        // slots are written through the barrier (5).
        unsafe {
            let k = r.byte();
            self.save(r);
            let count = self.new_closure(k, r.sp).map_err(|e| self.heap_error(e))?;
            r.sp = r.sp.add(1);
            self.reload(r);
            for i in 0..count {
                let is_local = r.byte();
                let index = usize::from(r.byte());
                let captured = if is_local != 0 {
                    self.save(r);
                    let up = self
                        .capture_upvalue(r.local(index))
                        .map_err(|e| self.heap_error(e))?;
                    self.reload(r);
                    up
                } else {
                    self.heap
                        .load(self.running_closure().word(closure::UPVALUES + index))
                };
                let new = Obj::new(r.peek(0));
                self.heap.store(new.word(closure::UPVALUES + i), captured);
            }
        }
        Ok(())
    }

    /// `CLOSE_UPVALUE`: `value ->`, closing the upvalues on its word.
    ///
    /// # Safety
    /// The handlers' contract (see the module).
    #[inline(always)]
    pub(super) unsafe fn op_close_upvalue(&mut self, r: &mut Regs) {
        // SAFETY: the top word is the frame's (2) and still holds its value
        // while the upvalues on it close.
        unsafe {
            self.close_upvalues(r.sp.sub(1));
            r.drop_values(1);
        }
    }

    /// Makes a closure of the function constant `k`, with nil upvalues, in
    /// stack word `top` (the caller pushes it); returns its upvalue count.
    /// **Allocates.**
    ///
    /// # Safety
    /// The stack is published up to `top`, which has room; constant `k` is
    /// a function (verified).
    pub(super) unsafe fn new_closure(&mut self, k: u8, top: *mut u64) -> Result<usize, HeapError> {
        // SAFETY: the caller's function constant, read before and again
        // after the allocation.
        let count = unsafe { function_meta(Obj::new(self.constant(k))) }.upvalues;
        let addr = self.heap.alloc(size_of(Kind::Closure, u32::from(count)))?;
        // SAFETY: a fresh closure, every word written.
        unsafe {
            let c = Obj::at(addr);
            c.set_raw(0, header(Kind::Closure, u32::from(count)));
            c.set_raw(closure::FUNCTION, self.constant(k).bits());
            for i in 0..usize::from(count) {
                c.set_raw(closure::UPVALUES + i, Value::NIL.bits());
            }
            top.write(c.value().bits());
        }
        Ok(usize::from(count))
    }

    /// The open upvalue before which one for `location` goes (`None`: the
    /// list's head), and the one at `location` or below it.
    fn open_upvalue_position(&self, location: *mut u64) -> (Option<Obj>, Value) {
        let mut previous = None;
        let mut up = self.roots.get(OPEN_UPVALUES);
        // SAFETY: the list's upvalues are valid now (read from the root
        // and their `NEXT` slots); their locations are raw words.
        unsafe {
            while up.is_object() {
                let o = Obj::new(up);
                if (o.raw(upvalue::LOCATION) as *mut u64) <= location {
                    break;
                }
                previous = Some(o);
                up = self.heap.load(o.word(upvalue::NEXT));
            }
        }
        (previous, up)
    }

    /// The upvalue capturing the stack word `location`, made if there is
    /// none yet. **May allocate.**
    ///
    /// # Safety
    /// `location` is a word of the running frame's window, below the
    /// published top.
    pub(super) unsafe fn capture_upvalue(
        &mut self,
        location: *mut u64,
    ) -> Result<Value, HeapError> {
        let (_, found) = self.open_upvalue_position(location);
        if found.is_object() {
            // SAFETY: a valid upvalue from the list.
            let at = unsafe { Obj::new(found).raw(upvalue::LOCATION) } as *mut u64;
            if at == location {
                return Ok(found);
            }
        }
        let addr = self.heap.alloc(size_of(Kind::Upvalue, 0))?;
        let (previous, next) = self.open_upvalue_position(location);
        // SAFETY: a fresh upvalue, every word written; it is linked after
        // `previous` (through the barrier: that one may be old) or as the
        // head.
        unsafe {
            let up = Obj::at(addr);
            up.set_raw(0, header(Kind::Upvalue, 0));
            up.set_raw(upvalue::LOCATION, location as u64);
            up.set_raw(upvalue::CLOSED, Value::NIL.bits());
            up.set_raw(upvalue::NEXT, next.bits());
            match previous {
                Some(p) => self.heap.store(p.word(upvalue::NEXT), up.value()),
                None => self.roots.set(OPEN_UPVALUES, up.value()),
            }
            Ok(up.value())
        }
    }

    /// Closes every open upvalue that captures `last` or a word above it.
    ///
    /// # Safety
    /// Every open upvalue's word is still in use (below the stack top the
    /// interpreter had before popping down to `last`).
    ///
    /// Always inlined: the stop-the-world copy inlined it anyway, and the
    /// concurrent copy's call (its barriers made it larger) saved and
    /// restored six registers to close one upvalue.
    #[inline(always)]
    pub(crate) unsafe fn close_upvalues(&mut self, last: *mut u64) {
        loop {
            let head = self.roots.get(OPEN_UPVALUES);
            if !head.is_object() {
                return;
            }
            // SAFETY: the head upvalue, valid now; its location is a stack
            // word in use (the caller's contract), read before the frame's
            // words are reused. `NEXT` is a slot of an upvalue that may be
            // old: clearing it goes through the store barrier, which logs
            // the reference it overwrites for the concurrent collector's
            // snapshot (the next upvalue moves into a root word, which
            // marking does not scan again).
            unsafe {
                let up = Obj::new(head);
                let location = up.raw(upvalue::LOCATION) as *mut u64;
                if location < last {
                    return;
                }
                self.heap
                    .store(up.word(upvalue::CLOSED), Value::from_bits(location.read()));
                up.set_raw(upvalue::LOCATION, 0);
                let next = self.heap.load(up.word(upvalue::NEXT));
                self.heap.store(up.word(upvalue::NEXT), Value::NIL);
                self.roots.set(OPEN_UPVALUES, next);
            }
        }
    }
}
