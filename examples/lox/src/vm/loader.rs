//! The loader: turns the compiler's [`FunctionProto`] tree into heap
//! objects, as a class loader turns class files into classes.
//!
//! For each function, children first: the bytecode is verified
//! ([`verify`]), its code, lines and name are copied into metaspace
//! ([`FunctionMeta`]), a `Function` object is allocated with every constant
//! nil and pushed on the value stack (the loader's root), and then each
//! constant is made (a number as it is, a string interned, a nested
//! function loaded the same way) and stored into it through the barrier.
//! Last, every global the code names is resolved to a slot of the globals
//! array, once, into the function's global-slot array in metaspace: the
//! interpreter's `GET_GLOBAL` is then an index, not a hash lookup.
//!
//! **Never moved.** In the concurrent copy, every function and every
//! string constant is allocated in the runtime's non-moving space
//! ([`Heap::alloc_non_moving`](super::gc::Heap::alloc_non_moving)), as are
//! the natives' names; a string constant that was interned before (a
//! REPL line's result) is pinned instead
//! ([`Heap::keep_in_place`](super::gc::Heap::keep_in_place)). So the slots
//! that hold nothing else are read without the load barrier
//! ([`Heap::peek`](super::gc::Heap::peek)): a function's constants, a
//! closure's function, and a table's keys (a field's, a method's or a
//! global's name: always a constant or a native's name). Classes and
//! their methods' tables are allocated there too, so an instance's class
//! and a class's methods are read the same way (a method, a closure, is
//! young: the table's slots take the store barrier, its first stores
//! too). Those are the hottest loads of the interpreter (a property access
//! reads a name and probes keys, a method call reads the receiver's class
//! and its methods). A script's functions, constants and classes usually
//! live as long as the script; the non-moving pages they fill are freed
//! once none of their objects lives (in a full collection: non-moving
//! objects are old).

use super::Machine;
use super::error::{HeapError, RuntimeError};
use super::gc::roots::{GLOBAL_NAMES, GLOBAL_VALUES};
use super::home::TableHome;
use super::meta::FunctionMeta;
use super::object::{Kind, Obj, function, header, size_of};
use super::table::{self, Pairs, SetOutcome};
use super::value::Value;
use super::verify::{VerifyError, verify};
use crate::bytecode::{Constant, FunctionProto};
use hotmem::BarrierSet;

/// Why a program could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Heap(#[from] HeapError),
    #[error("Stack overflow.")]
    TooDeep,
}

impl From<LoadError> for RuntimeError {
    fn from(error: LoadError) -> RuntimeError {
        RuntimeError {
            message: error.to_string(),
            trace: Vec::new(),
        }
    }
}

/// The first capacity of the globals array.
const MIN_GLOBALS: u32 = 16;

impl<B: BarrierSet> Machine<B> {
    /// Pushes `value` on the published value stack (a root while the
    /// loader allocates).
    pub(crate) fn push_root(&mut self, value: Value) -> Result<*mut u64, LoadError> {
        let top = self.stack.published();
        if !self.stack.fits(top, 1) {
            return Err(LoadError::TooDeep);
        }
        // SAFETY: `top` is below the limit; the word becomes the published
        // top with a valid value.
        unsafe {
            top.write(value.bits());
            self.stack.publish(top.add(1));
        }
        Ok(top)
    }

    /// Pops the top of the published value stack.
    pub(crate) fn pop_root(&mut self) -> Value {
        let top = self.stack.published();
        assert!(top > self.stack.base(), "pop_root on an empty stack");
        // SAFETY: the last word in use; the height shrinks by one.
        unsafe {
            let top = top.sub(1);
            self.stack.publish(top);
            Value::from_bits(top.read())
        }
    }

