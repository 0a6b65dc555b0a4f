//! Native functions: `clock()`, clox's only one.

use std::sync::OnceLock;
use std::time::Instant;

use super::Machine;
use super::error::HeapError;
use super::gc::roots::{CLOCK, GLOBAL_VALUES};
use super::object::{Kind, Obj, header, size_of};
use super::value::Value;
use hotmem::BarrierSet;

/// When the first VM of the process started: `clock()` counts from here
/// (clox's counts the process's CPU time, which a single-threaded Lox
/// program's wall time since start approximates).
static START: OnceLock<Instant> = OnceLock::new();

/// A native function, by the number in its object's header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Native {
    /// `clock()`: seconds since the process's first VM started.
    Clock = 0,
}

impl Native {
    /// The native whose number is `n`.
    pub(crate) fn from_number(n: u32) -> Option<Native> {
        (n == Native::Clock as u32).then_some(Native::Clock)
    }

    /// Calls it with `args`.
    pub(crate) fn call(self, args: &[Value]) -> Value {
        let _ = args;
        match self {
            Native::Clock => Value::number(START.get_or_init(Instant::now).elapsed().as_secs_f64()),
        }
    }
}

impl<B: BarrierSet> Machine<B> {
    /// Defines the globals that name natives.
    pub(crate) fn define_natives(&mut self) -> Result<(), HeapError> {
        START.get_or_init(Instant::now);
        let addr = self.heap.alloc(size_of(Kind::Native, 0))?;
        // SAFETY: a fresh native object, both words written.
        let native = unsafe {
            let n = Obj::at(addr);
            n.set_raw(0, header(Kind::Native, Native::Clock as u32));
            n.set_raw(1, 0);
            n
        };
        self.roots.set(CLOCK, native.value());
        // A key of the global names: never moved (see `loader`).
        let name = self.intern_constant(b"clock")?;
        let slot = match self.global_slot(name) {
            Ok(slot) => slot,
            Err(super::loader::LoadError::Heap(e)) => return Err(e),
            Err(other) => unreachable!("defining a native: {other}"),
        };
        // SAFETY: the globals array (it has `slot`) and the native, read
        // from their roots now.
        unsafe {
            let globals = Obj::new(self.roots.get(GLOBAL_VALUES));
            self.heap
                .store(globals.word(1 + slot as usize), self.roots.get(CLOCK));
        }
        Ok(())
    }
}
