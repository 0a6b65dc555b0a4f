//! Strings: interned, so that equal strings are one object and compare by
//! address. The table is the runtime's [`WeakSet`](hotmem::WeakSet),
//! keyed by the strings' bytes: a string nothing else refers to dies, and
//! the collector clears it from the set, outside its pauses.
//!
//! A new string is looked up before it is allocated (hashing and comparing
//! the two halves of a concatenation in place), so that a concatenation
//! whose result exists allocates nothing.

use super::Machine;
use super::bytes;
use super::error::HeapError;
use super::object::{Kind, MAX_COUNT, Obj, header, size_of, string, string_bytes, string_hash};
use super::value::Value;
use hotmem::{Address, BarrierSet, ObjectReference};

impl<B: BarrierSet> Machine<B> {
    /// The interned string with these bytes (`bytes` is Rust memory, not
    /// the heap). **May collect.**
    ///
    /// # Errors
    /// [`HeapError`] if it does not fit.
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Result<Value, HeapError> {
        self.make_string(Placement::Young, |_| [bytes, &[]])
    }

    /// [`Machine::intern`] for a constant or a native's name: allocated in
    /// the non-moving space if it is new, else kept where it is (see
    /// `loader`). **May collect.**
    ///
    /// # Errors
    /// [`HeapError`] if it does not fit.
    pub(crate) fn intern_constant(&mut self, bytes: &[u8]) -> Result<Value, HeapError> {
        let s = self.make_string(Placement::NonMoving, |_| [bytes, &[]])?;
        self.heap.keep_in_place(s);
        Ok(s)
    }

    /// The interned concatenation of the strings in the stack words `a` and
    /// `b`. **May collect.**
    ///
    /// # Safety
    /// `a` and `b` are words of the published value stack holding strings.
    ///
    /// # Errors
    /// [`HeapError`] if the result does not fit.
    pub(crate) unsafe fn concatenate(
        &mut self,
        a: *const u64,
        b: *const u64,
    ) -> Result<Value, HeapError> {
        self.make_string(Placement::Young, |_| {
            // SAFETY: the caller's stack words, read again after anything
            // that may have collected; the slices are used only before the
            // next such call (`make_string`'s contract with this closure).
            unsafe {
                [
                    string_bytes(Obj::new(Value::from_bits(a.read()))),
                    string_bytes(Obj::new(Value::from_bits(b.read()))),
                ]
            }
        })
    }

    /// The interned string whose bytes are the two parts `parts` returns;
    /// `parts` is called again after every call that may collect (the
    /// parts may have moved) and its slices are not kept across one.
    ///
    /// Never inlined: in the interpreter's loop (`ADD` of two strings) its
    /// hash constant took a register from every instruction's handler.
    #[inline(never)]
    fn make_string<'a>(
        &mut self,
        placement: Placement,
        parts: impl Fn(&Machine<B>) -> [&'a [u8]; 2],
    ) -> Result<Value, HeapError> {
        let [head, tail] = parts(self);
        let len = head.len() + tail.len();
        let h = bytes::hash(head, tail);
        // The runtime's weak set hands out live strings at their current
        // address only (and keeps what it returns alive for a concurrent
        // marking); this thread does not reach a safepoint in `find`.
        let found = self.strings.find(self.heap.mutator(), u64::from(h), |s| {
            // SAFETY: a live string of the heap, handed out by the set, read
            // before anything may collect.
            unsafe {
                let s = Obj::at(s.get());
                string_hash(s) == h
                    && s.count() as usize == len
                    && bytes::equals(string_bytes(s), head, tail)
            }
        })?;
        if let Some(s) = found {
            // SAFETY: as above: a live string, valid until the next call
            // that may collect.
            return Ok(unsafe { Obj::at(s.get()) }.value());
        }
        if len > MAX_COUNT {
            return Err(HeapError::OutOfMemory {
                bytes: len,
                heap_max: self.runtime.config().heap_max(),
            });
        }
        let size = size_of(Kind::String, len as u32);
        let addr = match placement {
            Placement::Young => self.heap.alloc(size)?,
            Placement::NonMoving => self.heap.alloc_non_moving(size)?,
        };
        let [head, tail] = parts(self);
        // SAFETY: a fresh string of `len` bytes: header, hash and bytes are
        // written before anything reads it (the padding after the bytes is
        // never read).
        let s = unsafe {
            let s = Obj::at(addr);
            s.set_raw(0, header(Kind::String, len as u32));
            s.set_raw(string::HASH, u64::from(h));
            let bytes = s.word(string::BYTES) as *mut u8;
            bytes.copy_from_nonoverlapping(head.as_ptr(), head.len());
            bytes
                .add(head.len())
                .copy_from_nonoverlapping(tail.as_ptr(), tail.len());
            s
        };
        let obj =
            ObjectReference::from_address(Address::new(addr)).expect("an allocation is not null");
        self.strings
            .insert(self.heap.mutator(), u64::from(h), obj)?;
        Ok(s.value())
    }

    /// Live strings in the intern table (and dead ones no collection has
    /// cleared yet).
    pub(crate) fn count_interned(&self) -> usize {
        self.strings.len()
    }
}

/// Where a new string is allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Placement {
    /// Young, as every object the program makes.
    Young,
    /// Where nothing moves ([`Heap::alloc_non_moving`](super::gc::Heap::alloc_non_moving)).
    NonMoving,
}
