//! Memory tags: the category a caller assigns to the memory it reserves.

use std::fmt;

/// What a range of memory is for, chosen by whoever reserves or commits it.
///
/// The built-in tags are the categories a managed runtime has. Numbers from
/// [`MemTag::FIRST_CUSTOM`] up are free for an embedder's own categories; a
/// tracker (such as `hotmem-nmt`) gives them names.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MemTag(u16);

macro_rules! builtin_tags {
    ($($(#[$doc:meta])* $name:ident = $value:expr, $text:expr;)*) => {
        impl MemTag {
            $($(#[$doc])* pub const $name: MemTag = MemTag($value);)*

            /// Every built-in tag, in numeric order.
            pub const BUILTIN: &'static [MemTag] = &[$(MemTag::$name),*];

            /// The name of a built-in tag, `None` for a custom one.
            pub const fn builtin_name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

builtin_tags! {
    /// Nothing more specific is known.
    OTHER = 0, "Other";
    /// The managed heap (pages of objects).
    JAVA_HEAP = 1, "Java Heap";
    /// Class space: compressed-class metadata.
    CLASS = 2, "Class";
    /// Non-class metadata (metaspace).
    METASPACE = 3, "Metaspace";
    /// Thread stacks.
    THREAD_STACK = 4, "Thread Stack";
    /// Generated code.
    CODE = 5, "Code";
    /// Garbage collector data structures.
    GC = 6, "GC";
    /// The runtime's internal use.
    INTERNAL = 7, "Internal";
    /// Symbols and interned strings.
    SYMBOL = 8, "Symbol";
    /// Native memory tracking's own overhead.
    NMT = 9, "Native Memory Tracking";
    /// Memory reserved by tests.
    TEST = 10, "Test";
}

impl MemTag {
    /// The first number that is not a built-in tag.
    pub const FIRST_CUSTOM: u16 = 32;

    /// A tag from its number (built-in or custom).
    #[inline]
    pub const fn from_raw(raw: u16) -> MemTag {
        MemTag(raw)
    }

    /// The tag's number.
    #[inline]
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// Whether this is an embedder's tag rather than a built-in one.
    #[inline]
    pub const fn is_custom(self) -> bool {
        self.0 >= Self::FIRST_CUSTOM
    }
}

impl fmt::Debug for MemTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.builtin_name() {
            Some(n) => write!(f, "MemTag({n})"),
            None => write!(f, "MemTag(#{})", self.0),
        }
    }
}

impl fmt::Display for MemTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.builtin_name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Tag #{}", self.0),
        }
    }
}
