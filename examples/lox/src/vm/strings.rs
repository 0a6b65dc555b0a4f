//! Strings: interned, so that equal strings are one object and compare by
//! address. The table is the binding's weak intern table
//! ([`InternTable`], rooted in the root block): a string nothing else
//! refers to dies, and the binding's weak hooks replace it by a tombstone.
//!
//! A new string is looked up before it is allocated (hashing and comparing
//! the two halves of a concatenation in place), so that a concatenation
//! whose result exists allocates nothing.

use super::Machine;
use super::bytes;
use super::error::HeapError;
use super::gc::intern::InternTable;
use super::gc::roots::INTERN;
use super::object::{Kind, MAX_COUNT, Obj, header, size_of, string, string_bytes};
use super::value::Value;
use hotmem::BarrierSet;

/// The first intern table's capacity.
const MIN_CAPACITY: usize = 64;

impl<B: BarrierSet> Machine<B> {
    /// The interned string with these bytes (`bytes` is Rust memory, not
    /// the heap). **May collect.**
    ///
    /// # Errors
    /// [`HeapError`] if it does not fit.
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Result<Value, HeapError> {
        self.make_string(|_| [bytes, &[]])
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
        self.make_string(|_| {
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

    /// The intern table, read from its root now (`None` before the
    /// first string).
    fn intern_table(&self) -> Option<InternTable> {
        let array = self.roots.get(INTERN);
        // SAFETY: the root holds nil or the table's `WeakArray`, valid now
        // (read from the root); the caller uses it before the next call
        // that may collect.
        array
            .is_object()
            .then(|| unsafe { InternTable::new(Obj::new(array)) })
    }

    /// The interned string whose bytes are the two parts `parts` returns;
    /// `parts` is called again after every call that may collect (the
    /// parts may have moved) and its slices are not kept across one.
    fn make_string<'a>(
        &mut self,
        parts: impl Fn(&Machine<B>) -> [&'a [u8]; 2],
    ) -> Result<Value, HeapError> {
        let [head, tail] = parts(self);
        let len = head.len() + tail.len();
        let h = bytes::hash(head, tail);
        if let Some(table) = self.intern_table() {
            // SAFETY: the table is never full (see `reserve_interned`), and
            // read from its root since the last call that may collect.
            if let Ok(found) = unsafe { table.probe(h, [head, tail]) } {
                // Read from a weak table: kept alive if the concurrent
                // collector marks now (the snapshot may not have it).
                if let Some(obj) = Value::object(found).as_object() {
                    self.heap.mutator().keep_alive(obj);
                }
                return Ok(Value::object(found));
            }
        }
        if len > MAX_COUNT {
            return Err(HeapError::OutOfMemory {
                bytes: len,
                heap_max: self.runtime.config().heap_max(),
            });
        }
        self.reserve_interned()?;
        let addr = self.heap.alloc(size_of(Kind::String, len as u32))?;
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
        let table = self
            .intern_table()
            .expect("reserve_interned made the intern table");
        // SAFETY: the table, read again (the allocation may have moved it),
        // has a free word (`reserve_interned`) and no string with these
        // bytes (it had none, and nothing was added since).
        let Err(free) = (unsafe { table.probe(h, [head, tail]) }) else {
            unreachable!("the string was not interned before its allocation");
        };
        if table.insert_at(free, addr) {
            self.interned += 1;
        }
        Ok(s.value())
    }

    /// Makes sure the intern table has room for one more string: grows (or
    /// rehashes away its tombstones) once three quarters of its words are
    /// used. **May collect.**
    fn reserve_interned(&mut self) -> Result<(), HeapError> {
        let capacity = self.intern_table().map_or(0, InternTable::capacity);
        if (self.interned + 1) * 4 <= capacity * 3 {
            return Ok(());
        }
        let live = self.count_interned();
        let mut new_capacity = MIN_CAPACITY.max(capacity);
        while (live + 1) * 2 > new_capacity {
            new_capacity *= 2;
        }
        let addr = self
            .heap
            .alloc(size_of(Kind::WeakArray, new_capacity as u32))?;
        // SAFETY: a fresh `WeakArray` of `new_capacity` (a power of two)
        // words, allocated just now.
        let new = unsafe { InternTable::init(addr, new_capacity) };
        // SAFETY: the old table is read from its root after the allocation
        // (which may have collected: its dead strings are tombstones and
        // the others forwarded), so its strings are live.
        self.interned = self
            .intern_table()
            .map_or(0, |old| unsafe { new.rehash(old) });
        self.roots.set(INTERN, new.array().value());
        Ok(())
    }

    /// Live strings in the intern table.
    pub(crate) fn count_interned(&self) -> usize {
        self.intern_table()
            .map_or(0, |table| table.strings().count())
    }
}
