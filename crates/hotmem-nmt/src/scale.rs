//! The unit reports print amounts in.

use std::fmt;

/// The unit of the amounts in a text report (JSON always has bytes).
/// Units are binary, as in `jcmd VM.native_memory`: 1 KB is 1024 bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum Scale {
    /// Bytes.
    Bytes,
    /// KB (1024 bytes), the default.
    #[default]
    Kilo,
    /// MB (1024 KB).
    Mega,
    /// GB (1024 MB).
    Giga,
}

impl Scale {
    /// Bytes per unit.
    pub const fn divisor(self) -> usize {
        match self {
            Scale::Bytes => 1,
            Scale::Kilo => 1 << 10,
            Scale::Mega => 1 << 20,
            Scale::Giga => 1 << 30,
        }
    }

    /// The unit as printed.
    pub const fn unit(self) -> &'static str {
        match self {
            Scale::Bytes => "B",
            Scale::Kilo => "KB",
            Scale::Mega => "MB",
            Scale::Giga => "GB",
        }
    }

    /// `bytes` in this unit, rounded to nearest.
    pub const fn of(self, bytes: usize) -> usize {
        let d = self.divisor();
        bytes / d + (bytes % d >= d.div_ceil(2) && d > 1) as usize
    }

    /// An amount that prints as e.g. `2048KB`.
    pub const fn amount(self, bytes: usize) -> Amount {
        Amount { bytes, scale: self }
    }

    /// A change that prints as e.g. `+64KB` or `-8KB`.
    pub const fn change(self, bytes: isize) -> Change {
        Change { bytes, scale: self }
    }
}

/// Writes `bytes` in `scale` (e.g. `2048KB`) with a hand-rolled integer
/// formatter: the summary report's hot path, cheaper than `core::fmt`'s
/// argument machinery.
#[inline]
pub(crate) fn put_amount(w: &mut dyn fmt::Write, bytes: usize, scale: Scale) -> fmt::Result {
    let mut v = scale.of(bytes);
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    w.write_str(std::str::from_utf8(&buf[i..]).map_err(|_| fmt::Error)?)?;
    w.write_str(scale.unit())
}

/// Writes `n` spaces.
#[inline]
pub(crate) fn put_spaces(w: &mut dyn fmt::Write, mut n: usize) -> fmt::Result {
    const SPACES: &str = "                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        w.write_str(&SPACES[..k])?;
        n -= k;
    }
    Ok(())
}

/// An amount of bytes in a [`Scale`] (see [`Scale::amount`]).
#[derive(Copy, Clone, Debug)]
pub struct Amount {
    bytes: usize,
    scale: Scale,
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.scale.of(self.bytes), self.scale.unit())
    }
}

/// A signed change in a [`Scale`] (see [`Scale::change`]).
#[derive(Copy, Clone, Debug)]
pub struct Change {
    bytes: isize,
    scale: Scale,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.bytes < 0 { '-' } else { '+' };
        let v = self.scale.of(self.bytes.unsigned_abs());
        write!(f, "{sign}{v}{}", self.scale.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_and_printing() {
        assert_eq!(Scale::Kilo.of(1536), 2);
        assert_eq!(Scale::Kilo.of(1535), 1);
        assert_eq!(Scale::Bytes.of(7), 7);
        assert_eq!(Scale::Mega.amount(3 << 20).to_string(), "3MB");
        assert_eq!(Scale::Kilo.change(-8192).to_string(), "-8KB");
        assert_eq!(Scale::Giga.change(1 << 30).to_string(), "+1GB");
        for (bytes, text) in [
            (0, "0KB"),
            (1 << 20, "1024KB"),
            (usize::MAX, "18014398509481984KB"),
        ] {
            let mut out = String::new();
            put_amount(&mut out, bytes, Scale::Kilo).unwrap();
            assert_eq!(out, text);
        }
        let mut out = String::new();
        put_spaces(&mut out, 70).unwrap();
        assert_eq!(out.len(), 70);
    }
}
