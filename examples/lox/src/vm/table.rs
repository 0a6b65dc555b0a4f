//! Open-addressing hash tables keyed by interned strings: the fields of an
//! instance, the methods of a class, the names of the globals.
//!
//! A table is a run of [`Pairs`] (`[key, value]...`, their number a power
//! of two, empty keys [`Value::ABSENT`]) plus a count kept by its owner (in
//! an instance's or a class's header, or in the VM for the globals). The
//! pairs lie in an `Entries` object (`[header: capacity][pairs]`), or, for
//! an instance's fields, in the instance itself until it outgrows them
//! (`object::instance`): a field is then read with no load barrier and no
//! second object on the way. Keys are compared by identity, since strings
//! are interned; a key's hash is the one cached in the string. Lox never
//! deletes a field or a method, so there are no tombstones. A table grows
//! (to twice its capacity, in a new `Entries` object) before an insertion
//! would fill more than three quarters of it, clox's load: an instance of
//! six fields takes 152 bytes (its 3 words and 8 pairs), where a table at
//! most half full, in its own object, took 288 (16 pairs) and made
//! deep_graph.lox's peak RSS 145 MiB against clox's 91. A lookup that
//! misses walks further in a fuller table; the
//! one that missed most, a method name among an instance's fields on every
//! `INVOKE`, is skipped until an instance of the class has a field named
//! like a method (`class::SHADOWED`). Growing allocates, so it is the
//! caller's to do ([`SetOutcome::Full`], then `Vm::grow_table`).

use super::gc::heap::Heap;
use super::object::{Kind, Obj, header, instance, size_of, string_hash};
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

/// The pairs of a table, wherever they lie: an `Entries` object's, or the
/// inline pairs of an instance. Valid until the next call that may collect,
/// as the object they lie in.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Pairs {
    /// The key word of the first pair (the value word follows each key).
    first: *mut u64,
    /// How many pairs: a power of two, at least [`MIN_CAPACITY`] (0 only
    /// as [`Pairs::inline`] finds an instance made without inline pairs).
    capacity: u32,
}

impl Pairs {
    /// The pairs of `entries`, an `Entries` object (nil for no table).
    ///
    /// # Safety
    /// `entries` is nil or an `Entries` object, valid now.
    #[inline(always)]
    pub(crate) unsafe fn of_entries(entries: Value) -> Option<Pairs> {
        if !entries.is_object() {
            return None;
        }
        // SAFETY: the caller's entries.
        let entries = unsafe { Obj::new(entries) };
        Some(Pairs {
            first: entries.word(1),
            capacity: entries.count(),
        })
    }

    /// The fields of `object`, an instance: its inline pairs, or the
    /// entries it moved them to (`None` if it has neither).
    ///
    /// # Safety
    /// `object` is an instance, valid now.
    pub(crate) unsafe fn of_instance<B: BarrierSet>(heap: &Heap<B>, object: Obj) -> Option<Pairs> {
        // SAFETY: the caller's instance.
        unsafe {
            match Pairs::inline(object) {
                Some(inline) => (inline.capacity > 0).then_some(inline),
                None => Pairs::of_entries(heap.load(object.word(instance::FIELDS))),
            }
        }
    }

    /// An instance's inline pairs, if it has some and they are in use:
    /// the interpreter's fast path to its fields (else
    /// [`get_field_elsewhere`]).
    ///
    /// # Safety
    /// `object` is an instance, valid now.
    #[inline(always)]
    pub(crate) unsafe fn inline_fields(object: Obj) -> Option<Pairs> {
        // SAFETY: the caller's instance.
        unsafe { Pairs::inline(object) }.filter(|pairs| pairs.capacity > 0)
    }

    /// An instance's inline pairs (of capacity 0 for an instance made
    /// without), or `None` once it has moved its fields to entries.
    ///
    /// # Safety
    /// `object` is an instance, valid now.
    #[inline(always)]
    unsafe fn inline(object: Obj) -> Option<Pairs> {
        // SAFETY: the caller's instance: its header, whose top bit is the
        // count's `OUTGROWN` and whose bits 8 to 31 the inline capacity.
        let header = unsafe { object.raw(0) };
        if header as i64 >= 0 {
            Some(Pairs {
                first: object.word(instance::INLINE),
                capacity: header as u32 >> 8,
            })
        } else {
            None
        }
    }

    /// The key word of pair `pair`.
    #[inline(always)]
    fn key(self, pair: usize) -> *mut u64 {
        self.first.wrapping_add(2 * pair)
    }

    /// The value word of pair `pair`.
    #[inline(always)]
    fn value(self, pair: usize) -> *mut u64 {
        self.first.wrapping_add(2 * pair + 1)
    }
}

