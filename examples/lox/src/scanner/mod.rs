//! The scanner: Lox source text to [`Token`]s, on demand.
//!
//! Tokens carry byte ranges into the source instead of owned text, so that
//! scanning allocates nothing. The token set, the keywords, the line counting
//! and the two error tokens are clox's. As in clox, whose source is a C string,
//! a NUL byte ends the source.

#![forbid(unsafe_code)]

mod token;

#[cfg(test)]
mod tests;

pub use token::{ScanError, Token, TokenKind};

/// Produces the tokens of one source text, one [`next_token`](Self::next_token)
/// call at a time; after the end it keeps returning [`TokenKind::Eof`].
#[derive(Debug, Clone)]
pub struct Scanner<'src> {
    /// The source up to its first NUL byte.
    bytes: &'src [u8],
    /// Start of the token being scanned.
    start: usize,
    /// Next byte to read.
    current: usize,
    line: u32,
}

impl<'src> Scanner<'src> {
    /// A scanner at the beginning of `source`, on line 1.
    pub fn new(source: &'src str) -> Self {
        let bytes = source.as_bytes();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Self {
            bytes: &bytes[..end],
            start: 0,
            current: 0,
            line: 1,
        }
    }

    /// Scans and returns the next token.
    pub fn next_token(&mut self) -> Token {
        self.skip_whitespace();
        self.start = self.current;
        let Some(byte) = self.advance() else {
            return self.make(TokenKind::Eof);
        };
        if is_alpha(byte) {
            return self.identifier();
        }
        if byte.is_ascii_digit() {
            return self.number();
        }
        let kind = match byte {
            b'(' => TokenKind::LeftParen,
            b')' => TokenKind::RightParen,
            b'{' => TokenKind::LeftBrace,
            b'}' => TokenKind::RightBrace,
            b';' => TokenKind::Semicolon,
            b',' => TokenKind::Comma,
            b'.' => TokenKind::Dot,
            b'-' => TokenKind::Minus,
            b'+' => TokenKind::Plus,
            b'/' => TokenKind::Slash,
            b'*' => TokenKind::Star,
            b'!' => self.pick(b'=', TokenKind::BangEqual, TokenKind::Bang),
            b'=' => self.pick(b'=', TokenKind::EqualEqual, TokenKind::Equal),
            b'<' => self.pick(b'=', TokenKind::LessEqual, TokenKind::Less),
            b'>' => self.pick(b'=', TokenKind::GreaterEqual, TokenKind::Greater),
            b'"' => return self.string(),
            _ => TokenKind::Error(ScanError::UnexpectedCharacter),
        };
        self.make(kind)
    }

    fn make(&self, kind: TokenKind) -> Token {
        Token {
            kind,
            // Sources over 4 GiB are not supported; offsets saturate.
            start: u32::try_from(self.start).unwrap_or(u32::MAX),
            end: u32::try_from(self.current).unwrap_or(u32::MAX),
            line: self.line,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.current).copied()
    }

    fn peek_next(&self) -> Option<u8> {
        self.bytes.get(self.current + 1).copied()
    }

    fn advance(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.current += 1;
        Some(byte)
    }

    /// `matched` if the next byte is `expected` (consuming it), else `single`.
    fn pick(&mut self, expected: u8, matched: TokenKind, single: TokenKind) -> TokenKind {
        if self.peek() == Some(expected) {
            self.current += 1;
            matched
        } else {
            single
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\r' | b'\t' => self.current += 1,
                b'\n' => {
                    self.line += 1;
                    self.current += 1;
                }
                b'/' if self.peek_next() == Some(b'/') => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.current += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn identifier(&mut self) -> Token {
        while self
            .peek()
            .is_some_and(|b| is_alpha(b) || b.is_ascii_digit())
        {
            self.current += 1;
        }
        self.make(keyword(&self.bytes[self.start..self.current]))
    }

    fn number(&mut self) -> Token {
        self.skip_digits();
        if self.peek() == Some(b'.') && self.peek_next().is_some_and(|b| b.is_ascii_digit()) {
            self.current += 1;
            self.skip_digits();
        }
        self.make(TokenKind::Number)
    }

    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.current += 1;
        }
    }

    fn string(&mut self) -> Token {
        loop {
            match self.advance() {
                None => return self.make(TokenKind::Error(ScanError::UnterminatedString)),
                Some(b'"') => return self.make(TokenKind::String),
                Some(b'\n') => self.line += 1,
                Some(_) => {}
            }
        }
    }
}

fn is_alpha(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

/// The keyword `text` spells, or [`TokenKind::Identifier`].
fn keyword(text: &[u8]) -> TokenKind {
    match text {
        b"and" => TokenKind::And,
        b"class" => TokenKind::Class,
        b"else" => TokenKind::Else,
        b"false" => TokenKind::False,
        b"for" => TokenKind::For,
        b"fun" => TokenKind::Fun,
        b"if" => TokenKind::If,
        b"nil" => TokenKind::Nil,
        b"or" => TokenKind::Or,
        b"print" => TokenKind::Print,
        b"return" => TokenKind::Return,
        b"super" => TokenKind::Super,
        b"this" => TokenKind::This,
        b"true" => TokenKind::True,
        b"var" => TokenKind::Var,
        b"while" => TokenKind::While,
        _ => TokenKind::Identifier,
    }
}
