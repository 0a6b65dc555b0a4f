//! Compile errors as data: what went wrong, where, and clox's wording.

use std::fmt;

use crate::scanner::ScanError;

/// What a compile error is about. [`ErrorKind::message`] is clox's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The scanner produced an error token.
    Scan(ScanError),
    /// "Expect expression."
    ExpectExpression,
    /// "Invalid assignment target."
    InvalidAssignmentTarget,
    /// "Too many constants in one chunk."
    TooManyConstants,
    /// "Too many local variables in function."
    TooManyLocals,
    /// "Too many closure variables in function."
    TooManyUpvalues,
    /// "Can't have more than 255 parameters."
    TooManyParameters,
    /// "Can't have more than 255 arguments."
    TooManyArguments,
    /// "Too much code to jump over."
    JumpTooLarge,
    /// "Loop body too large."
    LoopTooLarge,
    /// "Already a variable with this name in this scope."
    DuplicateLocal,
    /// "Can't read local variable in its own initializer."
    LocalInOwnInitializer,
    /// "Can't return from top-level code."
    ReturnFromTopLevel,
    /// "Can't return a value from an initializer."
    ReturnValueFromInitializer,
    /// "Can't use 'this' outside of a class."
    ThisOutsideClass,
    /// "A class can't inherit from itself."
    InheritFromSelf,
    /// "Can't use 'super' outside of a class."
    SuperOutsideClass,
    /// "Can't use 'super' in a class with no superclass."
    SuperWithoutSuperclass,
    /// "Expect ')' after expression."
    ExpectParenAfterExpression,
    /// "Expect ';' after value."
    ExpectSemicolonAfterValue,
    /// "Expect ';' after expression."
    ExpectSemicolonAfterExpression,
    /// "Expect ';' after variable declaration."
    ExpectSemicolonAfterVariable,
    /// "Expect variable name."
    ExpectVariableName,
    /// "Expect '}' after block."
    ExpectBraceAfterBlock,
    /// "Expect '(' after 'if'."
    ExpectParenAfterIf,
    /// "Expect ')' after condition."
    ExpectParenAfterCondition,
    /// "Expect '(' after 'while'."
    ExpectParenAfterWhile,
    /// "Expect '(' after 'for'."
    ExpectParenAfterFor,
    /// "Expect ';' after loop condition."
    ExpectSemicolonAfterLoopCondition,
    /// "Expect ')' after for clauses."
    ExpectParenAfterForClauses,
    /// "Expect function name."
    ExpectFunctionName,
    /// "Expect '(' after function name."
    ExpectParenAfterFunctionName,
    /// "Expect parameter name."
    ExpectParameterName,
    /// "Expect ')' after parameters."
    ExpectParenAfterParameters,
    /// "Expect '{' before function body."
    ExpectBraceBeforeFunctionBody,
    /// "Expect ')' after arguments."
    ExpectParenAfterArguments,
    /// "Expect ';' after return value."
    ExpectSemicolonAfterReturnValue,
    /// "Expect class name."
    ExpectClassName,
    /// "Expect superclass name."
    ExpectSuperclassName,
    /// "Expect '{' before class body."
    ExpectBraceBeforeClassBody,
    /// "Expect '}' after class body."
    ExpectBraceAfterClassBody,
    /// "Expect method name."
    ExpectMethodName,
    /// "Expect property name after '.'."
    ExpectPropertyName,
    /// "Expect '.' after 'super'."
    ExpectDotAfterSuper,
    /// "Expect superclass method name."
    ExpectSuperclassMethodName,
    /// "Too much nesting." (not clox's: clox recurses until its C stack
    /// overflows; this compiler stops at [`MAX_NESTING`](super::MAX_NESTING)
    /// nested expressions and statements).
    TooMuchNesting,
}

