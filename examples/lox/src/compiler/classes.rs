//! Classes: declarations, inheritance, methods, `this` and `super`.

use super::error::ErrorKind;
use super::variables::Assign;
use super::{ClassState, Compiler, Superclass};
use crate::bytecode::{FunctionKind, OpCode};
use crate::scanner::TokenKind;

impl Compiler<'_> {
    /// `class Name [< Super] { methods }`, after `class`.
    pub(super) fn class_declaration(&mut self) {
        self.parser
            .consume(TokenKind::Identifier, ErrorKind::ExpectClassName);
        let class_name = self.parser.previous_lexeme();
        let name_constant = self.identifier_constant(class_name);
        self.declare_variable();
        self.emit_op_arg(OpCode::Class, name_constant);
        self.define_variable(name_constant);

        self.classes.push(ClassState {
            superclass: Superclass::None,
        });
        if self.parser.matches(TokenKind::Less) {
            self.parser
                .consume(TokenKind::Identifier, ErrorKind::ExpectSuperclassName);
            let superclass = self.parser.previous_lexeme();
            self.named_variable(superclass, Assign::Forbidden);
            if superclass == class_name {
                self.parser.error(ErrorKind::InheritFromSelf);
            }
            // `super` is a local of a scope around the methods, so that
            // they capture it as an upvalue.
            self.begin_scope();
            self.add_local("super");
            self.define_variable(0);
            self.named_variable(class_name, Assign::Forbidden);
            self.emit_op(OpCode::Inherit);
            if let Some(class) = self.classes.last_mut() {
                class.superclass = Superclass::Declared;
            }
        }

        // The class stays on the stack while its methods are attached.
        self.named_variable(class_name, Assign::Forbidden);
        self.parser
            .consume(TokenKind::LeftBrace, ErrorKind::ExpectBraceBeforeClassBody);
        while !self.parser.check(TokenKind::RightBrace) && !self.parser.check(TokenKind::Eof) {
            self.method();
        }
        self.parser
            .consume(TokenKind::RightBrace, ErrorKind::ExpectBraceAfterClassBody);
        self.emit_op(OpCode::Pop);

        let class = self.classes.pop();
        if class.is_some_and(|class| class.superclass == Superclass::Declared) {
            self.end_scope();
        }
    }

    fn method(&mut self) {
        self.parser
            .consume(TokenKind::Identifier, ErrorKind::ExpectMethodName);
        let name = self.parser.previous_lexeme();
        let constant = self.identifier_constant(name);
        let kind = if name == "init" {
            FunctionKind::Initializer
        } else {
            FunctionKind::Method
        };
        self.function(kind);
        self.emit_op_arg(OpCode::Method, constant);
    }

    /// `this`: slot 0 of the method, or an upvalue of a function inside it.
    pub(super) fn this(&mut self) {
        if self.classes.is_empty() {
            self.parser.error(ErrorKind::ThisOutsideClass);
            return;
        }
        self.named_variable("this", Assign::Forbidden);
        self.current.after_this = Some(self.current.chunk.code.len());
    }

    /// `super.name` or `super.name(args)`.
    pub(super) fn super_(&mut self) {
        match self.classes.last() {
            None => self.parser.error(ErrorKind::SuperOutsideClass),
            Some(class) if class.superclass == Superclass::None => {
                self.parser.error(ErrorKind::SuperWithoutSuperclass);
            }
            Some(_) => {}
        }
        self.parser
            .consume(TokenKind::Dot, ErrorKind::ExpectDotAfterSuper);
        self.parser
            .consume(TokenKind::Identifier, ErrorKind::ExpectSuperclassMethodName);
        let name = self.identifier_constant(self.parser.previous_lexeme());
        self.named_variable("this", Assign::Forbidden);
        if self.parser.matches(TokenKind::LeftParen) {
            let args = self.argument_list();
            self.named_variable("super", Assign::Forbidden);
            self.emit_op_arg(OpCode::SuperInvoke, name);
            self.emit_byte(args);
        } else {
            self.named_variable("super", Assign::Forbidden);
            self.emit_op_arg(OpCode::GetSuper, name);
        }
    }
}
