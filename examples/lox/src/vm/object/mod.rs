//! The layout of every Lox object in the hotmem heap.
//!
//! Every object starts with one header word: its [`Kind`] in the low byte
//! and a 32-bit count in the high half (a string's length, a function's
//! constant count, a closure's upvalue count, a table's capacity, a class's
//! or an instance's entry count). An instance also keeps its inline
//! capacity, fixed for its life, in bits 8 to 31: its size depends on it,
//! not on the count its mutator updates. The words after it are either
//! *slots*, each holding a NaN-boxed [`Value`] that the collector decodes,
//! or raw words the collector never looks at (a string's hash and bytes, a
//! function's metaspace pointers, an open upvalue's stack address).
//!
//! | kind | words after the header | slots |
//! |---|---|---|
//! | `String` | hash, bytes (padded to a word) | none |
//! | `Function` | metadata pointer, global-slot pointer, constants | the constants |
//! | `Closure` | function, upvalues | all |
//! | `Upvalue` | stack address (0 once closed), closed value, next open upvalue | value, next |
//! | `Class` | name, method entries, initializer, fields hint, shadowed | all but the hint and the shadowed flag |
//! | `Instance` | class, field entries (once outgrown), inline key, value pairs | all |
//! | `BoundMethod` | receiver, method | all |
//! | `Native` | (the native's number is the count) | none |
//! | `Entries` | key, value pairs of an open-addressing table | all |
//! | `Array` | values | all |
//!
//! [`Obj`] is the address of an object; [`size_of`] and [`slot_words`]
//! are what the binding tells the collector.

pub(crate) mod kinds;

pub(crate) use kinds::*;

use super::value::Value;

/// What an object is: the low byte of its header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// An interned string.
    String = 1,
    /// A function: its constants (heap) and metadata (metaspace).
    Function,
    /// A closure: a function and its captured upvalues.
    Closure,
    /// A captured variable.
    Upvalue,
    /// A class: name, methods, cached initializer.
    Class,
    /// An instance: class and fields.
    Instance,
    /// A method bound to its receiver.
    BoundMethod,
    /// A native function.
    Native,
    /// The entry array of a table.
    Entries,
    /// An array of values (the globals).
    Array,
}

impl Kind {
    /// The kind whose byte is `byte`.
    #[inline]
    pub(crate) fn from_byte(byte: u8) -> Option<Kind> {
        use Kind::*;
        Some(match byte {
            1 => String,
            2 => Function,
            3 => Closure,
            4 => Upvalue,
            5 => Class,
            6 => Instance,
            7 => BoundMethod,
            8 => Native,
            9 => Entries,
            10 => Array,
            _ => return None,
        })
    }
}

/// A header word: `kind` and `count`.
#[inline(always)]
pub(crate) const fn header(kind: Kind, count: u32) -> u64 {
    kind as u64 | (count as u64) << 32
}

/// An instance's header: `count` fields, room for `inline` pairs in the
/// object (at most 2^24 - 1).
#[inline(always)]
pub(crate) const fn instance_header(inline: u32, count: u32) -> u64 {
    header(Kind::Instance, count) | (inline as u64) << 8
}

/// The address of a heap object, valid until the next call that may
/// collect (an allocation, a poll, a collection): it is made from a value
/// read since then from a root or from a slot of such an object
/// ([`Obj::new`]), and nothing keeps one across such a call. Reading and
/// writing its words is then reading and writing memory of a live object,
/// which [`Obj::new`]'s contract is about.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Obj(usize);

impl Obj {
    /// The object `value` refers to.
    ///
    /// # Safety
    /// `value` is a reference ([`Value::is_object`]) read, since the last
    /// call that may collect, from a root or a slot of a live object (or
    /// the address of an object allocated since then and initialized), and
    /// the result is not used after the next call that may collect.
    #[inline(always)]
    pub(crate) unsafe fn new(value: Value) -> Obj {
        debug_assert!(value.is_object(), "{value:?} is not an object");
        Obj(value.addr())
    }

    /// The object at `addr`, just allocated.
    ///
    /// # Safety
    /// As [`Obj::new`]; `addr` was returned by the allocator since the last
    /// call that may collect and its header is written before anything
    /// reads it.
    #[inline(always)]
    pub(crate) unsafe fn at(addr: usize) -> Obj {
        Obj(addr)
    }

    /// The object as a value.
    #[inline(always)]
    pub(crate) fn value(self) -> Value {
        Value::object(self.0)
    }

    /// The address of word `index` (0 is the header).
    #[inline(always)]
    pub(crate) fn word(self, index: usize) -> *mut u64 {
        (self.0 as *mut u64).wrapping_add(index)
    }

    /// The kind byte.
    #[inline(always)]
    pub(crate) fn kind_byte(self) -> u8 {
        // SAFETY: `Obj`'s contract: a live object, whose first byte is the
        // low byte of its header (little-endian).
        unsafe { (self.0 as *const u8).read() }
    }

    /// Whether the object is of `kind`.
    #[inline(always)]
    pub(crate) fn is(self, kind: Kind) -> bool {
        self.kind_byte() == kind as u8
    }

    /// The header's count.
    #[inline(always)]
    pub(crate) fn count(self) -> u32 {
        // SAFETY: `Obj`'s contract: a live object; the count is the high
        // half of the header word (little-endian).
        unsafe { (self.0 as *const u32).add(1).read() }
    }

    /// An instance's inline capacity: the pairs it holds in its own words
    /// (bits 8 to 31 of the header, never written after it is made).
    #[inline(always)]
    pub(crate) fn inline_capacity(self) -> u32 {
        // SAFETY: `Obj`'s contract: a live object; the low half of the
        // header, which holds the kind and the inline capacity, is written
        // only when the object is made (`set_count` writes the high half).
        unsafe { (self.0 as *const u32).read() >> 8 }
    }