/// Where `key` is among `pairs`: `Ok(pair)` if present, `Err(pair)` for the
/// empty pair where it would go.
///
/// # Safety
/// `pairs` are valid now, with an empty pair, and `key` a string valid now.
#[inline(always)]
unsafe fn find<B: BarrierSet>(heap: &Heap<B>, pairs: Pairs, key: Value) -> Result<usize, usize> {
    let mask = pairs.capacity as usize - 1;
    // SAFETY: the caller's string.
    let mut pair = string_hash(unsafe { Obj::new(key) }) as usize & mask;
    loop {
        // SAFETY: `pair <= mask`: a key word of the pairs. Keys are strings
        // that never move (constants or natives' names: see `loader`),
        // read without the load barrier.
        let probe = unsafe { heap.peek(pairs.key(pair)) };
        if probe == key {
            return Ok(pair);
        }
        if probe == Value::ABSENT {
            return Err(pair);
        }
        pair = (pair + 1) & mask;
    }
}

/// The value of `key` in the table of `pairs` (`None` for no table yet).
///
/// # Safety
/// `pairs` are valid now and `key` a string valid now; the table has an
/// empty pair (it is never full: see [`set`]).
#[inline(always)]
pub(crate) unsafe fn get<B: BarrierSet>(
    heap: &Heap<B>,
    pairs: Option<Pairs>,
    key: Value,
) -> Option<Value> {
    // SAFETY: the caller's pairs and key.
    unsafe { lookup(heap, pairs?, key) }
}

/// As [`get`], in a table that has pairs.
///
/// # Safety
/// As [`get`].
#[inline(always)]
pub(crate) unsafe fn lookup<B: BarrierSet>(
    heap: &Heap<B>,
    pairs: Pairs,
    key: Value,
) -> Option<Value> {
    // SAFETY: the caller's pairs and key.
    match unsafe { find(heap, pairs, key) } {
        // SAFETY: the value word of a pair.
        Ok(pair) => Some(unsafe { heap.load(pairs.value(pair)) }),
        Err(_) => None,
    }
}

/// The field `key` of the instance `object`, wherever its fields are.
/// Out of the interpreter's loop: it serves instances without inline
/// pairs in use ([`Pairs::inline_fields`] finds those, and initializers
/// size their instances' inline pairs, `class::FIELDS_HINT`, so few are
/// without), and lookups that rarely run (`INVOKE` looks at the fields
/// only when they may shadow a method).
///
/// # Safety
/// `object` is an instance and `key` a string, both valid now.
#[cold]
#[inline(never)]
pub(crate) unsafe fn get_field_elsewhere<B: BarrierSet>(
    heap: &Heap<B>,
    object: Obj,
    key: Value,
) -> Option<Value> {
    // SAFETY: the caller's instance and key.
    unsafe { get(heap, Pairs::of_instance(heap, object), key) }
}

/// Sets the field `key` of the instance `object` (`set` in its fields,
/// counted in its header).
///
/// # Safety
/// As [`get_field_elsewhere`]; `value` is valid now.
#[inline(always)]
pub(crate) unsafe fn set_field<B: BarrierSet>(
    heap: &Heap<B>,
    object: Obj,
    key: Value,
    value: Value,
) -> SetOutcome {
    // SAFETY: the caller's instance, key and value.
    unsafe {
        match Pairs::inline(object) {
            // Inline pairs in use: the count is not flagged.
            Some(pairs) if pairs.capacity > 0 => insert(heap, pairs, object.count(), key, value),
            _ => set_field_elsewhere(heap, object, key, value),
        }
    }
}

/// [`set_field`] for an instance without inline pairs in use, out of the
/// interpreter's loop as [`get_field_elsewhere`] is.
///
/// # Safety
/// As [`set_field`].
#[cold]
#[inline(never)]
unsafe fn set_field_elsewhere<B: BarrierSet>(
    heap: &Heap<B>,
    object: Obj,
    key: Value,
    value: Value,
) -> SetOutcome {
    // SAFETY: the caller's instance, key and value.
    unsafe {
        set(
            heap,
            Pairs::of_instance(heap, object),
            object.count() & !instance::OUTGROWN,
            key,
            value,
        )
    }
}

/// Sets `key` to `value` in the table (`pairs` holding `count` keys) if it
/// fits; [`SetOutcome::Full`] (nothing changed) if it must grow first.
///
/// # Safety
/// As [`get`]; `value` is valid now.
#[inline(always)]
pub(crate) unsafe fn set<B: BarrierSet>(
    heap: &Heap<B>,
    pairs: Option<Pairs>,
    count: u32,
    key: Value,
    value: Value,
) -> SetOutcome {
    let Some(pairs) = pairs else {
        return SetOutcome::Full;
    };
    // SAFETY: the caller's pairs, key and value.
    unsafe { insert(heap, pairs, count, key, value) }
}

