//! A chunk: one function's code, its constants and its line table.

use std::fmt;
use std::rc::Rc;

use super::opcode::OpCode;
use super::proto::FunctionProto;
use crate::number::format_number;

/// A value known at compile time. Strings and functions are plain Rust data
/// here; the VM turns them into heap objects when it loads the program.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    /// A number literal.
    Number(f64),
    /// A string literal (without its quotes) or an identifier's name.
    String(Rc<str>),
    /// A function, method or initializer nested in this chunk's function.
    Function(Rc<FunctionProto>),
}

impl fmt::Display for Constant {
    /// As Lox prints the value: `%g` numbers, raw strings, `<fn name>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(value) => write!(f, "{}", format_number(*value)),
            Self::String(text) => f.write_str(text),
            Self::Function(proto) => write!(f, "{proto}"),
        }
    }
}

/// Source lines of a chunk's code, run-length encoded: one entry per run of
/// consecutive bytes that came from the same line. Lookups (only needed for
/// error messages and listings) are a binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineTable {
    runs: Vec<LineRun>,
}

/// The bytes from `start` up to the next run's start came from `line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LineRun {
    start: u32,
    line: u32,
}

impl LineTable {
    /// Records that the byte at `offset` came from `line`. Offsets must be
    /// pushed in increasing order (the order code is written).
    fn push(&mut self, offset: usize, line: u32) {
        if self.runs.last().is_some_and(|run| run.line == line) {
            return;
        }
        let start = u32::try_from(offset).unwrap_or(u32::MAX);
        self.runs.push(LineRun { start, line });
    }

    /// The source line of the byte at `offset` (0 for an empty table).
    pub fn line_of(&self, offset: usize) -> u32 {
        let after = self
            .runs
            .partition_point(|run| run.start as usize <= offset);
        after
            .checked_sub(1)
            .and_then(|index| self.runs.get(index))
            .map_or(0, |run| run.line)
    }

    /// How many runs the table holds (its size is 8 bytes per run).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// One function's bytecode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chunk {
    /// Opcodes and their operands; see [`OpCode`].
    pub code: Vec<u8>,
    /// The source line of every byte of `code`.
    pub lines: LineTable,
    /// The constants the code indexes. Never deduplicated: clox appends one
    /// per use, and its 256-constant limit must trip on the same programs.
    pub constants: Vec<Constant>,
}

impl Chunk {
    /// An empty chunk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one byte that came from `line`.
    #[inline]
    pub fn write(&mut self, byte: u8, line: u32) {
        self.lines.push(self.code.len(), line);
        self.code.push(byte);
    }

    /// Appends an opcode that came from `line`.
    #[inline]
    pub fn write_op(&mut self, op: OpCode, line: u32) {
        self.write(op.into(), line);
    }

    /// Appends a constant and returns its index (which may exceed 255: the
    /// compiler reports that).
    pub fn add_constant(&mut self, constant: Constant) -> usize {
        self.constants.push(constant);
        self.constants.len() - 1
    }

    /// The `u16` operand at `offset` (little-endian), if the code is that long.
    #[inline]
    pub fn read_u16(&self, offset: usize) -> Option<u16> {
        let bytes = self.code.get(offset..offset + 2)?;
        Some(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    /// Overwrites the `u16` operand at `offset` (a jump being patched).
    ///
    /// # Panics
    ///
    /// If `offset + 2` is past the end of the code.
    pub fn patch_u16(&mut self, offset: usize, value: u16) {
        self.code[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::{Chunk, LineTable};

    #[test]
    fn line_table_run_length_encodes() {
        let mut lines = LineTable::default();
        for (offset, line) in [1, 1, 1, 2, 2, 5, 1].into_iter().enumerate() {
            lines.push(offset, line);
        }
        assert_eq!(lines.runs(), 4);
        let looked_up: Vec<u32> = (0..7).map(|offset| lines.line_of(offset)).collect();
        assert_eq!(looked_up, [1, 1, 1, 2, 2, 5, 1]);
        assert_eq!(lines.line_of(100), 1);
        assert_eq!(LineTable::default().line_of(0), 0);
    }

    #[test]
    fn u16_operands_round_trip() {
        let mut chunk = Chunk::new();
        chunk.write(0, 1);
        chunk.write(0xff, 1);
        chunk.write(0xff, 1);
        chunk.patch_u16(1, 0x1234);
        assert_eq!(chunk.read_u16(1), Some(0x1234));
        assert_eq!(chunk.read_u16(2), None);
    }
}
