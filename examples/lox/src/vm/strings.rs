//! Strings: interned, so that equal strings are one object and compare by
//! address. The intern table is an open-addressing array of raw string
//! addresses in the heap (a `WeakArray`, rooted in the root block) whose
//! words the collector never scans: a string nothing else refers to dies,
//! and the binding's weak hooks replace it by a tombstone (see `binding`).
//!
//! A new string is looked up before it is allocated (hashing and comparing
//! the two halves of a concatenation in place), so that a concatenation
//! whose result exists allocates nothing.

use super::Vm;
use super::bytes;
use super::error::HeapError;
use super::object::{Kind, MAX_COUNT, Obj, header, size_of, string, string_bytes, string_hash};
use super::roots::INTERN;
use super::value::Value;

/// An intern-table word that never held a string.
pub(crate) const EMPTY: usize = 0;
/// An intern-table word whose string died.
pub(crate) const TOMBSTONE: usize = 1;

/// The first intern table's capacity.
const MIN_CAPACITY: usize = 64;

/// The string equal to `parts` concatenated, or where it would go: `Ok`
/// with the string's address, or `Err` with the word index (in the
/// table's words) of the first free word on its probe sequence.
///
/// # Safety
/// `table` is the intern table, valid now, with an empty word.
unsafe fn probe(table: Obj, h: u32, parts: [&[u8]; 2]) -> Result<usize, usize> {
    let mask = table.count() as usize - 1;
    let len = parts[0].len() + parts[1].len();
    let mut i = h as usize & mask;
    let mut free = None;
    loop {
        // SAFETY: `i <= mask`: a word of the table.
        let word = unsafe { table.raw(1 + i) } as usize;
        if word == EMPTY {
            return Err(free.unwrap_or(i));
        }
        if word == TOMBSTONE {
            free.get_or_insert(i);
        } else {
            // SAFETY: a live string: the collector replaces dead ones by
            // tombstones and forwards the others.
            let s = unsafe { Obj::at(word) };
            if string_hash(s) == h && s.count() as usize == len {
                // SAFETY: the string, read before anything may collect.
                if bytes::equals(unsafe { string_bytes(s) }, parts[0], parts[1]) {
                    return Ok(word);
                }
            }
        }
        i = (i + 1) & mask;
    }
}

impl Vm {
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

    /// The interned string whose bytes are the two parts `parts` returns;
    /// `parts` is called again after every call that may collect (the
    /// parts may have moved) and its slices are not kept across one.
    fn make_string<'a>(
        &mut self,
        parts: impl Fn(&Vm) -> [&'a [u8]; 2],
    ) -> Result<Value, HeapError> {
        let [head, tail] = parts(self);
        let len = head.len() + tail.len();
        let h = bytes::hash(head, tail);
        if self.roots.get(INTERN).is_object() {
            // SAFETY: the intern table, read from its root now.
            let table = unsafe { Obj::new(self.roots.get(INTERN)) };
            // SAFETY: the table is never full (see `reserve_interned`).
            if let Ok(found) = unsafe { probe(table, h, [head, tail]) } {
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
        // SAFETY: the table (read again: the allocation may have moved it)
        // has a free word (`reserve_interned`), and no string with these
        // bytes (it had none, and nothing was added since).
        unsafe {
            let table = Obj::new(self.roots.get(INTERN));
            let Err(free) = probe(table, h, [head, tail]) else {
                unreachable!("the string was not interned before its allocation");
            };
            if table.raw(1 + free) as usize == EMPTY {
                self.interned += 1;
            }
            table.set_raw(1 + free, addr as u64);
        }
        Ok(s.value())
    }

    /// Makes sure the intern table has room for one more string: grows (or
    /// rehashes away its tombstones) once three quarters of its words are
    /// used. **May collect.**
    fn reserve_interned(&mut self) -> Result<(), HeapError> {
        let table = self.roots.get(INTERN);
        let capacity = if table.is_object() {
            // SAFETY: the intern table, read from its root now.
            unsafe { Obj::new(table) }.count() as usize
        } else {
            0
        };
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
        // SAFETY: a fresh `WeakArray`, every word written before use; the
        // old table is read from its root again (the allocation may have
        // collected), and its live words are strings.
        unsafe {
            let new = Obj::at(addr);
            new.set_raw(0, header(Kind::WeakArray, new_capacity as u32));
            for i in 0..new_capacity {
                new.set_raw(1 + i, EMPTY as u64);
            }
            let mut count = 0;
            let old = self.roots.get(INTERN);
            if old.is_object() {
                let old = Obj::new(old);
                for i in 0..old.count() as usize {
                    let word = old.raw(1 + i) as usize;
                    if word == EMPTY || word == TOMBSTONE {
                        continue;
                    }
                    let mut j = string_hash(Obj::at(word)) as usize & (new_capacity - 1);
                    while new.raw(1 + j) as usize != EMPTY {
                        j = (j + 1) & (new_capacity - 1);
                    }
                    new.set_raw(1 + j, word as u64);
                    count += 1;
                }
            }
            self.interned = count;
            self.roots.set(INTERN, new.value());
        }
        Ok(())
    }

    /// Live strings in the intern table.
    pub(crate) fn count_interned(&self) -> usize {
        let table = self.roots.get(INTERN);
        if !table.is_object() {
            return 0;
        }
        // SAFETY: the intern table, read from its root now; its words are
        // read before anything may collect.
        let table = unsafe { Obj::new(table) };
        (0..table.count() as usize)
            // SAFETY: a word of the table.
            .filter(|&i| unsafe { table.raw(1 + i) } as usize > TOMBSTONE)
            .count()
    }
}
