//! Tokens: their kinds, where their lexemes lie in the source, their lines.

use std::fmt;

/// What a token is. The set is clox's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// `(`
    LeftParen,
    /// `)`
    RightParen,
    /// `{`
    LeftBrace,
    /// `}`
    RightBrace,
    /// `,`
    Comma,
    /// `.`
    Dot,
    /// `-`
    Minus,
    /// `+`
    Plus,
    /// `;`
    Semicolon,
    /// `/`
    Slash,
    /// `*`
    Star,
    /// `!`
    Bang,
    /// `!=`
    BangEqual,
    /// `=`
    Equal,
    /// `==`
    EqualEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterEqual,
    /// `<`
    Less,
    /// `<=`
    LessEqual,
    /// A name that is not a keyword.
    Identifier,
    /// A string literal; the lexeme includes both quotes.
    String,
    /// A number literal: digits, optionally `.` and more digits.
    Number,
    /// `and`
    And,
    /// `class`
    Class,
    /// `else`
    Else,
    /// `false`
    False,
    /// `for`
    For,
    /// `fun`
    Fun,
    /// `if`
    If,
    /// `nil`
    Nil,
    /// `or`
    Or,
    /// `print`
    Print,
    /// `return`
    Return,
    /// `super`
    Super,
    /// `this`
    This,
    /// `true`
    True,
    /// `var`
    Var,
    /// `while`
    While,
    /// Text the scanner could not turn into a token; the compiler reports it.
    Error(ScanError),
    /// The end of the source (or its first NUL byte, as in clox).
    Eof,
}

/// Why the scanner produced an error token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScanError {
    /// A byte that starts no token.
    UnexpectedCharacter,
    /// A `"` with no closing `"` before the end of the source.
    UnterminatedString,
}

impl ScanError {
    /// clox's message for this error.
    pub fn message(self) -> &'static str {
        match self {
            Self::UnexpectedCharacter => "Unexpected character.",
            Self::UnterminatedString => "Unterminated string.",
        }
    }
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ScanError {}

/// One token: its kind, the byte range of its lexeme in the source, and the
/// line the scanner was on when the token ended (for a string spanning lines,
/// its last line, as clox reports it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// What the token is.
    pub kind: TokenKind,
    /// Byte offset of the lexeme's first byte.
    pub start: u32,
    /// Byte offset just past the lexeme.
    pub end: u32,
    /// 1-based source line.
    pub line: u32,
}

impl Token {
    /// The token's text in `source` (the source it was scanned from).
    ///
    /// An error token for an unexpected byte inside a multi-byte UTF-8
    /// character has no text of its own and returns `""`.
    pub fn lexeme<'src>(&self, source: &'src str) -> &'src str {
        source
            .get(self.start as usize..self.end as usize)
            .unwrap_or("")
    }
}
