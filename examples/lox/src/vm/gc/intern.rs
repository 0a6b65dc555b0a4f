//! The weak intern table: an open-addressing array of raw string addresses
//! in the heap (a `WeakArray`, rooted in the root block's `INTERN` word)
//! whose words the collector never scans. A string that nothing else
//! refers to dies: after marking, the binding's weak hook replaces its word
//! by a [`TOMBSTONE`] ([`InternTable::sweep`]); after relocation, it gives
//! each survivor's word its new address ([`InternTable::forward`]).
//!
//! The VM's side (`vm/strings.rs`) looks strings up ([`InternTable::probe`])
//! and adds them; a string read out of the table is kept alive through
//! `Mutator::keep_alive`, since the concurrent collector's snapshot may not
//! hold it.

use hotmem::{Address, ObjectReference};

use super::super::bytes;
use super::super::object::{Kind, Obj, header, string_bytes, string_hash};

/// A word that never held a string.
pub(crate) const EMPTY: usize = 0;
/// A word whose string died.
pub(crate) const TOMBSTONE: usize = 1;

/// The intern table's `WeakArray`, valid until the next call that may
/// collect (as an [`Obj`] is); its words are string addresses,
/// [`EMPTY`] or [`TOMBSTONE`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct InternTable(Obj);

impl InternTable {
    /// The table in `array`.
    ///
    /// # Safety
    /// `array` is a `WeakArray` valid now (read from its root since the
    /// last call that may collect, or at a safepoint), used no longer than
    /// it is.
    #[inline]
    pub(crate) unsafe fn new(array: Obj) -> InternTable {
        debug_assert!(array.is(Kind::WeakArray));
        InternTable(array)
    }

    /// Makes the memory at `addr` (fresh, `size_of(Kind::WeakArray,
    /// capacity)` bytes) an empty table.
    ///
    /// # Safety
    /// `addr` was allocated since the last call that may collect, with
    /// that size; `capacity` is a power of two.
    pub(crate) unsafe fn init(addr: usize, capacity: usize) -> InternTable {
        debug_assert!(capacity.is_power_of_two());
        // SAFETY: the caller's fresh object of `capacity` words after its
        // header, every word written here before anything reads it.
        unsafe {
            let array = Obj::at(addr);
            array.set_raw(0, header(Kind::WeakArray, capacity as u32));
            for i in 0..capacity {
                array.set_raw(1 + i, EMPTY as u64);
            }
            InternTable(array)
        }
    }

    /// The array, as an object.
    pub(crate) fn array(self) -> Obj {
        self.0
    }

    /// How many words the table has.
    #[inline]
    pub(crate) fn capacity(self) -> usize {
        self.0.count() as usize
    }

    /// Word `i`: a string's address, [`EMPTY`] or [`TOMBSTONE`].
    #[inline]
    fn word(self, i: usize) -> usize {
        debug_assert!(i < self.capacity());
        // SAFETY: `i` is below the capacity: a word of the live array
        // (`InternTable::new`'s contract).
        unsafe { self.0.raw(1 + i) as usize }
    }

    /// Sets word `i`: a weak word, which the collector never scans, so no
    /// barrier.
    #[inline]
    fn set_word(self, i: usize, word: usize) {
        debug_assert!(i < self.capacity());
        // SAFETY: as in `word`.
        unsafe { self.0.set_raw(1 + i, word as u64) }
    }

    /// The string equal to `parts` concatenated (hashing to `h`), or where
    /// it would go: `Ok` with the string's address, or `Err` with the
    /// index of the first free word on its probe sequence.
    ///
    /// # Safety
    /// The table has an empty word (see `Vm::reserve_interned`), and its
    /// strings are live: read since the last call that may collect (the
    /// weak hooks replace dead strings by tombstones and forward the
    /// others before the VM runs again).
    pub(crate) unsafe fn probe(self, h: u32, parts: [&[u8]; 2]) -> Result<usize, usize> {
        let mask = self.capacity() - 1;
        let len = parts[0].len() + parts[1].len();
        let mut i = h as usize & mask;
        let mut free = None;
        loop {
            let word = self.word(i);
            if word == EMPTY {
                return Err(free.unwrap_or(i));
            }
            if word == TOMBSTONE {
                free.get_or_insert(i);
            } else {
                // SAFETY: a live string (the caller's contract).
                let s = unsafe { Obj::at(word) };
                if string_hash(s) == h && s.count() as usize == len {
                    // SAFETY: the string's bytes, compared before anything
                    // may collect.
                    if bytes::equals(unsafe { string_bytes(s) }, parts[0], parts[1]) {
                        return Ok(word);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts the string at `addr` in the free word `free` that
    /// [`InternTable::probe`] gave; whether that word was [`EMPTY`] (a
    /// word newly in use) rather than a tombstone.
    pub(crate) fn insert_at(self, free: usize, addr: usize) -> bool {
        let was_empty = self.word(free) == EMPTY;
        self.set_word(free, addr);
        was_empty
    }

    /// The live strings' addresses.
    pub(crate) fn strings(self) -> impl Iterator<Item = usize> {
        (0..self.capacity())
            .map(move |i| self.word(i))
            .filter(|&w| w > TOMBSTONE)
    }

    /// Adds every live string of `old` to this table, which is empty and
    /// has room for them; how many it added.
    ///
    /// # Safety
    /// `old`'s strings are live (as for [`InternTable::probe`]).
    pub(crate) unsafe fn rehash(self, old: InternTable) -> usize {
        let mask = self.capacity() - 1;
        let mut count = 0;
        for s in old.strings() {
            // SAFETY: a live string of `old` (the caller's contract).
            let mut j = string_hash(unsafe { Obj::at(s) }) as usize & mask;
            while self.word(j) != EMPTY {
                j = (j + 1) & mask;
            }
            self.set_word(j, s);
            count += 1;
        }
        count
    }

    /// The weak hook's first half, after marking: every string for which
    /// `is_live` is false becomes a [`TOMBSTONE`].
    pub(crate) fn sweep(self, is_live: impl Fn(ObjectReference) -> bool) {
        for i in 0..self.capacity() {
            let word = self.word(i);
            if word <= TOMBSTONE {
                continue;
            }
            if !ObjectReference::from_address(Address::new(word)).is_some_and(&is_live) {
                self.set_word(i, TOMBSTONE);
            }
        }
    }

    /// The weak hook's second half, after relocation: every string's word
    /// becomes `forwarded`'s answer for it (its new address, or the same).
    pub(crate) fn forward(self, forwarded: impl Fn(ObjectReference) -> ObjectReference) {
        for i in 0..self.capacity() {
            let word = self.word(i);
            if word <= TOMBSTONE {
                continue;
            }
            if let Some(s) = ObjectReference::from_address(Address::new(word)) {
                self.set_word(i, forwarded(s).get());
            }
        }
    }
}
