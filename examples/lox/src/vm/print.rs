//! Printing values as clox prints them.

use std::io::Write;

use super::Machine;
use super::meta::FunctionMeta;
use super::object::{Kind, Obj, bound, class, closure, function, instance, string_bytes};
use super::value::Value;
use crate::format_number;
use hotmem::BarrierSet;

impl<B: BarrierSet> Machine<B> {
    /// Writes `value` as `print` shows it, then a newline. Output errors
    /// (a closed pipe) are ignored, as clox's `printf` ignores them.
    pub(crate) fn print_line(&mut self, value: Value) {
        let mut text = Vec::new();
        self.write_value(&mut text, value);
        text.push(b'\n');
        let _ = self.out.write_all(&text);
    }

    /// Appends `value`'s text to `out`.
    pub(crate) fn write_value(&self, out: &mut Vec<u8>, value: Value) {
        match value {
            Value::NIL => out.extend_from_slice(b"nil"),
            Value::TRUE => out.extend_from_slice(b"true"),
            Value::FALSE => out.extend_from_slice(b"false"),
            v if v.is_number() => {
                let _ = write!(out, "{}", format_number(v.as_number()));
            }
            // SAFETY: a value the interpreter just popped (valid now).
            v if v.is_object() => self.write_object(out, unsafe { Obj::new(v) }),
            _ => out.extend_from_slice(b"<absent>"),
        }
    }

    fn write_object(&self, out: &mut Vec<u8>, obj: Obj) {
        let field = |o: Obj, word: usize| {
            // SAFETY: a slot of a live object, read before anything may
            // collect; its value is an object of the expected kind.
            unsafe { Obj::new(self.heap.load(o.word(word))) }
        };
        match Kind::from_byte(obj.kind_byte()) {
            // SAFETY: a string, used before anything may collect.
            Some(Kind::String) => out.extend_from_slice(unsafe { string_bytes(obj) }),
            // SAFETY: a function.
            Some(Kind::Function) => unsafe { write_function(out, obj) },
            // SAFETY: a closure's function.
            Some(Kind::Closure) => unsafe { write_function(out, field(obj, closure::FUNCTION)) },
            Some(Kind::BoundMethod) => {
                let method = field(obj, bound::METHOD);
                // SAFETY: a bound method's method is a closure.
                unsafe { write_function(out, field(method, closure::FUNCTION)) };
            }
            Some(Kind::Class) => {
                // SAFETY: as above.
                out.extend_from_slice(unsafe { string_bytes(field(obj, class::NAME)) });
            }
            Some(Kind::Instance) => {
                let class = field(obj, instance::CLASS);
                // SAFETY: as above.
                out.extend_from_slice(unsafe { string_bytes(field(class, class::NAME)) });
                out.extend_from_slice(b" instance");
            }
            Some(Kind::Native) => out.extend_from_slice(b"<native fn>"),
            Some(Kind::Upvalue) => out.extend_from_slice(b"upvalue"),
            Some(Kind::Entries | Kind::Array) | None => {
                out.extend_from_slice(b"<internal>");
            }
        }
    }
}

/// `<fn name>` or `<script>`.
///
/// # Safety
/// As [`function_meta`].
unsafe fn write_function(out: &mut Vec<u8>, f: Obj) {
    // SAFETY: the caller's function.
    match unsafe { function_meta(f) }.name() {
        Some(name) => {
            out.extend_from_slice(b"<fn ");
            out.extend_from_slice(name);
            out.push(b'>');
        }
        None => out.extend_from_slice(b"<script>"),
    }
}

/// A function's metadata.
///
/// # Safety
/// `f` is a function (valid now); the reference is not used once the VM
/// is dropped.
pub(crate) unsafe fn function_meta<'a>(f: Obj) -> &'a FunctionMeta {
    // SAFETY: a function's `META` word is the `FunctionMeta` the loader
    // wrote in metaspace, which lives as long as the VM's loader.
    unsafe { &*(f.raw(function::META) as *const FunctionMeta) }
}
