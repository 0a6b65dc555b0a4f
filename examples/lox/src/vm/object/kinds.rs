//! Word indices of each kind of object (0 is the header), and the few
//! accessors that read more than one word.

use super::Obj;

/// `String`: `[header: len][hash][bytes...]`.
pub(crate) mod string {
    /// The FNV-1a hash of the bytes (low 32 bits of the word).
    pub(crate) const HASH: usize = 1;
    /// The first word of the bytes.
    pub(crate) const BYTES: usize = 2;
}

/// `Function`: `[header: constant count][meta][global slots][constants...]`.
pub(crate) mod function {
    /// The `FunctionMeta` in metaspace (raw pointer).
    pub(crate) const META: usize = 1;
    /// The global slot of each constant, in metaspace (raw pointer).
    pub(crate) const GLOBALS: usize = 2;
    /// The first constant.
    pub(crate) const CONSTANTS: usize = 3;
}

/// `Closure`: `[header: upvalue count][function][upvalues...]`.
pub(crate) mod closure {
    /// The function.
    pub(crate) const FUNCTION: usize = 1;
    /// The first upvalue.
    pub(crate) const UPVALUES: usize = 2;
}

/// `Upvalue`: `[header][stack address or 0][closed value][next open]`.
pub(crate) mod upvalue {
    /// The address of the captured stack word while open, 0 once closed
    /// (raw; the shadow stack never moves).
    pub(crate) const LOCATION: usize = 1;
    /// The value once closed.
    pub(crate) const CLOSED: usize = 2;
    /// The next open upvalue (lower on the stack), or nil.
    pub(crate) const NEXT: usize = 3;
    /// Words in all.
    pub(crate) const WORDS: usize = 4;
}

/// `Class`: `[header: method count][name][methods][init][fields hint][shadowed]`.
pub(crate) mod class {
    /// The name (a string).
    pub(crate) const NAME: usize = 1;
    /// The method table's entries, or nil.
    pub(crate) const METHODS: usize = 2;
    /// The `init` method, or nil: found without a table lookup.
    pub(crate) const INIT: usize = 3;
    /// The most fields an instance of the class has had, or its
    /// initializer sets on `this` (raw): a new instance has room for them
    /// in its own words.
    pub(crate) const FIELDS_HINT: usize = 4;
    /// Whether an instance of the class has had a field named like one of
    /// its methods (raw, 0 or 1): until one has, `INVOKE` looks for the
    /// method first and skips the instance's fields (a lookup that would
    /// miss).
    pub(crate) const SHADOWED: usize = 5;
    /// Words in all.
    pub(crate) const WORDS: usize = 6;
}

/// `Instance`: `[header: field count, inline capacity][class][fields][key, value pairs...]`.
///
/// An instance holds its field table in its own words: as many pairs as
/// the header's inline capacity (fixed when it is made, from its class's
/// fields hint), read without a load barrier on the way. An instance that
/// outgrows them moves its fields to an `Entries` object in `FIELDS` (nil
/// while the inline pairs are used), flags its count [`instance::OUTGROWN`]
/// and clears its inline pairs.
pub(crate) mod instance {
    /// The class.
    pub(crate) const CLASS: usize = 1;
    /// The field table's entries once the inline pairs are outgrown, nil
    /// before.
    pub(crate) const FIELDS: usize = 2;
    /// The key word of the first inline pair.
    pub(crate) const INLINE: usize = 3;
    /// Words before the inline pairs.
    pub(crate) const WORDS: usize = 3;
    /// The bit of the header's count that says the instance has outgrown
    /// its inline pairs (its fields are in the entries of `FIELDS`); the
    /// other bits count its fields. The header's top bit: one test of the
    /// sign of the header word.
    pub(crate) const OUTGROWN: u32 = 1 << 31;
    /// The most inline pairs an instance is made with (a class whose
    /// instances need more keeps them in `Entries` objects).
    pub(crate) const MAX_INLINE: u32 = 256;
}

/// `BoundMethod`: `[header][receiver][method]`.
pub(crate) mod bound {
    /// The receiver (`this`).
    pub(crate) const RECEIVER: usize = 1;
    /// The method's closure.
    pub(crate) const METHOD: usize = 2;
    /// Words in all.
    pub(crate) const WORDS: usize = 3;
}

/// The bytes of a string.
///
/// # Safety
/// `s` is a string ([`Obj`]'s contract), and the slice is not used after
/// the next call that may collect.
#[inline(always)]
pub(crate) unsafe fn string_bytes<'a>(s: Obj) -> &'a [u8] {
    // SAFETY: a string's `count` bytes follow its hash word, inside the
    // object; the caller keeps the slice only while the object stays put.
    unsafe { std::slice::from_raw_parts(s.word(string::BYTES) as *const u8, s.count() as usize) }
}

/// The cached hash of a string.
#[inline(always)]
pub(crate) fn string_hash(s: Obj) -> u32 {
    // SAFETY: `Obj`'s contract: a live object; the caller passes a string,
    // whose word `HASH` holds the hash.
    unsafe { s.raw(string::HASH) as u32 }
}
