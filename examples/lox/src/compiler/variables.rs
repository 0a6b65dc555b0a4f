//! Declaring, defining and resolving names: scopes, locals, upvalues and
//! globals.

use super::Compiler;
use super::error::ErrorKind;
use super::function::{Capture, resolve_upvalue};
use crate::bytecode::OpCode;
use crate::scanner::TokenKind;

/// Whether the expression being parsed may be the target of an `=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Assign {
    Allowed,
    Forbidden,
}

/// Where a name lives, with the operand that reaches it.
#[derive(Clone, Copy, Debug)]
enum Place {
    Local(u8),
    Upvalue(u8),
    Global(u8),
}

impl<'src> Compiler<'src> {
    pub(super) fn begin_scope(&mut self) {
        self.current.scope_depth += 1;
    }

    /// Leaves a scope, popping its locals (closing the captured ones).
    pub(super) fn end_scope(&mut self) {
        self.current.scope_depth -= 1;
        while let Some(capture) = self.current.pop_local_deeper_than_scope() {
            match capture {
                Capture::Captured => self.emit_op(OpCode::CloseUpvalue),
                Capture::NotCaptured => self.emit_op(OpCode::Pop),
            }
        }
    }

    /// Adds a local, reporting the limit.
    pub(super) fn add_local(&mut self, name: &'src str) {
        if let Err(error) = self.current.add_local(name) {
            self.parser.error(error);
        }
    }

    /// Declares the name just consumed as a local of the current scope (at
    /// top level names are globals and need no declaration).
    pub(super) fn declare_variable(&mut self) {
        if self.current.scope_depth == 0 {
            return;
        }
        let name = self.parser.previous_lexeme();
        if self.current.declared_in_current_scope(name) {
            self.parser.error(ErrorKind::DuplicateLocal);
        }
        self.add_local(name);
    }

    /// Parses a variable name and declares it. Returns the constant index
    /// of the name for a global, 0 for a local.
    pub(super) fn parse_variable(&mut self, error: ErrorKind) -> u8 {
        self.parser.consume(TokenKind::Identifier, error);
        self.declare_variable();
        if self.current.scope_depth > 0 {
            return 0;
        }
        self.identifier_constant(self.parser.previous_lexeme())
    }

    /// Makes a declared variable usable: a local becomes readable, a global
    /// is defined from the value on the stack.
    pub(super) fn define_variable(&mut self, global: u8) {
        if self.current.scope_depth > 0 {
            self.current.mark_initialized();
            return;
        }
        self.emit_op_arg(OpCode::DefineGlobal, global);
    }

    /// Reads (or, when allowed and followed by `=`, assigns) the variable
    /// `name`: a local, else an upvalue, else a global.
    pub(super) fn named_variable(&mut self, name: &'src str, assign: Assign) {
        let (get, set, operand) = match self.resolve(name) {
            Place::Local(slot) => (OpCode::GetLocal, OpCode::SetLocal, slot),
            Place::Upvalue(index) => (OpCode::GetUpvalue, OpCode::SetUpvalue, index),
            Place::Global(constant) => (OpCode::GetGlobal, OpCode::SetGlobal, constant),
        };
        if assign == Assign::Allowed && self.parser.matches(TokenKind::Equal) {
            self.expression();
            self.emit_op_arg(set, operand);
        } else {
            self.emit_op_arg(get, operand);
        }
    }

    fn resolve(&mut self, name: &'src str) -> Place {
        if let Some((slot, error)) = self.current.resolve_local(name) {
            if let Some(error) = error {
                self.parser.error(error);
            }
            return Place::Local(slot);
        }
        let parser = &mut self.parser;
        let mut report = |error| parser.error(error);
        if let Some(index) =
            resolve_upvalue(&mut self.enclosing, &mut self.current, name, &mut report)
        {
            return Place::Upvalue(index);
        }
        Place::Global(self.identifier_constant(name))
    }
}
