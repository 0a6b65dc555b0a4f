//! Declarations and statements, and function bodies.

use super::Compiler;
use super::error::ErrorKind;
use crate::bytecode::{Constant, FunctionKind, OpCode};
use crate::scanner::TokenKind;

impl Compiler<'_> {
    /// One declaration; after an error, skips to the next statement.
    pub(super) fn declaration(&mut self) {
        self.nested(Self::declaration_here);
    }

    /// [`Compiler::declaration`], one level deeper.
    fn declaration_here(&mut self) {
        if self.parser.matches(TokenKind::Class) {
            self.class_declaration();
        } else if self.parser.matches(TokenKind::Fun) {
            self.fun_declaration();
        } else if self.parser.matches(TokenKind::Var) {
            self.var_declaration();
        } else {
            self.statement();
        }
        if self.parser.panicking() {
            self.parser.synchronize();
        }
    }

    fn statement(&mut self) {
        self.nested(Self::statement_here);
    }

    /// [`Compiler::statement`], one level deeper.
    fn statement_here(&mut self) {
        if self.parser.matches(TokenKind::Print) {
            self.print_statement();
        } else if self.parser.matches(TokenKind::For) {
            self.for_statement();
        } else if self.parser.matches(TokenKind::If) {
            self.if_statement();
        } else if self.parser.matches(TokenKind::Return) {
            self.return_statement();
        } else if self.parser.matches(TokenKind::While) {
            self.while_statement();
        } else if self.parser.matches(TokenKind::LeftBrace) {
            self.begin_scope();
            self.block();
            self.end_scope();
        } else {
            self.expression_statement();
        }
    }

    /// The declarations of a block, after its `{`.
    fn block(&mut self) {
        while !self.parser.check(TokenKind::RightBrace) && !self.parser.check(TokenKind::Eof) {
            self.declaration();
        }
        self.parser
            .consume(TokenKind::RightBrace, ErrorKind::ExpectBraceAfterBlock);
    }

    fn fun_declaration(&mut self) {
        let global = self.parse_variable(ErrorKind::ExpectFunctionName);
        // A function may refer to itself: its name is usable in its body.
        self.current.mark_initialized();
        self.function(FunctionKind::Function);
        self.define_variable(global);
    }

    /// A function's parameters and body, after its name; leaves a closure
    /// of it on the stack.
    pub(super) fn function(&mut self, kind: FunctionKind) {
        self.begin_function(kind);
        self.begin_scope();
        self.parser.consume(
            TokenKind::LeftParen,
            ErrorKind::ExpectParenAfterFunctionName,
        );
        if !self.parser.check(TokenKind::RightParen) {
            loop {
                self.current.arity += 1;
                if self.current.arity > 255 {
                    self.parser.error_at_current(ErrorKind::TooManyParameters);
                }
                let constant = self.parse_variable(ErrorKind::ExpectParameterName);
                self.define_variable(constant);
                if !self.parser.matches(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.parser
            .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterParameters);
        self.parser.consume(
            TokenKind::LeftBrace,
            ErrorKind::ExpectBraceBeforeFunctionBody,
        );
        self.block();
        // No end_scope: returning from the frame discards its slots.
        let proto = self.end_function();
        let index = self.make_constant(Constant::Function(proto.clone()));
        self.emit_op_arg(OpCode::Closure, index);
        for upvalue in &proto.upvalues {
            for byte in upvalue.encode() {
                self.emit_byte(byte);
            }
        }
    }

    fn var_declaration(&mut self) {
        let global = self.parse_variable(ErrorKind::ExpectVariableName);
        if self.parser.matches(TokenKind::Equal) {
            self.expression();
        } else {
            self.emit_op(OpCode::Nil);
        }
        self.parser.consume(
            TokenKind::Semicolon,
            ErrorKind::ExpectSemicolonAfterVariable,
        );
        self.define_variable(global);
    }

    fn expression_statement(&mut self) {
        self.expression();
        self.parser.consume(
            TokenKind::Semicolon,
            ErrorKind::ExpectSemicolonAfterExpression,
        );
        self.emit_op(OpCode::Pop);
    }

    fn print_statement(&mut self) {
        self.expression();
        self.parser
            .consume(TokenKind::Semicolon, ErrorKind::ExpectSemicolonAfterValue);
        self.emit_op(OpCode::Print);
    }

    fn if_statement(&mut self) {
        self.parser
            .consume(TokenKind::LeftParen, ErrorKind::ExpectParenAfterIf);
        self.expression();
        self.parser
            .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterCondition);
        let then_jump = self.emit_jump(OpCode::JumpIfFalse);
        self.emit_op(OpCode::Pop);
        self.statement();
        let else_jump = self.emit_jump(OpCode::Jump);
        self.patch_jump(then_jump);
        self.emit_op(OpCode::Pop);
        if self.parser.matches(TokenKind::Else) {
            self.statement();
        }
        self.patch_jump(else_jump);
    }

    fn while_statement(&mut self) {
        let loop_start = self.current.chunk.code.len();
        self.parser
            .consume(TokenKind::LeftParen, ErrorKind::ExpectParenAfterWhile);
        self.expression();
        self.parser
            .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterCondition);
        let exit = self.emit_jump(OpCode::JumpIfFalse);
        self.emit_op(OpCode::Pop);
        self.statement();
        self.emit_loop(loop_start);
        self.patch_jump(exit);
        self.emit_op(OpCode::Pop);
    }

    /// `for (init; condition; increment) body`: the increment is compiled
    /// before the body and jumped over on the way in.
    fn for_statement(&mut self) {
        self.begin_scope();
        self.parser
            .consume(TokenKind::LeftParen, ErrorKind::ExpectParenAfterFor);
        if self.parser.matches(TokenKind::Semicolon) {
            // No initializer.
        } else if self.parser.matches(TokenKind::Var) {
            self.var_declaration();
        } else {
            self.expression_statement();
        }

        let mut loop_start = self.current.chunk.code.len();
        let mut exit = None;
        if !self.parser.matches(TokenKind::Semicolon) {
            self.expression();
            self.parser.consume(
                TokenKind::Semicolon,
                ErrorKind::ExpectSemicolonAfterLoopCondition,
            );
            exit = Some(self.emit_jump(OpCode::JumpIfFalse));
            self.emit_op(OpCode::Pop);
        }

        if !self.parser.matches(TokenKind::RightParen) {
            let body_jump = self.emit_jump(OpCode::Jump);
            let increment_start = self.current.chunk.code.len();
            self.expression();
            self.emit_op(OpCode::Pop);
            self.parser
                .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterForClauses);
            self.emit_loop(loop_start);
            loop_start = increment_start;
            self.patch_jump(body_jump);
        }

        self.statement();
        self.emit_loop(loop_start);
        if let Some(exit) = exit {
            self.patch_jump(exit);
            self.emit_op(OpCode::Pop);
        }
        self.end_scope();
    }

    fn return_statement(&mut self) {
        if self.current.kind == FunctionKind::Script {
            self.parser.error(ErrorKind::ReturnFromTopLevel);
        }
        if self.parser.matches(TokenKind::Semicolon) {
            self.emit_return();
            return;
        }
        if self.current.kind == FunctionKind::Initializer {
            self.parser.error(ErrorKind::ReturnValueFromInitializer);
        }
        self.expression();
        self.parser.consume(
            TokenKind::Semicolon,
            ErrorKind::ExpectSemicolonAfterReturnValue,
        );
        self.emit_op(OpCode::Return);
    }
}
