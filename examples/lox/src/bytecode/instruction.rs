//! Decoding: bytes of a chunk back into instructions, for the disassembler
//! and for tests that check what the compiler emitted.

use std::fmt;

use super::chunk::{Chunk, Constant};
use super::opcode::{OpCode, Operands};
use super::proto::UpvalueDesc;

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction<'a> {
    /// Where it starts in the code.
    pub offset: usize,
    /// Its opcode.
    pub op: OpCode,
    /// Its operands.
    pub operand: Operand<'a>,
}

/// The operands of a decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand<'a> {
    /// No operand.
    None,
    /// A constant-table index.
    Constant(u8),
    /// A slot, upvalue index or argument count.
    Byte(u8),
    /// A jump or loop: the offset it lands on.
    Jump {
        /// The offset of the instruction the jump lands on.
        target: usize,
    },
    /// `INVOKE` / `SUPER_INVOKE`.
    Invoke {
        /// The constant index of the method name.
        name: u8,
        /// The argument count.
        args: u8,
    },
    /// `CLOSURE`: the function constant and its upvalue pairs.
    Closure {
        /// The constant index of the function.
        function: u8,
        /// The `(is_local, index)` byte pairs, two bytes per upvalue.
        pairs: &'a [u8],
    },
}

impl Operand<'_> {
    /// The upvalues of a `CLOSURE` operand (empty for any other operand).
    pub fn upvalues(&self) -> impl Iterator<Item = UpvalueDesc> + '_ {
        let pairs: &[u8] = match self {
            Operand::Closure { pairs, .. } => pairs,
            _ => &[],
        };
        pairs
            .chunks_exact(2)
            .map(|pair| UpvalueDesc::decode(pair[0], pair[1]))
    }
}

impl Instruction<'_> {
    /// How many bytes the instruction takes, opcode included.
    pub fn len(&self) -> usize {
        1 + match self.operand {
            Operand::None => 0,
            Operand::Constant(_) | Operand::Byte(_) => 1,
            Operand::Jump { .. } | Operand::Invoke { .. } => 2,
            Operand::Closure { pairs, .. } => 1 + pairs.len(),
        }
    }

    /// Always false: an instruction is at least its opcode byte.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Why bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The byte at `offset` is no opcode.
    UnknownOpcode {
        /// Where the byte is.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// The instruction at `offset` runs past the end of the code.
    Truncated {
        /// Where the instruction starts.
        offset: usize,
    },
    /// The `CLOSURE` at `offset` names a constant that is not a function.
    NotAFunction {
        /// Where the instruction starts.
        offset: usize,
    },
    /// The `LOOP` at `offset` jumps before the start of the code.
    LoopBeforeStart {
        /// Where the instruction starts.
        offset: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownOpcode { offset, byte } => {
                write!(f, "unknown opcode {byte} at offset {offset}")
            }
            Self::Truncated { offset } => write!(f, "instruction at {offset} is truncated"),
            Self::NotAFunction { offset } => {
                write!(
                    f,
                    "CLOSURE at {offset} names a constant that is not a function"
                )
            }
            Self::LoopBeforeStart { offset } => {
                write!(f, "LOOP at {offset} jumps before the start of the code")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes the instruction at `offset` of `chunk`.
///
/// # Errors
///
/// [`DecodeError`] if the bytes there are not a well-formed instruction.
pub fn decode(chunk: &Chunk, offset: usize) -> Result<Instruction<'_>, DecodeError> {
    let code = &chunk.code;
    let byte = *code.get(offset).ok_or(DecodeError::Truncated { offset })?;
    let op = OpCode::from_u8(byte).ok_or(DecodeError::UnknownOpcode { offset, byte })?;
    let operand_byte = |index: usize| {
        code.get(offset + index)
            .copied()
            .ok_or(DecodeError::Truncated { offset })
    };
    let operand = match op.operands() {
        Operands::None => Operand::None,
        Operands::Constant => Operand::Constant(operand_byte(1)?),
        Operands::Byte => Operand::Byte(operand_byte(1)?),
        Operands::JumpForward | Operands::JumpBackward => {
            let distance = usize::from(
                chunk
                    .read_u16(offset + 1)
                    .ok_or(DecodeError::Truncated { offset })?,
            );
            let next = offset + 3;
            let target = if op.operands() == Operands::JumpForward {
                next + distance
            } else {
                next.checked_sub(distance)
                    .ok_or(DecodeError::LoopBeforeStart { offset })?
            };
            Operand::Jump { target }
        }
        Operands::Invoke => Operand::Invoke {
            name: operand_byte(1)?,
            args: operand_byte(2)?,
        },
        Operands::Closure => {
            let function = operand_byte(1)?;
            let Some(Constant::Function(proto)) = chunk.constants.get(usize::from(function)) else {
                return Err(DecodeError::NotAFunction { offset });
            };
            let start = offset + 2;
            let pairs = code
                .get(start..start + 2 * proto.upvalues.len())
                .ok_or(DecodeError::Truncated { offset })?;
            Operand::Closure { function, pairs }
        }
    };
    Ok(Instruction {
        offset,
        op,
        operand,
    })
}

/// Every instruction of `chunk`, in order; stops after the first error.
pub fn instructions(chunk: &Chunk) -> impl Iterator<Item = Result<Instruction<'_>, DecodeError>> {
    let mut offset = 0;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || offset >= chunk.code.len() {
            return None;
        }
        let decoded = decode(chunk, offset);
        match &decoded {
            Ok(instruction) => offset += instruction.len(),
            Err(_) => failed = true,
        }
        Some(decoded)
    })
}
