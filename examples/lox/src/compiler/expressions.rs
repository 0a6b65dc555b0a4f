//! Expressions, by precedence climbing: every token kind has a rule saying
//! what it does at the start of an expression (prefix), between operands
//! (infix), and how tightly it binds.

use super::Compiler;
use super::error::ErrorKind;
use super::variables::Assign;
use crate::bytecode::{Constant, OpCode};
use crate::scanner::TokenKind;

/// Binding strength, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Precedence {
    None,
    Assignment,
    Or,
    And,
    Equality,
    Comparison,
    Term,
    Factor,
    Unary,
    Call,
    Primary,
}

impl Precedence {
    /// The next stronger level (left associativity for binary operators).
    fn stronger(self) -> Self {
        use Precedence::*;
        match self {
            None => Assignment,
            Assignment => Or,
            Or => And,
            And => Equality,
            Equality => Comparison,
            Comparison => Term,
            Term => Factor,
            Factor => Unary,
            Unary => Call,
            Call | Primary => Primary,
        }
    }
}

/// What a token does at the start of an expression.
#[derive(Clone, Copy, Debug)]
enum Prefix {
    Grouping,
    Unary,
    Number,
    String,
    Literal,
    Variable,
    This,
    Super,
}

/// What a token does after a complete operand.
#[derive(Clone, Copy, Debug)]
enum Infix {
    Binary,
    Call,
    Dot,
    And,
    Or,
}

/// The parse rule of one token kind.
struct Rule {
    prefix: Option<Prefix>,
    infix: Option<Infix>,
    precedence: Precedence,
}

fn rule(kind: TokenKind) -> Rule {
    use TokenKind as K;
    let (prefix, infix, precedence) = match kind {
        K::LeftParen => (Some(Prefix::Grouping), Some(Infix::Call), Precedence::Call),
        K::Dot => (None, Some(Infix::Dot), Precedence::Call),
        K::Minus => (Some(Prefix::Unary), Some(Infix::Binary), Precedence::Term),
        K::Plus => (None, Some(Infix::Binary), Precedence::Term),
        K::Slash | K::Star => (None, Some(Infix::Binary), Precedence::Factor),
        K::Bang => (Some(Prefix::Unary), None, Precedence::None),
        K::BangEqual | K::EqualEqual => (None, Some(Infix::Binary), Precedence::Equality),
        K::Greater | K::GreaterEqual | K::Less | K::LessEqual => {
            (None, Some(Infix::Binary), Precedence::Comparison)
        }
        K::Identifier => (Some(Prefix::Variable), None, Precedence::None),
        K::String => (Some(Prefix::String), None, Precedence::None),
        K::Number => (Some(Prefix::Number), None, Precedence::None),
        K::And => (None, Some(Infix::And), Precedence::And),
        K::Or => (None, Some(Infix::Or), Precedence::Or),
        K::False | K::Nil | K::True => (Some(Prefix::Literal), None, Precedence::None),
        K::Super => (Some(Prefix::Super), None, Precedence::None),
        K::This => (Some(Prefix::This), None, Precedence::None),
        _ => (None, None, Precedence::None),
    };
    Rule {
        prefix,
        infix,
        precedence,
    }
}

impl<'src> Compiler<'src> {
    pub(super) fn expression(&mut self) {
        self.parse_precedence(Precedence::Assignment);
    }

    /// Compiles an expression whose operators bind at least as tightly as
    /// `precedence`.
    pub(super) fn parse_precedence(&mut self, precedence: Precedence) {
        self.nested(|compiler| compiler.parse_operand_and_operators(precedence));
    }

    /// [`Compiler::parse_precedence`], one level deeper.
    fn parse_operand_and_operators(&mut self, precedence: Precedence) {
        self.parser.advance();
        let Some(prefix) = rule(self.parser.previous.kind).prefix else {
            self.parser.error(ErrorKind::ExpectExpression);
            return;
        };
        let assign = if precedence <= Precedence::Assignment {
            Assign::Allowed
        } else {
            Assign::Forbidden
        };
        self.prefix(prefix, assign);
        while precedence <= rule(self.parser.current.kind).precedence {
            self.parser.advance();
            if let Some(infix) = rule(self.parser.previous.kind).infix {
                self.infix(infix, assign);
            }
        }
        if assign == Assign::Allowed && self.parser.matches(TokenKind::Equal) {
            self.parser.error(ErrorKind::InvalidAssignmentTarget);
        }
    }

