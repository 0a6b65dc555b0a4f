//! Lox values, NaN-boxed in one `u64`: a number is its IEEE-754 bits; every
//! other value is a quiet NaN that no arithmetic produces (bit 50 set on top
//! of the quiet bit), with the sign bit set for a reference to a heap object
//! (its address in the low 48 bits) and clear for `nil`, `false`, `true` and
//! the VM's internal "no value" marker.
//!
//! The same word is what every slot of the heap and of the shadow stacks
//! holds, so the collector decodes it with [`Value::as_object`] and encodes
//! a moved object's new address with [`Value::object`] (see `gc::slot`).

use hotmem::{Address, ObjectReference};

/// The quiet-NaN bits shared by every non-number value.
const QNAN: u64 = 0x7ffc_0000_0000_0000;
/// Set, with [`QNAN`], for a reference.
const SIGN: u64 = 0x8000_0000_0000_0000;
/// The tag of a reference: the address is what remains.
const OBJECT_TAG: u64 = SIGN | QNAN;

/// One Lox value (or the VM's [`Value::ABSENT`] marker).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct Value(u64);

impl Value {
    /// `false`. `false` and `nil` differ only in bit 0, so that falsiness is
    /// one compare ([`Value::is_falsey`]).
    pub(crate) const FALSE: Value = Value(QNAN | 2);
    /// `nil`.
    pub(crate) const NIL: Value = Value(QNAN | 3);
    /// `true`.
    pub(crate) const TRUE: Value = Value(QNAN | 4);
    /// Not a Lox value: an undefined global's slot, an empty table key.
    pub(crate) const ABSENT: Value = Value(QNAN | 5);

    /// The value whose bits are `bits` (as read from a slot).
    #[inline(always)]
    pub(crate) const fn from_bits(bits: u64) -> Value {
        Value(bits)
    }

    /// The bits, as stored in a slot.
    #[inline(always)]
    pub(crate) const fn bits(self) -> u64 {
        self.0
    }

    /// A number.
    #[inline(always)]
    pub(crate) fn number(n: f64) -> Value {
        Value(n.to_bits())
    }

    /// A boolean.
    #[inline(always)]
    pub(crate) fn bool(b: bool) -> Value {
        Value(QNAN | (2 + 2 * b as u64))
    }

    /// A reference to the object at `addr` (a heap object's address).
    #[inline(always)]
    pub(crate) fn object(addr: usize) -> Value {
        debug_assert!(addr != 0 && addr.is_multiple_of(8) && (addr as u64) & OBJECT_TAG == 0);
        Value(addr as u64 | OBJECT_TAG)
    }

    /// Whether this is a number.
    #[inline(always)]
    pub(crate) fn is_number(self) -> bool {
        self.0 & QNAN != QNAN
    }

    /// The number (meaningful only if [`Value::is_number`]).
    #[inline(always)]
    pub(crate) fn as_number(self) -> f64 {
        f64::from_bits(self.0)
    }

    /// Whether this refers to a heap object.
    #[inline(always)]
    pub(crate) fn is_object(self) -> bool {
        self.0 & OBJECT_TAG == OBJECT_TAG
    }

    /// The address of the object (meaningful only if [`Value::is_object`]).
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        (self.0 & !OBJECT_TAG) as usize
    }

    /// The object this refers to, for the collector; `None` for anything
    /// but a reference.
    #[inline(always)]
    pub(crate) fn as_object(self) -> Option<ObjectReference> {
        if self.is_object() {
            ObjectReference::from_address(Address::new(self.addr()))
        } else {
            None
        }
    }

    /// `nil` or `false`.
    #[inline(always)]
    pub(crate) fn is_falsey(self) -> bool {
        self.0 | 1 == Value::NIL.0
    }

    /// Lox's `==`: numbers by IEEE equality (`nan != nan`, `0 == -0`),
    /// everything else by identity (strings are interned).
    #[inline(always)]
    pub(crate) fn equals(self, other: Value) -> bool {
        if self.is_number() && other.is_number() {
            self.as_number() == other.as_number()
        } else {
            self.0 == other.0
        }
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::NIL => f.write_str("nil"),
            Value::TRUE => f.write_str("true"),
            Value::FALSE => f.write_str("false"),
            Value::ABSENT => f.write_str("<absent>"),
            v if v.is_number() => write!(f, "{}", v.as_number()),
            v => write!(f, "<object {:#x}>", v.addr()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    #[test]
    fn encodings_are_distinct() {
        let specials = [Value::FALSE, Value::NIL, Value::TRUE, Value::ABSENT];
        for (i, a) in specials.iter().enumerate() {
            assert!(!a.is_number() && !a.is_object());
            for b in &specials[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert!(Value::NIL.is_falsey() && Value::FALSE.is_falsey());
        assert!(!Value::TRUE.is_falsey() && !Value::number(0.0).is_falsey());
        assert_eq!(Value::bool(true), Value::TRUE);
        assert_eq!(Value::bool(false), Value::FALSE);
    }

    #[test]
    fn numbers_and_objects() {
        for n in [0.0, -0.0, 1.5, f64::INFINITY, f64::NAN, -f64::NAN, 1e-310] {
            let v = Value::number(n);
            assert!(v.is_number() && !v.is_object());
            assert_eq!(v.as_number().to_bits(), n.to_bits());
        }
        assert!(!Value::number(f64::NAN).equals(Value::number(f64::NAN)));
        assert!(Value::number(0.0).equals(Value::number(-0.0)));
        let o = Value::object(0x7fff_1234_5678);
        assert!(o.is_object() && !o.is_number());
        assert_eq!(o.addr(), 0x7fff_1234_5678);
        assert_eq!(o.as_object().unwrap().get(), 0x7fff_1234_5678);
        assert_eq!(Value::NIL.as_object(), None);
    }
}