/// As [`set`], in a table that has pairs.
///
/// # Safety
/// As [`set`].
#[inline(always)]
unsafe fn insert<B: BarrierSet>(
    heap: &Heap<B>,
    pairs: Pairs,
    count: u32,
    key: Value,
    value: Value,
) -> SetOutcome {
    // SAFETY: the caller's pairs and key.
    match unsafe { find(heap, pairs, key) } {
        Ok(pair) => {
            // SAFETY: the value word of a pair, through the barrier.
            unsafe { heap.store(pairs.value(pair), value) };
            SetOutcome::Replaced
        }
        Err(_) if (count as u64 + 1) * 4 > pairs.capacity as u64 * 3 => SetOutcome::Full,
        Err(pair) => {
            // SAFETY: the key and value words of an empty pair, through
            // the barrier.
            unsafe {
                heap.store(pairs.key(pair), key);
                heap.store(pairs.value(pair), value);
            }
            SetOutcome::Added
        }
    }
}

/// The capacity a table of `pairs` grows to; for its first pairs (none),
/// room for `expected` keys at most three quarters full.
pub(crate) fn grown_capacity(pairs: Option<Pairs>, expected: u32) -> u32 {
    match pairs {
        Some(pairs) => pairs.capacity.checked_mul(2).unwrap_or(pairs.capacity),
        None => first_capacity(expected),
    }
}

/// The capacity for `expected` keys at most three quarters full.
pub(crate) fn first_capacity(expected: u32) -> u32 {
    expected
        .saturating_mul(4)
        .div_ceil(3)
        .checked_next_power_of_two()
        .unwrap_or(MIN_CAPACITY)
        .max(MIN_CAPACITY)
}

/// The inline pairs a new instance of a class gets, from the class's
/// fields hint (the most fields an instance of it has had): none for a
/// class whose instances had none yet, or need more than
/// [`instance::MAX_INLINE`].
pub(crate) fn inline_capacity(hint: u64) -> u32 {
    match u32::try_from(hint) {
        Ok(0) | Err(_) => 0,
        Ok(hint) => match first_capacity(hint) {
            capacity if capacity <= instance::MAX_INLINE => capacity,
            _ => 0,
        },
    }
}

/// Writes empty pairs into the `capacity` pairs from word `first` of a
/// fresh object.
///
/// # Safety
/// The words are a fresh object's, allocated since the last call that may
/// collect: stores into it need no barrier.
pub(crate) unsafe fn fill_empty(first: *mut u64, capacity: u32) {
    for pair in 0..capacity as usize {
        // SAFETY: the caller's fresh words.
        unsafe {
            first.add(2 * pair).write(Value::ABSENT.bits());
            first.add(2 * pair + 1).write(Value::NIL.bits());
        }
    }
}

/// Clears every pair of `pairs` (inline pairs an instance has outgrown),
/// through the store barrier: the values and keys they held stay reachable
/// only from the new table, which a concurrent marking does not trace.
///
/// # Safety
/// `pairs` are valid now.
pub(crate) unsafe fn clear<B: BarrierSet>(heap: &Heap<B>, pairs: Pairs) {
    for pair in 0..pairs.capacity as usize {
        // SAFETY: the key and value words of a pair, through the barrier.
        unsafe {
            heap.store(pairs.key(pair), Value::ABSENT);
            heap.store(pairs.value(pair), Value::NIL);
        }
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
/// pair of `old` (`None` for none).
///
/// # Safety
/// `addr` was allocated since the last call that may collect, with room
/// for `capacity` pairs; `old` are valid pairs whose keys fit three
/// quarters of `capacity`.
pub(crate) unsafe fn fill_grown<B: BarrierSet>(
    heap: &Heap<B>,
    addr: usize,
    capacity: u32,
    old: Option<Pairs>,
    birth: Birth,
) -> Obj {
    // SAFETY: the caller's fresh object; its header is written first.
    let new = unsafe { Obj::at(addr) };
    // SAFETY: words of the fresh object, initialized here before any read;
    // stores into an object allocated since the last call that may collect
    // need no barrier.
    unsafe {
        new.set_raw(0, header(Kind::Entries, capacity));
        fill_empty(new.word(1), capacity);
    }
    let Some(old) = old else {
        return new;
    };
    // SAFETY: the fresh entries, made above.
    let Some(pairs) = (unsafe { Pairs::of_entries(new.value()) }) else {
        unreachable!("a fresh `Entries` object is an object");
    };
    for pair in 0..old.capacity as usize {
        // SAFETY: a pair of the old table, and the free pair `find` gives
        // in the new one (which has room: the caller's contract).
        unsafe {
            let key = heap.load(old.key(pair));
            if key == Value::ABSENT {
                continue;
            }
            let value = heap.load(old.value(pair));
            if let Err(free) = find(heap, pairs, key) {
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
