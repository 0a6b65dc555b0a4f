//! The unit reports print amounts in.

use std::fmt;

/// The unit of the amounts in a text report (JSON always has bytes).
/// Units are binary, as in `jcmd VM.native_memory`: 1 KB is 1024 bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
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
    }
}