    /// The header number an object's size and slots follow from
    /// ([`size_of`], [`slot_words`]): an instance's inline capacity, every
    /// other kind's count.
    #[inline(always)]
    pub(crate) fn extent(self, kind: Kind) -> u32 {
        match kind {
            Kind::Instance => self.inline_capacity(),
            _ => self.count(),
        }
    }

    /// Sets the header's count (a class's or an instance's entry count).
    #[inline(always)]
    pub(crate) fn set_count(self, count: u32) {
        // SAFETY: as in `count`; the mutator owns the object's memory
        // between safepoints.
        unsafe { (self.0 as *mut u32).add(1).write(count) }
    }

    /// Raw word `index`.
    ///
    /// # Safety
    /// `index` is a word of this object.
    #[inline(always)]
    pub(crate) unsafe fn raw(self, index: usize) -> u64 {
        // SAFETY: the caller's word of a live object.
        unsafe { self.word(index).read() }
    }

    /// Writes raw word `index` (a word the collector does not scan, or an
    /// initializing store into a fresh object).
    ///
    /// # Safety
    /// `index` is a word of this object; a slot may be written this way
    /// only in an object allocated since the last call that may collect
    /// (otherwise use the store barrier: a number or nil overwriting a
    /// reference needs it too, for the concurrent collector's snapshot).
    #[inline(always)]
    pub(crate) unsafe fn set_raw(self, index: usize, word: u64) {
        // SAFETY: the caller's word of a live object.
        unsafe { self.word(index).write(word) }
    }
}

/// Whether `v` is an object of `kind`.
///
/// # Safety
/// `v` is valid now (as for [`Obj::new`]).
#[inline(always)]
pub(crate) unsafe fn is(v: Value, kind: Kind) -> bool {
    // SAFETY: the caller's valid value, a reference when `is_object` says
    // so; an object's first byte is its kind.
    v.is_object() && unsafe { Obj::new(v) }.is(kind)
}

/// The size in bytes of an object of `kind` whose header count is `count`
/// (for an instance, whose inline capacity is `count`: [`Obj::extent`]).
#[inline]
pub(crate) fn size_of(kind: Kind, count: u32) -> usize {
    let n = count as usize;
    8 * match kind {
        Kind::String => 2 + n.div_ceil(8),
        Kind::Function => function::CONSTANTS + n,
        Kind::Closure => closure::UPVALUES + n,
        Kind::Upvalue => upvalue::WORDS,
        Kind::Class => class::WORDS,
        Kind::Instance => instance::WORDS + 2 * n,
        Kind::BoundMethod => bound::WORDS,
        Kind::Native => 2,
        Kind::Entries => 1 + 2 * n,
        Kind::Array => 1 + n,
    }
}

/// The words of an object of `kind` with `count` ([`Obj::extent`]) that
/// are slots: a range
/// of word indices (and, for a class, instance or upvalue, all of its
/// words but the header or the raw ones).
#[inline]
pub(crate) fn slot_words(kind: Kind, count: u32) -> std::ops::Range<usize> {
    let n = count as usize;
    match kind {
        Kind::String | Kind::Native => 0..0,
        Kind::Function => function::CONSTANTS..function::CONSTANTS + n,
        Kind::Closure => closure::FUNCTION..closure::UPVALUES + n,
        Kind::Upvalue => upvalue::CLOSED..upvalue::WORDS,
        Kind::Class => 1..class::FIELDS_HINT,
        Kind::Instance => 1..instance::WORDS + 2 * n,
        Kind::BoundMethod => 1..bound::WORDS,
        Kind::Entries => 1..1 + 2 * n,
        Kind::Array => 1..1 + n,
    }
}

/// The largest count a header holds.
pub(crate) const MAX_COUNT: usize = u32::MAX as usize;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_byte() {
        for byte in 0..=255u8 {
            if let Some(kind) = Kind::from_byte(byte) {
                assert_eq!(kind as u8, byte);
            }
        }
        assert_eq!(Kind::from_byte(10), Some(Kind::Array));
        assert_eq!(Kind::from_byte(11), None);
    }

    #[test]
    fn slots_lie_inside_their_object() {
        use Kind::*;
        for kind in [
            String,
            Function,
            Closure,
            Upvalue,
            Class,
            Instance,
            BoundMethod,
            Native,
            Entries,
            Array,
        ] {
            for count in [0, 1, 7, 100] {
                let words = size_of(kind, count) / 8;
                let slots = slot_words(kind, count);
                assert!(slots.start >= 1 || slots.is_empty(), "{kind:?}");
                assert!(slots.end <= words, "{kind:?} {count}");
                assert!(size_of(kind, count) >= 8, "{kind:?}");
            }
        }
        assert_eq!(size_of(String, 0), 16);
        assert_eq!(size_of(String, 9), 32);
        assert_eq!(size_of(Instance, 0), 24);
        assert_eq!(size_of(Instance, 8), 24 + 128);
    }

    #[test]
    fn an_instance_header_keeps_kind_count_and_inline_capacity_apart() {
        let mut words = [instance_header(16, 3), 0, 0];
        // SAFETY: a word array shaped as an instance's first words, alive
        // for the test.
        let o = unsafe { Obj::at(words.as_mut_ptr() as usize) };
        assert!(o.is(Kind::Instance));
        assert_eq!(
            (o.count(), o.inline_capacity(), o.extent(Kind::Instance)),
            (3, 16, 16)
        );
        o.set_count(4);
        assert_eq!((o.count(), o.inline_capacity()), (4, 16));
        assert!(o.is(Kind::Instance));
    }
}