    /// Loads `proto` and the functions nested in it; returns the function
    /// (valid until the next call that may collect). **May collect.**
    pub(crate) fn load(&mut self, proto: &FunctionProto) -> Result<Value, LoadError> {
        let verified = verify(proto)?;
        let (meta, slots) = FunctionMeta::write(&mut self.loader, proto, verified.max_stack)?;
        let constants = proto.chunk.constants.len();
        let addr = self
            .heap
            .alloc_non_moving(size_of(Kind::Function, constants as u32))?;
        // SAFETY: a fresh function: every word written before use (raw
        // metaspace pointers, then nil constants).
        let f = unsafe {
            let f = Obj::at(addr);
            f.set_raw(0, header(Kind::Function, constants as u32));
            f.set_raw(function::META, meta as u64);
            f.set_raw(function::GLOBALS, slots as u64);
            for k in 0..constants {
                f.set_raw(function::CONSTANTS + k, Value::NIL.bits());
            }
            f
        };
        let holder = self.push_root(f.value())?;
        for (k, constant) in proto.chunk.constants.iter().enumerate() {
            let value = match constant {
                Constant::Number(n) => Value::number(*n),
                Constant::String(s) => self.intern_constant(s.as_bytes())?,
                Constant::Function(nested) => self.load(nested)?,
            };
            // SAFETY: `holder` is the function's root word; `value` was
            // made since the last call that may collect.
            unsafe {
                let f = Obj::new(Value::from_bits(holder.read()));
                self.heap.store(f.word(function::CONSTANTS + k), value);
            }
        }
        for k in verified.globals {
            // SAFETY: the function in its root word; constant `k` is a
            // string (verified).
            let name = unsafe {
                let f = Obj::new(Value::from_bits(holder.read()));
                self.heap.load(f.word(function::CONSTANTS + usize::from(k)))
            };
            let slot = self.global_slot(name)?;
            // SAFETY: `k` is below the constant count: a word of the
            // global-slot array `FunctionMeta::write` made.
            unsafe { slots.add(usize::from(k)).write(slot) };
        }
        Ok(self.pop_root())
    }

    /// The slot of the global `name` (an interned string valid now), made
    /// if it is new. **May collect.**
    pub(crate) fn global_slot(&mut self, name: Value) -> Result<u32, LoadError> {
        // SAFETY: the global-name table from its root, and a string.
        if let Some(slot) = unsafe {
            table::get(
                &self.heap,
                Pairs::of_entries(self.roots.get(GLOBAL_NAMES)),
                name,
            )
        } {
            return Ok(slot.as_number() as u32);
        }
        let slot = self.global_slots;
        let name_at = self.push_root(name)?;
        self.reserve_globals(slot + 1)?;
        loop {
            let home = TableHome::GlobalNames;
            // SAFETY: the name read again from its root word; the global
            // home needs no holder.
            unsafe {
                let name = Value::from_bits(name_at.read());
                let (entries, count) = self.table(home);
                match table::set(&self.heap, entries, count, name, Value::number(slot.into())) {
                    SetOutcome::Added => self.count_key(home),
                    SetOutcome::Replaced => {
                        unreachable!("a new global's name was not in the table")
                    }
                    SetOutcome::Full => {
                        self.grow_table(home)?;
                        continue;
                    }
                }
            }
            break;
        }
        self.pop_root();
        self.global_slots += 1;
        Ok(slot)
    }

    /// Makes the globals array hold at least `slots` slots (new ones
    /// undefined). **May collect.**
    fn reserve_globals(&mut self, slots: u32) -> Result<(), HeapError> {
        let old = self.roots.get(GLOBAL_VALUES);
        let capacity = if old.is_object() {
            // SAFETY: the globals array from its root, read now.
            unsafe { Obj::new(old) }.count()
        } else {
            0
        };
        if slots <= capacity {
            return Ok(());
        }
        let new_capacity = (capacity * 2).max(MIN_GLOBALS).max(slots);
        let addr = self.heap.alloc(size_of(Kind::Array, new_capacity))?;
        // SAFETY: a fresh array, every word written before use; the old one
        // read again from its root after the allocation.
        unsafe {
            let new = Obj::at(addr);
            new.set_raw(0, header(Kind::Array, new_capacity));
            let old = self.roots.get(GLOBAL_VALUES);
            for i in 0..new_capacity as usize {
                let value = if (i as u32) < capacity {
                    self.heap.load(Obj::new(old).word(1 + i))
                } else {
                    Value::ABSENT
                };
                new.set_raw(1 + i, value.bits());
            }
            self.roots.set(GLOBAL_VALUES, new.value());
        }
        Ok(())
    }
}
