//! Every compile-error message, each from a program whose errors (all of them,
//! after panic-mode recovery) are what clox prints for it.

use super::errors;

#[test]
fn unexpected_character() {
    assert_eq!(
        errors("print 1 | 2;"),
        ["[line 1] Error: Unexpected character."]
    );
}

#[test]
fn unterminated_string() {
    assert_eq!(
        errors("print \"abc"),
        ["[line 1] Error: Unterminated string."]
    );
}

#[test]
fn expect_expression() {
    assert_eq!(
        errors("print;"),
        ["[line 1] Error at ';': Expect expression."]
    );
}

#[test]
fn invalid_assignment_target() {
    assert_eq!(
        errors("a + b = c;"),
        ["[line 1] Error at '=': Invalid assignment target."]
    );
}

#[test]
fn duplicate_local() {
    assert_eq!(
        errors("{ var a = 1; var a = 2; }"),
        ["[line 1] Error at 'a': Already a variable with this name in this scope."]
    );
}

#[test]
fn local_in_own_initializer() {
    assert_eq!(
        errors("{ var a = a; }"),
        ["[line 1] Error at 'a': Can't read local variable in its own initializer."]
    );
}

#[test]
fn return_from_top_level() {
    assert_eq!(
        errors("return 1;"),
        ["[line 1] Error at 'return': Can't return from top-level code."]
    );
}

#[test]
fn return_value_from_initializer() {
    assert_eq!(
        errors("class A { init() { return 1; } }"),
        ["[line 1] Error at 'return': Can't return a value from an initializer."]
    );
}

#[test]
fn this_outside_class() {
    assert_eq!(
        errors("print this;"),
        ["[line 1] Error at 'this': Can't use 'this' outside of a class."]
    );
}

#[test]
fn inherit_from_self() {
    assert_eq!(
        errors("class A < A {}"),
        ["[line 1] Error at 'A': A class can't inherit from itself."]
    );
}

#[test]
fn super_outside_class() {
    assert_eq!(
        errors("super.x;"),
        ["[line 1] Error at 'super': Can't use 'super' outside of a class."]
    );
}

#[test]
fn super_without_superclass() {
    assert_eq!(
        errors("class A { f() { super.f(); } }"),
        ["[line 1] Error at 'super': Can't use 'super' in a class with no superclass."]
    );
}

#[test]
fn paren_after_expression() {
    assert_eq!(
        errors("print (1;"),
        ["[line 1] Error at ';': Expect ')' after expression."]
    );
}

#[test]
fn semicolon_after_value() {
    assert_eq!(
        errors("print 1"),
        ["[line 1] Error at end: Expect ';' after value."]
    );
}

#[test]
fn semicolon_after_expression() {
    assert_eq!(
        errors("1 + 2"),
        ["[line 1] Error at end: Expect ';' after expression."]
    );
}

#[test]
fn semicolon_after_variable() {
    assert_eq!(
        errors("var a = 1"),
        ["[line 1] Error at end: Expect ';' after variable declaration."]
    );
}

#[test]
fn variable_name() {
    assert_eq!(
        errors("var 1 = 2;"),
        ["[line 1] Error at '1': Expect variable name."]
    );
}

#[test]
fn brace_after_block() {
    assert_eq!(
        errors("{ print 1;"),
        ["[line 1] Error at end: Expect '}' after block."]
    );
}

#[test]
fn paren_after_if() {
    assert_eq!(
        errors("if 1) print 1;"),
        ["[line 1] Error at '1': Expect '(' after 'if'."]
    );
}

#[test]
fn paren_after_condition() {
    assert_eq!(
        errors("if (1 print 1;"),
        ["[line 1] Error at 'print': Expect ')' after condition."]
    );
}

#[test]
fn paren_after_while() {
    assert_eq!(
        errors("while 1) print 1;"),
        ["[line 1] Error at '1': Expect '(' after 'while'."]
    );
}

#[test]
fn paren_after_for() {
    assert_eq!(
        errors("for i = 0;;) {}"),
        ["[line 1] Error at 'i': Expect '(' after 'for'."]
    );
}

#[test]
fn semicolon_after_loop_condition() {
    assert_eq!(
        errors("for (;1 print 1;) {}"),
        [
            "[line 1] Error at 'print': Expect ';' after loop condition.",
            "[line 1] Error at ')': Expect expression."
        ]
    );
}

