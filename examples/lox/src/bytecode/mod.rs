//! The compiler's output and the VM's input: opcodes, chunks, constants,
//! function prototypes, and tools to decode and list them.

#![forbid(unsafe_code)]

mod chunk;
mod disassemble;
mod instruction;
mod opcode;
mod proto;

pub use chunk::{Chunk, Constant, LineTable};
pub use disassemble::{Disassembly, disassemble, write_chunk, write_instruction};
pub use instruction::{DecodeError, Instruction, Operand, decode, instructions};
pub use opcode::{OpCode, Operands};
pub use proto::{FunctionKind, FunctionProto, UpvalueDesc};
