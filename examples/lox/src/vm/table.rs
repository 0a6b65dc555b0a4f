//! Open-addressing hash tables keyed by interned strings: the fields of an
//! instance, the methods of a class, the names of the globals.
//!
//! A table is an `Entries` object (`[header: capacity][key, value]...`,
//! capacity a power of two, empty keys [`Value::ABSENT`]) plus a count kept
//! by its owner (in an instance's or a class's header, or in the VM for the
//! globals). Keys are compared by identity, since strings are interned; a
//! key's hash is the one cached in the string. Lox never deletes a field or
//! a method, so there are no tombstones. A table grows (to twice its
//! capacity) before an insertion would fill more than three quarters of
//! it, clox's load: an instance of six fields takes 160 bytes (the
//! instance's 3 words and 8 pairs), where a table at most half full took
//! 288 (16 pairs) and made deep_graph.lox's peak RSS 145 MiB against
//! clox's 91. A lookup that misses walks further in a fuller table; the
//! one that missed most, a method name among an instance's fields on every
//! `INVOKE`, is skipped until an instance of the class has a field named
//! like a method (`class::SHADOWED`). Growing allocates, so it is the
//! caller's to do ([`SetOutcome::Full`], then `Vm::grow_table`).

use super::gc::heap::Heap;
use super::object::{Kind, Obj, header, size_of, string_hash};
use super::value::Value;
use hotmem::BarrierSet;

/// The capacity of a table's first entry array.
pub(crate) const MIN_CAPACITY: u32 = 4;

/// What [`set`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetOutcome {
    /// The key was there; its value is replaced.
    Replaced,
    /// The key is new; the owner's count must go up by one.
    Added,
    /// The key is new and does not fit: grow the table, then set again.
    Full,
}

/// Where `key` is in `entries`: `Ok(pair)` if present, `Err(pair)` for the
/// empty pair where it would go.
///
/// # Safety
/// `entries` is an `Entries` object and `key` a string, both valid now.
#[inline(always)]
unsafe fn find<B: BarrierSet>(heap: &Heap<B>, entries: Obj, key: Value) -> Result<usize, usize> {
    let mask = entries.count() as usize - 1;
    // SAFETY: the caller's string.
    let mut pair = string_hash(unsafe { Obj::new(key) }) as usize & mask;
    loop {
        // SAFETY: `pair <= mask`: a key word of the array. Keys are strings
        // that never move (constants or natives' names: see `loader`),
        // read without the load barrier.
        let probe = unsafe { heap.peek(entries.word(1 + 2 * pair)) };
        if probe == key {
            return Ok(pair);
        }
        if probe == Value::ABSENT {
            return Err(pair);
        }
        pair = (pair + 1) & mask;
    }
}

/// The value of `key` in the table whose entries are `entries` (nil for
/// no table yet).
///
/// # Safety
/// `entries` is nil or an `Entries` object and `key` a string, both valid
/// now; the table has an empty pair (it is never full: see [`set`]).
#[inline(always)]
pub(crate) unsafe fn get<B: BarrierSet>(
    heap: &Heap<B>,
    entries: Value,
    key: Value,
) -> Option<Value> {
    if !entries.is_object() {
        return None;
    }
    // SAFETY: the caller's entries.
    let entries = unsafe { Obj::new(entries) };
    // SAFETY: the caller's entries and key.
    match unsafe { find(heap, entries, key) } {
        // SAFETY: the value word of a pair of the array.
        Ok(pair) => Some(unsafe { heap.load(entries.word(2 + 2 * pair)) }),
        Err(_) => None,
    }
}

