//! The VM's roots outside the value stack, in one shadow stack of fixed
//! length that the runtime scans and updates in place: a word per global
//! structure, a few temporaries, and the closure of every call frame.

use hotmem::{Mutator, ShadowStack};

use super::super::error::VmError;
use super::super::value::Value;

/// The global variables' names: a table from name to slot number.
pub(crate) const GLOBAL_NAMES: usize = 0;
/// The global variables' values, by slot: an `Array`.
pub(crate) const GLOBAL_VALUES: usize = 1;
// Word 2 is free (it held the intern table, now the runtime's).
/// The string `init`.
pub(crate) const INIT: usize = 3;
/// The open upvalues, highest stack slot first (a list through `NEXT`).
pub(crate) const OPEN_UPVALUES: usize = 4;
/// The value of the `clock` native.
pub(crate) const CLOCK: usize = 5;
/// The closure of call frame `i` is in word `FRAMES + i`.
pub(crate) const FRAMES: usize = 8;
/// clox's limit on call depth.
pub(crate) const FRAMES_MAX: usize = 64;
/// Words in use.
const WORDS: usize = FRAMES + FRAMES_MAX;

/// The root block.
pub(crate) struct Roots {
    /// The shadow stack: the runtime scans its words while it lives.
    _stack: ShadowStack,
    /// Its first word (the stack's, kept here: one load fewer on every
    /// root access of the interpreter's calls and returns).
    words: *mut u64,
}

impl Roots {
    /// A block of nils, scanned from now on as `me`'s.
    ///
    /// # Errors
    /// The runtime's, if the shadow stack cannot be mapped.
    pub(crate) fn new(me: &Mutator) -> Result<Roots, VmError> {
        let stack = me.new_shadow_stack(WORDS)?;
        for i in 0..WORDS {
            // SAFETY: `i < WORDS <= capacity`; the words are this thread's.
            unsafe { stack.as_ptr().add(i).write(Value::NIL.bits()) };
        }
        // SAFETY: every word in use now holds nil, which `slot_at` decodes
        // as no reference.
        unsafe { stack.set_len(WORDS) };
        let words = stack.as_ptr();
        Ok(Roots {
            _stack: stack,
            words,
        })
    }

    /// The address of root word `index`.
    #[inline(always)]
    pub(crate) fn word(&self, index: usize) -> *mut u64 {
        debug_assert!(index < WORDS);
        self.words.wrapping_add(index)
    }

    /// The value in root word `index`.
    #[inline(always)]
    pub(crate) fn get(&self, index: usize) -> Value {
        assert!(index < WORDS);
        // SAFETY: a word in use of this thread's root stack.
        Value::from_bits(unsafe { self.word(index).read() })
    }

    /// Sets root word `index` (a valid value: a live object or none).
    #[inline(always)]
    pub(crate) fn set(&self, index: usize, value: Value) {
        assert!(index < WORDS);
        // SAFETY: as in `get`; the runtime reads root words only at
        // safepoints, when this thread is stopped.
        unsafe { self.word(index).write(value.bits()) }
    }
}