    fn prefix(&mut self, prefix: Prefix, assign: Assign) {
        match prefix {
            Prefix::Grouping => {
                self.expression();
                self.parser
                    .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterExpression);
            }
            Prefix::Unary => self.unary(),
            Prefix::Number => self.number(),
            Prefix::String => self.string(),
            Prefix::Literal => self.literal(),
            Prefix::Variable => self.named_variable(self.parser.previous_lexeme(), assign),
            Prefix::This => self.this(),
            Prefix::Super => self.super_(),
        }
    }

    fn infix(&mut self, infix: Infix, assign: Assign) {
        match infix {
            Infix::Binary => self.binary(),
            Infix::Call => {
                let args = self.argument_list();
                self.emit_op_arg(OpCode::Call, args);
            }
            Infix::Dot => self.dot(assign),
            Infix::And => self.and(),
            Infix::Or => self.or(),
        }
    }

    fn number(&mut self) {
        let value = self
            .parser
            .previous_lexeme()
            .parse()
            .expect("the scanner produces only decimal number literals");
        self.emit_constant(Constant::Number(value));
    }

    fn string(&mut self) {
        let lexeme = self.parser.previous_lexeme();
        let text = lexeme.get(1..lexeme.len() - 1).unwrap_or("");
        let text = self.strings.intern(text);
        self.emit_constant(Constant::String(text));
    }

    fn literal(&mut self) {
        match self.parser.previous.kind {
            TokenKind::False => self.emit_op(OpCode::False),
            TokenKind::Nil => self.emit_op(OpCode::Nil),
            TokenKind::True => self.emit_op(OpCode::True),
            _ => {}
        }
    }

    fn unary(&mut self) {
        let operator = self.parser.previous.kind;
        self.parse_precedence(Precedence::Unary);
        match operator {
            TokenKind::Bang => self.emit_op(OpCode::Not),
            TokenKind::Minus => self.emit_op(OpCode::Negate),
            _ => {}
        }
    }

    fn binary(&mut self) {
        use TokenKind as K;
        let operator = self.parser.previous.kind;
        self.parse_precedence(rule(operator).precedence.stronger());
        let (first, second) = match operator {
            K::BangEqual => (OpCode::Equal, Some(OpCode::Not)),
            K::EqualEqual => (OpCode::Equal, None),
            K::Greater => (OpCode::Greater, None),
            K::GreaterEqual => (OpCode::Less, Some(OpCode::Not)),
            K::Less => (OpCode::Less, None),
            K::LessEqual => (OpCode::Greater, Some(OpCode::Not)),
            K::Plus => (OpCode::Add, None),
            K::Minus => (OpCode::Subtract, None),
            K::Star => (OpCode::Multiply, None),
            K::Slash => (OpCode::Divide, None),
            _ => return,
        };
        self.emit_op(first);
        if let Some(second) = second {
            self.emit_op(second);
        }
    }

    /// `a and b`: if `a` is falsey it is the result, else `b` is.
    fn and(&mut self) {
        let end = self.emit_jump(OpCode::JumpIfFalse);
        self.emit_op(OpCode::Pop);
        self.parse_precedence(Precedence::And);
        self.patch_jump(end);
    }

    /// `a or b`: if `a` is truthy it is the result, else `b` is.
    fn or(&mut self) {
        let else_jump = self.emit_jump(OpCode::JumpIfFalse);
        let end = self.emit_jump(OpCode::Jump);
        self.patch_jump(else_jump);
        self.emit_op(OpCode::Pop);
        self.parse_precedence(Precedence::Or);
        self.patch_jump(end);
    }

    /// The arguments of a call, after its `(`; returns their count.
    pub(super) fn argument_list(&mut self) -> u8 {
        let mut count: usize = 0;
        if !self.parser.check(TokenKind::RightParen) {
            loop {
                self.expression();
                if count == 255 {
                    self.parser.error(ErrorKind::TooManyArguments);
                }
                count += 1;
                if !self.parser.matches(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.parser
            .consume(TokenKind::RightParen, ErrorKind::ExpectParenAfterArguments);
        // Past 255 an error was reported; the count wraps as clox's byte does.
        count as u8
    }

    /// `.name`: a property get, a property set, or a method invocation.
    fn dot(&mut self, assign: Assign) {
        let on_this = self.current.after_this == Some(self.current.chunk.code.len());
        self.parser
            .consume(TokenKind::Identifier, ErrorKind::ExpectPropertyName);
        let lexeme = self.parser.previous_lexeme();
        let name = self.identifier_constant(lexeme);
        if assign == Assign::Allowed && self.parser.matches(TokenKind::Equal) {
            if on_this {
                self.current.set_on_this(lexeme);
            }
            self.expression();
            self.emit_op_arg(OpCode::SetProperty, name);
        } else if self.parser.matches(TokenKind::LeftParen) {
            let args = self.argument_list();
            self.emit_op_arg(OpCode::Invoke, name);
            self.emit_byte(args);
        } else {
            self.emit_op_arg(OpCode::GetProperty, name);
        }
    }
}
