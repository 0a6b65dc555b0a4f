//! The token stream the compiler reads, one token of lookahead, and error
//! reporting with clox's panic mode: after an error, further errors are
//! dropped until the compiler resynchronizes at a statement boundary.

use super::error::{CompileError, ErrorKind, ErrorLocation};
use crate::scanner::{Scanner, Token, TokenKind};

/// Whether errors are being reported or suppressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Errors are reported.
    Reporting,
    /// An error was reported; later ones are cascades and are dropped.
    Panic,
    /// The rest of the source was skipped ([`Parser::skip_to_end`]): every
    /// later error is a cascade, even after resynchronizing.
    Abandoned,
}

/// Tokens in, errors out.
pub(super) struct Parser<'src> {
    source: &'src str,
    scanner: Scanner<'src>,
    /// The token not consumed yet.
    pub(super) current: Token,
    /// The token consumed last.
    pub(super) previous: Token,
    mode: Mode,
    errors: Vec<CompileError>,
}

impl<'src> Parser<'src> {
    /// A parser before the first token; call [`advance`](Self::advance) once
    /// to load it.
    pub(super) fn new(source: &'src str) -> Self {
        let start = Token {
            kind: TokenKind::Eof,
            start: 0,
            end: 0,
            line: 1,
        };
        Self {
            source,
            scanner: Scanner::new(source),
            current: start,
            previous: start,
            mode: Mode::Reporting,
            errors: Vec::new(),
        }
    }

    /// The text of `token`.
    pub(super) fn lexeme(&self, token: Token) -> &'src str {
        token.lexeme(self.source)
    }

    /// The text of the token consumed last.
    pub(super) fn previous_lexeme(&self) -> &'src str {
        self.lexeme(self.previous)
    }

    /// Moves to the next token, reporting (and skipping) error tokens.
    pub(super) fn advance(&mut self) {
        self.previous = self.current;
        loop {
            self.current = self.scanner.next_token();
            match self.current.kind {
                TokenKind::Error(error) => self.error_at_current(ErrorKind::Scan(error)),
                _ => return,
            }
        }
    }

    /// Whether the current token is a `kind`.
    #[inline]
    pub(super) fn check(&self, kind: TokenKind) -> bool {
        self.current.kind == kind
    }

    /// Consumes the current token if it is a `kind`.
    pub(super) fn matches(&mut self, kind: TokenKind) -> bool {
        if !self.check(kind) {
            return false;
        }
        self.advance();
        true
    }

    /// Consumes a `kind` token, or reports `error` at the current token.
    pub(super) fn consume(&mut self, kind: TokenKind, error: ErrorKind) {
        if self.check(kind) {
            self.advance();
        } else {
            self.error_at_current(error);
        }
    }

    /// Reports `error` at the token consumed last.
    pub(super) fn error(&mut self, error: ErrorKind) {
        self.error_at(self.previous, error);
    }

    /// Reports `error` at the current token.
    pub(super) fn error_at_current(&mut self, error: ErrorKind) {
        self.error_at(self.current, error);
    }

    fn error_at(&mut self, token: Token, kind: ErrorKind) {
        if self.mode != Mode::Reporting {
            return;
        }
        self.mode = Mode::Panic;
        let location = match token.kind {
            TokenKind::Eof => ErrorLocation::End,
            TokenKind::Error(_) => ErrorLocation::Scanner,
            _ => ErrorLocation::Token(self.lexeme(token).into()),
        };
        self.errors.push(CompileError {
            line: token.line,
            location,
            kind,
        });
    }

    /// Whether an error was reported and the compiler has not resynchronized.
    pub(super) fn panicking(&self) -> bool {
        self.mode != Mode::Reporting
    }

    /// Leaves panic mode, skipping tokens up to a likely statement boundary:
    /// just past a `;`, or before a keyword that starts a declaration or a
    /// statement.
    pub(super) fn synchronize(&mut self) {
        if self.mode == Mode::Abandoned {
            return;
        }
        self.mode = Mode::Reporting;
        while self.current.kind != TokenKind::Eof {
            if self.previous.kind == TokenKind::Semicolon {
                return;
            }
            match self.current.kind {
                TokenKind::Class
                | TokenKind::Fun
                | TokenKind::Var
                | TokenKind::For
                | TokenKind::If
                | TokenKind::While
                | TokenKind::Print
                | TokenKind::Return => return,
                _ => self.advance(),
            }
        }
    }

    /// Skips every token left (scan errors included, unreported): after an
    /// error the compiler cannot recover from.
    pub(super) fn skip_to_end(&mut self) {
        self.mode = Mode::Abandoned;
        while self.current.kind != TokenKind::Eof {
            self.advance();
        }
    }

    /// The errors reported, in order.
    pub(super) fn into_errors(self) -> Vec<CompileError> {
        self.errors
    }
}