impl ErrorKind {
    /// clox's message for this error.
    pub fn message(self) -> &'static str {
        use ErrorKind::*;
        match self {
            Scan(error) => error.message(),
            ExpectExpression => "Expect expression.",
            TooMuchNesting => "Too much nesting.",
            InvalidAssignmentTarget => "Invalid assignment target.",
            TooManyConstants => "Too many constants in one chunk.",
            TooManyLocals => "Too many local variables in function.",
            TooManyUpvalues => "Too many closure variables in function.",
            TooManyParameters => "Can't have more than 255 parameters.",
            TooManyArguments => "Can't have more than 255 arguments.",
            JumpTooLarge => "Too much code to jump over.",
            LoopTooLarge => "Loop body too large.",
            DuplicateLocal => "Already a variable with this name in this scope.",
            LocalInOwnInitializer => "Can't read local variable in its own initializer.",
            ReturnFromTopLevel => "Can't return from top-level code.",
            ReturnValueFromInitializer => "Can't return a value from an initializer.",
            ThisOutsideClass => "Can't use 'this' outside of a class.",
            InheritFromSelf => "A class can't inherit from itself.",
            SuperOutsideClass => "Can't use 'super' outside of a class.",
            SuperWithoutSuperclass => "Can't use 'super' in a class with no superclass.",
            ExpectParenAfterExpression => "Expect ')' after expression.",
            ExpectSemicolonAfterValue => "Expect ';' after value.",
            ExpectSemicolonAfterExpression => "Expect ';' after expression.",
            ExpectSemicolonAfterVariable => "Expect ';' after variable declaration.",
            ExpectVariableName => "Expect variable name.",
            ExpectBraceAfterBlock => "Expect '}' after block.",
            ExpectParenAfterIf => "Expect '(' after 'if'.",
            ExpectParenAfterCondition => "Expect ')' after condition.",
            ExpectParenAfterWhile => "Expect '(' after 'while'.",
            ExpectParenAfterFor => "Expect '(' after 'for'.",
            ExpectSemicolonAfterLoopCondition => "Expect ';' after loop condition.",
            ExpectParenAfterForClauses => "Expect ')' after for clauses.",
            ExpectFunctionName => "Expect function name.",
            ExpectParenAfterFunctionName => "Expect '(' after function name.",
            ExpectParameterName => "Expect parameter name.",
            ExpectParenAfterParameters => "Expect ')' after parameters.",
            ExpectBraceBeforeFunctionBody => "Expect '{' before function body.",
            ExpectParenAfterArguments => "Expect ')' after arguments.",
            ExpectSemicolonAfterReturnValue => "Expect ';' after return value.",
            ExpectClassName => "Expect class name.",
            ExpectSuperclassName => "Expect superclass name.",
            ExpectBraceBeforeClassBody => "Expect '{' before class body.",
            ExpectBraceAfterClassBody => "Expect '}' after class body.",
            ExpectMethodName => "Expect method name.",
            ExpectPropertyName => "Expect property name after '.'.",
            ExpectDotAfterSuper => "Expect '.' after 'super'.",
            ExpectSuperclassMethodName => "Expect superclass method name.",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Where on its line an error is reported.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorLocation {
    /// At a token, whose lexeme is quoted: `Error at 'x'`.
    Token(Box<str>),
    /// At the end of the source: `Error at end`.
    End,
    /// At an error token from the scanner: no location, `Error`.
    Scanner,
}

/// One compile error. `Display` is the line clox prints on stderr, e.g.
/// `[line 3] Error at 'x': Expect ';' after value.`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileError {
    /// The 1-based source line of the token the error is reported at.
    pub line: u32,
    /// Where on the line.
    pub location: ErrorLocation,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[line {}] Error", self.line)?;
        match &self.location {
            ErrorLocation::Token(lexeme) => write!(f, " at '{lexeme}'")?,
            ErrorLocation::End => f.write_str(" at end")?,
            ErrorLocation::Scanner => {}
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for CompileError {}

/// Every error a failed compilation reported, in source order (never empty).
/// `Display` is one [`CompileError`] line per error, as clox prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileErrors(Vec<CompileError>);

impl CompileErrors {
    /// Wraps the errors of a failed compilation.
    pub(crate) fn new(errors: Vec<CompileError>) -> Self {
        Self(errors)
    }

    /// The errors, in the order they were reported.
    pub fn errors(&self) -> &[CompileError] {
        &self.0
    }

    /// The errors, owned.
    pub fn into_vec(self) -> Vec<CompileError> {
        self.0
    }
}

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileErrors {}

impl<'a> IntoIterator for &'a CompileErrors {
    type Item = &'a CompileError;
    type IntoIter = std::slice::Iter<'a, CompileError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
