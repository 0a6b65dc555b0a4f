use super::{ScanError, Scanner, Token, TokenKind};
use TokenKind as K;

/// Every token of `source` up to and including `Eof`.
fn scan(source: &str) -> Vec<Token> {
    let mut scanner = Scanner::new(source);
    let mut tokens = Vec::new();
    loop {
        let token = scanner.next_token();
        tokens.push(token);
        if token.kind == K::Eof {
            return tokens;
        }
    }
}

fn kinds(source: &str) -> Vec<TokenKind> {
    scan(source).into_iter().map(|t| t.kind).collect()
}

fn lexemes(source: &str) -> Vec<&str> {
    scan(source).into_iter().map(|t| t.lexeme(source)).collect()
}

#[test]
fn punctuation_and_operators() {
    assert_eq!(
        kinds("(){},.-+;/* ! != = == > >= < <="),
        [
            K::LeftParen,
            K::RightParen,
            K::LeftBrace,
            K::RightBrace,
            K::Comma,
            K::Dot,
            K::Minus,
            K::Plus,
            K::Semicolon,
            K::Slash,
            K::Star,
            K::Bang,
            K::BangEqual,
            K::Equal,
            K::EqualEqual,
            K::Greater,
            K::GreaterEqual,
            K::Less,
            K::LessEqual,
            K::Eof,
        ]
    );
}

#[test]
fn keywords_and_identifiers() {
    assert_eq!(
        kinds("and class else false for fun if nil or print return super this true var while"),
        [
            K::And,
            K::Class,
            K::Else,
            K::False,
            K::For,
            K::Fun,
            K::If,
            K::Nil,
            K::Or,
            K::Print,
            K::Return,
            K::Super,
            K::This,
            K::True,
            K::Var,
            K::While,
            K::Eof,
        ]
    );
    assert_eq!(
        kinds("andy classy f fo funny th thisx _ _a1 Var"),
        [K::Identifier; 10]
            .into_iter()
            .chain([K::Eof])
            .collect::<Vec<_>>()
    );
    assert_eq!(lexemes("foo_bar2 x"), ["foo_bar2", "x", ""]);
}

#[test]
fn numbers() {
    assert_eq!(lexemes("123 45.67 8."), ["123", "45.67", "8", ".", ""]);
    assert_eq!(kinds(".5"), [K::Dot, K::Number, K::Eof]);
    assert_eq!(kinds("1.2.3"), [K::Number, K::Dot, K::Number, K::Eof]);
}

#[test]
fn strings_keep_their_quotes_and_may_span_lines() {
    let source = "\"a\nb\" x";
    let tokens = scan(source);
    assert_eq!(tokens[0].kind, K::String);
    assert_eq!(tokens[0].lexeme(source), "\"a\nb\"");
    // A token's line is the line the scanner is on when it ends.
    assert_eq!(tokens[0].line, 2);
    assert_eq!(tokens[1].line, 2);
}

#[test]
fn unterminated_string_is_an_error_token_on_the_last_line() {
    let tokens = scan("\"abc\n\ndef");
    assert_eq!(tokens[0].kind, K::Error(ScanError::UnterminatedString));
    assert_eq!(tokens[0].line, 3);
    assert_eq!(tokens[1].kind, K::Eof);
}

#[test]
fn unexpected_characters_are_error_tokens_one_byte_each() {
    assert_eq!(
        kinds("a | b"),
        [
            K::Identifier,
            K::Error(ScanError::UnexpectedCharacter),
            K::Identifier,
            K::Eof
        ]
    );
    // "é" is two bytes in UTF-8; clox sees two unexpected characters.
    let source = "é";
    let tokens = scan(source);
    assert_eq!(tokens.len(), 3);
    assert!(
        tokens[..2]
            .iter()
            .all(|t| t.kind == K::Error(ScanError::UnexpectedCharacter))
    );
    assert_eq!(tokens[0].lexeme(source), "");
    assert_eq!(
        ScanError::UnexpectedCharacter.to_string(),
        "Unexpected character."
    );
    assert_eq!(
        ScanError::UnterminatedString.to_string(),
        "Unterminated string."
    );
}

#[test]
fn comments_and_whitespace_count_lines() {
    let source = "// one\n\t x // two\r\n\ny";
    let tokens = scan(source);
    assert_eq!(tokens.iter().map(|t| t.line).collect::<Vec<_>>(), [2, 4, 4]);
    assert_eq!(kinds("// only a comment"), [K::Eof]);
    assert_eq!(
        kinds("a / b"),
        [K::Identifier, K::Slash, K::Identifier, K::Eof]
    );
}

#[test]
fn a_nul_byte_ends_the_source() {
    assert_eq!(kinds("a\0b"), [K::Identifier, K::Eof]);
    assert_eq!(
        kinds("\"ab\0cd\""),
        [K::Error(ScanError::UnterminatedString), K::Eof]
    );
}

#[test]
fn eof_repeats() {
    let mut scanner = Scanner::new("x");
    scanner.next_token();
    assert_eq!(scanner.next_token().kind, K::Eof);
    assert_eq!(scanner.next_token().kind, K::Eof);
}
