//! Calls that are not to a closure: natives. (Closures, bound methods and
//! classes are called in the interpreter loop itself.)

use super::super::Vm;
use super::super::natives::Native;
use super::super::object::Obj;
use super::super::value::Value;

impl Vm {
    /// Calls the native `native` with the `argc` values below `top`.
    ///
    /// # Safety
    /// `native` is a native object valid now; the `argc` words below `top`
    /// are in use.
    pub(super) unsafe fn call_native(&mut self, native: Obj, top: *mut u64, argc: usize) -> Value {
        // SAFETY: the caller's stack words, each a `Value` (`repr(transparent)`
        // over `u64`).
        let args = unsafe { std::slice::from_raw_parts(top.sub(argc) as *const Value, argc) };
        match Native::from_number(native.count()) {
            Some(native) => native.call(args),
            None => Value::NIL,
        }
    }
}