/// Sets `key` to `value` in the table (`entries` with `count` keys) if it
/// fits; [`SetOutcome::Full`] (nothing changed) if it must grow first.
///
/// # Safety
/// As [`get`]; `value` is valid now.
#[inline(always)]
pub(crate) unsafe fn set<B: BarrierSet>(
    heap: &Heap<B>,
    entries: Value,
    count: u32,
    key: Value,
    value: Value,
) -> SetOutcome {
    if !entries.is_object() {
        return SetOutcome::Full;
    }
    // SAFETY: the caller's entries.
    let entries = unsafe { Obj::new(entries) };
    // SAFETY: the caller's entries and key.
    match unsafe { find(heap, entries, key) } {
        Ok(pair) => {
            // SAFETY: the value word of a pair, through the barrier.
            unsafe { heap.store(entries.word(2 + 2 * pair), value) };
            SetOutcome::Replaced
        }
        Err(_) if (count as u64 + 1) * 4 > entries.count() as u64 * 3 => SetOutcome::Full,
        Err(pair) => {
            // SAFETY: the key and value words of an empty pair, through
            // the barrier.
            unsafe {
                heap.store(entries.word(1 + 2 * pair), key);
                heap.store(entries.word(2 + 2 * pair), value);
            }
            SetOutcome::Added
        }
    }
}

/// The capacity a table of `entries` grows to; for its first entries
/// (nil), room for `expected` keys at most three quarters full.
pub(crate) fn grown_capacity(entries: Value, expected: u32) -> u32 {
    if entries.is_object() {
        // SAFETY: a valid `Entries` (the caller's table, read now).
        let old = unsafe { Obj::new(entries) }.count();
        old.checked_mul(2).unwrap_or(old)
    } else {
        expected
            .saturating_mul(4)
            .div_ceil(3)
            .checked_next_power_of_two()
            .unwrap_or(MIN_CAPACITY)
            .max(MIN_CAPACITY)
    }
}

/// The bytes of an `Entries` object of `capacity` pairs.
pub(crate) fn entries_size(capacity: u32) -> usize {
    size_of(Kind::Entries, capacity)
}

/// Where a table's new entries were allocated, which decides how they are
/// first written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Birth {
    /// With [`Heap::alloc`]: a young object, whose first stores need no
    /// barrier.
    Young,
    /// With [`Heap::alloc_non_moving`]: old from the start, so every
    /// reference stored into it, the first ones too, goes through the
    /// store barrier (a young value's slot is remembered).
    NonMoving,
}

/// Makes the memory at `addr` (fresh, [`entries_size`] bytes, allocated
/// as `birth` says) an empty table of `capacity` pairs, then adds every
/// pair of `old` (nil for none).
///
/// # Safety
/// `addr` was allocated since the last call that may collect, with room
/// for `capacity` pairs; `old` is nil or a valid `Entries` whose keys fit
/// three quarters of `capacity`.
pub(crate) unsafe fn fill_grown<B: BarrierSet>(
    heap: &Heap<B>,
    addr: usize,
    capacity: u32,
    old: Value,
    birth: Birth,
) -> Obj {
    // SAFETY: the caller's fresh object; its header is written first.
    let new = unsafe { Obj::at(addr) };
    // SAFETY: words of the fresh object, initialized here before any read;
    // stores into an object allocated since the last call that may collect
    // need no barrier.
    unsafe {
        new.set_raw(0, header(Kind::Entries, capacity));
        for pair in 0..capacity as usize {
            new.set_raw(1 + 2 * pair, Value::ABSENT.bits());
            new.set_raw(2 + 2 * pair, Value::NIL.bits());
        }
    }
    if !old.is_object() {
        return new;
    }
    // SAFETY: the caller's old table.
    let old = unsafe { Obj::new(old) };
    for pair in 0..old.count() as usize {
        // SAFETY: a pair of the old array, and the free pair `find` gives
        // in the new one (which has room: the caller's contract).
        unsafe {
            let key = heap.load(old.word(1 + 2 * pair));
            if key == Value::ABSENT {
                continue;
            }
            let value = heap.load(old.word(2 + 2 * pair));
            if let Err(free) = find(heap, new, key) {
                match birth {
                    Birth::Young => {
                        new.set_raw(1 + 2 * free, key.bits());
                        new.set_raw(2 + 2 * free, value.bits());
                    }
                    Birth::NonMoving => {
                        heap.store(new.word(1 + 2 * free), key);
                        heap.store(new.word(2 + 2 * free), value);
                    }
                }
            }
        }
    }
    new
}