#[test]
fn paren_after_for_clauses() {
    assert_eq!(
        errors("for (;; 1 print 1;) {}"),
        [
            "[line 1] Error at 'print': Expect ')' after for clauses.",
            "[line 1] Error at ')': Expect expression."
        ]
    );
}

#[test]
fn function_name() {
    assert_eq!(
        errors("fun () {}"),
        ["[line 1] Error at '(': Expect function name."]
    );
}

#[test]
fn paren_after_function_name() {
    assert_eq!(
        errors("fun f {}"),
        ["[line 1] Error at '{': Expect '(' after function name."]
    );
}

#[test]
fn parameter_name() {
    assert_eq!(
        errors("fun f(1) {}"),
        [
            "[line 1] Error at '1': Expect parameter name.",
            "[line 1] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn paren_after_parameters() {
    assert_eq!(
        errors("fun f(a {}"),
        ["[line 1] Error at '{': Expect ')' after parameters."]
    );
}

#[test]
fn brace_before_function_body() {
    assert_eq!(
        errors("fun f() print 1;"),
        [
            "[line 1] Error at 'print': Expect '{' before function body.",
            "[line 1] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn paren_after_arguments() {
    assert_eq!(
        errors("f(1, 2;"),
        ["[line 1] Error at ';': Expect ')' after arguments."]
    );
}

#[test]
fn semicolon_after_return_value() {
    assert_eq!(
        errors("fun f() { return 1 }"),
        [
            "[line 1] Error at '}': Expect ';' after return value.",
            "[line 1] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn class_name() {
    assert_eq!(
        errors("class {}"),
        ["[line 1] Error at '{': Expect class name."]
    );
}

#[test]
fn superclass_name() {
    assert_eq!(
        errors("class A < {}"),
        ["[line 1] Error at '{': Expect superclass name."]
    );
}

#[test]
fn brace_before_class_body() {
    assert_eq!(
        errors("class A print 1;"),
        [
            "[line 1] Error at 'print': Expect '{' before class body.",
            "[line 1] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn brace_after_class_body() {
    assert_eq!(
        errors("class A { f() {}"),
        ["[line 1] Error at end: Expect '}' after class body."]
    );
}

#[test]
fn method_name() {
    assert_eq!(
        errors("class A { 1 }"),
        [
            "[line 1] Error at '1': Expect method name.",
            "[line 1] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn property_name() {
    assert_eq!(
        errors("a.1;"),
        ["[line 1] Error at '1': Expect property name after '.'."]
    );
}

#[test]
fn dot_after_super() {
    assert_eq!(
        errors("class A < B { f() { super 1; } }"),
        ["[line 1] Error at '1': Expect '.' after 'super'."]
    );
}

#[test]
fn superclass_method_name() {
    assert_eq!(
        errors("class A < B { f() { super.1; } }"),
        ["[line 1] Error at '1': Expect superclass method name."]
    );
}

#[test]
fn synchronizes_at_statements() {
    assert_eq!(
        errors("print 1;\nprint 2 print 3;\nvar x = ;\nprint 4;"),
        [
            "[line 2] Error at 'print': Expect ';' after value.",
            "[line 3] Error at ';': Expect expression."
        ]
    );
}

#[test]
fn synchronizes_inside_functions() {
    assert_eq!(
        errors("fun f() {\n  print 1\n}\nvar = 3;"),
        [
            "[line 3] Error at '}': Expect ';' after value.",
            "[line 4] Error at '=': Expect variable name.",
            "[line 4] Error at end: Expect '}' after block."
        ]
    );
}

#[test]
fn too_much_nesting_is_an_error_not_a_stack_overflow() {
    // A debug build's frames: give the compiler the stack `lox` gives it.
    let deep = |source: String| {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || errors(&source))
            .unwrap()
            .join()
            .unwrap()
    };
    let parens = format!("print {}1{};", "(".repeat(20_000), ")".repeat(20_000));
    assert_eq!(deep(parens), ["[line 1] Error at '(': Too much nesting."]);
    let functions = format!("{}{}", "fun f() {".repeat(20_000), "}".repeat(20_000));
    assert_eq!(
        deep(functions),
        ["[line 1] Error at 'fun': Too much nesting."]
    );
    let fine = format!("print {}1{};", "(".repeat(5_000), ")".repeat(5_000));
    let compiled = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || crate::compile(&fine).is_ok())
        .unwrap()
        .join()
        .unwrap();
    assert!(compiled);
}
