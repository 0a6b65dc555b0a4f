//! The single-pass compiler: Lox source to a tree of [`FunctionProto`]s.
//!
//! It parses with precedence climbing (a Pratt parser) and emits bytecode as
//! it goes, with no syntax tree in between, exactly where clox emits it: the
//! same instructions, the same constants (one per use, never deduplicated),
//! the same limits and the same errors. Errors are collected, never printed.
//!
//! The parts: `parser` (tokens and error reporting), `function` (one
//! function's locals, scopes and upvalues), `emit` (writing bytecode),
//! `variables` (declaring and resolving names), `expressions`, `statements`
//! and `classes`.

#![forbid(unsafe_code)]

mod classes;
mod emit;
mod error;
mod expressions;
mod function;
mod parser;
mod statements;
mod strings;
mod variables;

#[cfg(test)]
mod tests;

use std::rc::Rc;

pub use error::{CompileError, CompileErrors, ErrorKind, ErrorLocation};

use self::function::FunctionState;
use self::parser::Parser;
use self::strings::Strings;
use crate::bytecode::{FunctionKind, FunctionProto};
use crate::scanner::TokenKind;

/// Compiles a whole program.
///
/// Returns the script's prototype; every function of the program is a
/// [`Constant::Function`](crate::Constant::Function) somewhere in its tree.
///
/// # Errors
///
/// Every error clox would report for this source, in order, as data.
pub fn compile(source: &str) -> Result<Rc<FunctionProto>, CompileErrors> {
    let mut compiler = Compiler::new(source);
    compiler.parser.advance();
    while !compiler.parser.matches(TokenKind::Eof) {
        compiler.declaration();
    }
    compiler.emit_return();
    let Compiler {
        parser, current, ..
    } = compiler;
    let errors = parser.into_errors();
    if errors.is_empty() {
        Ok(Rc::new(current.into_proto()))
    } else {
        Err(CompileErrors::new(errors))
    }
}

/// How deeply expressions and statements may nest (parentheses, unary
/// operators, blocks, bodies): the compiler recurses once per level, and a
/// program past this is refused with [`ErrorKind::TooMuchNesting`] rather
/// than overflowing the thread's stack (about 1 KiB per level in a debug
/// build; `lox` compiles on a thread with a 64 MiB stack).
pub const MAX_NESTING: u32 = 10_000;

/// Whether `super` may be used in the class being compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Superclass {
    None,
    Declared,
}

/// A class whose body is being compiled.
#[derive(Clone, Copy, Debug)]
struct ClassState {
    superclass: Superclass,
}

/// The whole compilation state.
struct Compiler<'src> {
    parser: Parser<'src>,
    /// The function being compiled.
    current: FunctionState<'src>,
    /// The functions around it, outermost (the script) first.
    enclosing: Vec<FunctionState<'src>>,
    /// The classes around the code being compiled, innermost last.
    classes: Vec<ClassState>,
    strings: Strings,
    /// Expressions and statements being compiled, one inside the other.
    nesting: u32,
}

impl<'src> Compiler<'src> {
    fn new(source: &'src str) -> Self {
        Self {
            parser: Parser::new(source),
            current: FunctionState::new(FunctionKind::Script, None),
            enclosing: Vec::new(),
            classes: Vec::new(),
            strings: Strings::default(),
            nesting: 0,
        }
    }

    /// Starts compiling a nested function named by the token just consumed.
    fn begin_function(&mut self, kind: FunctionKind) {
        let name = self.strings.intern(self.parser.previous_lexeme());
        let outer = std::mem::replace(&mut self.current, FunctionState::new(kind, Some(name)));
        self.enclosing.push(outer);
    }

    /// Runs `compile` one nesting level deeper, or reports
    /// [`ErrorKind::TooMuchNesting`] at the current token and skips the
    /// rest of the source instead (a resynchronized parse would only go as
    /// deep again).
    fn nested(&mut self, compile: impl FnOnce(&mut Self)) {
        if self.nesting >= MAX_NESTING {
            self.parser.error_at_current(ErrorKind::TooMuchNesting);
            self.parser.skip_to_end();
            return;
        }
        self.nesting += 1;
        compile(self);
        self.nesting -= 1;
    }

    /// Finishes the nested function being compiled and returns to the one
    /// around it.
    fn end_function(&mut self) -> Rc<FunctionProto> {
        self.emit_return();
        let outer = self
            .enclosing
            .pop()
            .expect("end_function is paired with begin_function");
        let finished = std::mem::replace(&mut self.current, outer);
        Rc::new(finished.into_proto())
    }
}
