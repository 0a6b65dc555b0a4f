//! Numbers printed as C's `printf("%g", x)` prints them, the way clox prints
//! every Lox number.
//!
//! `%g` with its default precision of 6 significant digits picks one of two
//! forms from the decimal exponent `X` that the value has once rounded to 6
//! digits: fixed notation when `-4 <= X < 6`, exponent notation otherwise,
//! then strips trailing zeros (and a trailing decimal point). Infinities and
//! NaNs print as glibc prints them: `inf`, `-inf`, `nan`, `-nan` (the sign bit
//! of a NaN shows; on x86-64 `0/0` produces a negative NaN).

#![forbid(unsafe_code)]

use std::fmt;

#[cfg(test)]
mod c_table;
#[cfg(test)]
mod tests;

/// Significant digits of `%g` at its default precision.
const PRECISION: usize = 6;

/// The longest text this module produces is 13 bytes (`-1.23456e-308`); the
/// scratch buffers have room to spare.
const BUFFER: usize = 32;

/// Formats `value` as C's `printf("%g", value)` does.
///
/// The result is a [`Display`](fmt::Display) value; formatting it allocates
/// nothing (the digits are produced in a buffer on the stack).
///
/// ```
/// use hotmem_lox::format_number;
///
/// assert_eq!(format_number(3.0).to_string(), "3");
/// assert_eq!(format_number(0.1 + 0.2).to_string(), "0.3");
/// assert_eq!(format_number(123456789.0).to_string(), "1.23457e+08");
/// assert_eq!(format_number(-0.0).to_string(), "-0");
/// assert_eq!(format_number(f64::INFINITY).to_string(), "inf");
/// ```
#[inline]
pub fn format_number(value: f64) -> NumberDisplay {
    NumberDisplay(value)
}

/// A number that displays as `printf("%g")` prints it; see [`format_number`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumberDisplay(f64);

impl fmt::Display for NumberDisplay {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        // The common case in Lox programs: a small integer, which `%g` prints
        // without a fraction or exponent.
        if value.fract() == 0.0 && value.abs() < 1e6 {
            if value == 0.0 && value.is_sign_negative() {
                return f.write_str("-0");
            }
            // Exact: |value| < 1e6 fits an i32.
            return write!(f, "{}", value as i32);
        }
        format_general(value, f)
    }
}

/// Every value that is not a small integer: NaN, infinities, fractions and
/// large magnitudes.
#[cold]
fn format_general(value: f64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value.is_nan() {
        return write!(f, "{sign}nan");
    }
    if value.is_infinite() {
        return write!(f, "{sign}inf");
    }
    let digits = Digits::of(value.abs())?;
    let mut out = Buffer::new();
    out.push_str(sign);
    let exponent = digits.exponent;
    if (-4..PRECISION as i32).contains(&exponent) {
        digits.write_fixed(&mut out);
    } else {
        digits.write_exponent(&mut out);
    }
    f.write_str(out.as_str())
}

/// A finite non-negative value rounded to [`PRECISION`] significant digits:
/// `d0.d1d2d3d4d5 * 10^exponent`.
struct Digits {
    /// ASCII digits, most significant first.
    digits: [u8; PRECISION],
    /// The decimal exponent after rounding (so 9.999995 has exponent 1).
    exponent: i32,
}

impl Digits {
    /// Rounds `value` (finite, `>= 0`) to six significant digits, with the
    /// same correctly rounded, ties-to-even result as glibc's `%e`.
    fn of(value: f64) -> Result<Self, fmt::Error> {
        let mut scratch = Buffer::new();
        fmt::write(&mut scratch, format_args!("{:.*e}", PRECISION - 1, value))?;
        // `scratch` is "d.ddddde<exp>" (or "0.00000e0").
        let text = scratch.as_bytes();
        let (mantissa, exponent) = text.split_at(
            text.iter()
                .position(|&byte| byte == b'e')
                .ok_or(fmt::Error)?,
        );
        let mut digits = [b'0'; PRECISION];
        let mantissa_digits = mantissa.iter().filter(|byte| byte.is_ascii_digit());
        for (slot, &byte) in digits.iter_mut().zip(mantissa_digits) {
            *slot = byte;
        }
        let exponent = std::str::from_utf8(&exponent[1..])
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or(fmt::Error)?;
        Ok(Self { digits, exponent })
    }

    /// The digits without the trailing zeros that `%g` strips.
    fn significant(&self) -> &[u8] {
        let len = self
            .digits
            .iter()
            .rposition(|&digit| digit != b'0')
            .map_or(1, |last| last + 1);
        &self.digits[..len]
    }

    /// `%f` form, for `-4 <= exponent < PRECISION`.
    fn write_fixed(&self, out: &mut Buffer) {
        let significant = self.significant();
        if self.exponent < 0 {
            out.push_str("0.");
            for _ in 0..(-self.exponent - 1) {
                out.push(b'0');
            }
            out.push_bytes(significant);
            return;
        }
        let integer_digits = self.exponent as usize + 1;
        out.push_bytes(&self.digits[..integer_digits]);
        if significant.len() > integer_digits {
            out.push(b'.');
            out.push_bytes(&significant[integer_digits..]);
        }
    }

    /// `%e` form: mantissa, `e`, sign, and at least two exponent digits.
    fn write_exponent(&self, out: &mut Buffer) {
        let significant = self.significant();
        out.push(significant[0]);
        if significant.len() > 1 {
            out.push(b'.');
            out.push_bytes(&significant[1..]);
        }
        out.push(b'e');
        out.push(if self.exponent < 0 { b'-' } else { b'+' });
        let magnitude = self.exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        let mut exponent_digits = Buffer::new();
        // Writing a u32 into a 32-byte buffer cannot fail.
        let _ = fmt::write(&mut exponent_digits, format_args!("{magnitude}"));
        out.push_bytes(exponent_digits.as_bytes());
    }
}

/// A fixed-capacity ASCII text buffer on the stack.
struct Buffer {
    bytes: [u8; BUFFER],
    len: usize,
}

impl Buffer {
    fn new() -> Self {
        Self {
            bytes: [0; BUFFER],
            len: 0,
        }
    }

    fn push(&mut self, byte: u8) {
        // The longest output is far below BUFFER; a longer one is truncated
        // rather than panicking.
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.push(byte);
        }
    }

    fn push_str(&mut self, text: &str) {
        self.push_bytes(text.as_bytes());
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl fmt::Write for Buffer {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.len + text.len() > BUFFER {
            return Err(fmt::Error);
        }
        self.push_str(text);
        Ok(())
    }
}
