//! Writing bytecode into the current function's chunk: opcodes, operands,
//! constants, jumps and returns. Every byte gets the line of the token
//! consumed last, as in clox.

use super::Compiler;
use super::error::ErrorKind;
use super::function::MAX_SLOTS;
use crate::bytecode::{Constant, FunctionKind, OpCode};

/// A forward jump whose distance is not known yet; [`Compiler::patch_jump`]
/// fills it in.
#[must_use = "a jump must be patched"]
pub(super) struct PendingJump {
    /// Offset of the jump's `u16` operand.
    operand: usize,
}

impl Compiler<'_> {
    pub(super) fn emit_byte(&mut self, byte: u8) {
        let line = self.parser.previous.line;
        self.current.chunk.write(byte, line);
    }

    pub(super) fn emit_op(&mut self, op: OpCode) {
        self.emit_byte(op.into());
    }

    /// An opcode and its one-byte operand.
    pub(super) fn emit_op_arg(&mut self, op: OpCode, operand: u8) {
        self.emit_op(op);
        self.emit_byte(operand);
    }

    /// Adds `constant` to the chunk and returns its index.
    ///
    /// Past 255 constants it reports [`ErrorKind::TooManyConstants`] and
    /// returns 0; the constant is kept, so the count goes on growing as in
    /// clox.
    pub(super) fn make_constant(&mut self, constant: Constant) -> u8 {
        let index = self.current.chunk.add_constant(constant);
        if index >= MAX_SLOTS {
            self.parser.error(ErrorKind::TooManyConstants);
            return 0;
        }
        index as u8
    }

    pub(super) fn emit_constant(&mut self, constant: Constant) {
        let index = self.make_constant(constant);
        self.emit_op_arg(OpCode::Constant, index);
    }

    /// A new string constant holding `name` (one per use, as in clox).
    pub(super) fn identifier_constant(&mut self, name: &str) -> u8 {
        let name = self.strings.intern(name);
        self.make_constant(Constant::String(name))
    }

    /// Emits a forward jump with a placeholder distance.
    pub(super) fn emit_jump(&mut self, op: OpCode) -> PendingJump {
        self.emit_op(op);
        self.emit_byte(0xff);
        self.emit_byte(0xff);
        PendingJump {
            operand: self.current.chunk.code.len() - 2,
        }
    }

    /// Points `jump` at the next instruction to be emitted.
    pub(super) fn patch_jump(&mut self, jump: PendingJump) {
        let distance = self.current.chunk.code.len() - jump.operand - 2;
        let distance = u16::try_from(distance).unwrap_or_else(|_| {
            self.parser.error(ErrorKind::JumpTooLarge);
            u16::MAX
        });
        self.current.chunk.patch_u16(jump.operand, distance);
    }

    /// Emits a backward jump to `loop_start`.
    pub(super) fn emit_loop(&mut self, loop_start: usize) {
        self.emit_op(OpCode::Loop);
        let distance = self.current.chunk.code.len() - loop_start + 2;
        let distance = u16::try_from(distance).unwrap_or_else(|_| {
            self.parser.error(ErrorKind::LoopTooLarge);
            u16::MAX
        });
        for byte in distance.to_le_bytes() {
            self.emit_byte(byte);
        }
    }

    /// The implicit return at the end of a function (or a bare `return;`):
    /// `this` from an initializer, `nil` from anything else.
    pub(super) fn emit_return(&mut self) {
        if self.current.kind == FunctionKind::Initializer {
            self.emit_op_arg(OpCode::GetLocal, 0);
        } else {
            self.emit_op(OpCode::Nil);
        }
        self.emit_op(OpCode::Return);
    }
}
