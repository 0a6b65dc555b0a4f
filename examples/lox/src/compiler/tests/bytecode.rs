//! What the compiler emits for small programs.

use super::{code, nested, script, script_code};
use crate::bytecode::{Constant, FunctionKind, UpvalueDesc};

#[test]
fn arithmetic_follows_precedence_and_associativity() {
    assert_eq!(
        script_code("print 1 + 2 * 3 - -4 / 5;"),
        [
            "CONSTANT 1",
            "CONSTANT 2",
            "CONSTANT 3",
            "MULTIPLY",
            "ADD",
            "CONSTANT 4",
            "NEGATE",
            "CONSTANT 5",
            "DIVIDE",
            "SUBTRACT",
            "PRINT",
            "NIL",
            "RETURN",
        ]
    );
    assert_eq!(
        script_code("print (1 + 2) * 3;"),
        [
            "CONSTANT 1",
            "CONSTANT 2",
            "ADD",
            "CONSTANT 3",
            "MULTIPLY",
            "PRINT",
            "NIL",
            "RETURN"
        ]
    );
}

#[test]
fn comparisons_without_their_own_opcode_are_negated() {
    assert_eq!(
        script_code("1 != 2; 1 >= 2; 1 <= 2; !true == false;"),
        [
            "CONSTANT 1",
            "CONSTANT 2",
            "EQUAL",
            "NOT",
            "POP",
            "CONSTANT 1",
            "CONSTANT 2",
            "LESS",
            "NOT",
            "POP",
            "CONSTANT 1",
            "CONSTANT 2",
            "GREATER",
            "NOT",
            "POP",
            "TRUE",
            "NOT",
            "FALSE",
            "EQUAL",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn logical_operators_short_circuit() {
    assert_eq!(
        script_code("a and b;"),
        [
            "GET_GLOBAL 'a'",
            "JUMP_IF_FALSE -> 8",
            "POP",
            "GET_GLOBAL 'b'",
            "POP",
            "NIL",
            "RETURN"
        ]
    );
    assert_eq!(
        script_code("a or b;"),
        [
            "GET_GLOBAL 'a'",
            "JUMP_IF_FALSE -> 8",
            "JUMP -> 11",
            "POP",
            "GET_GLOBAL 'b'",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn globals_get_one_name_constant_per_use() {
    let script = script("var a = \"x\"; a = a; print a;");
    assert_eq!(
        code(&script),
        [
            "CONSTANT 'x'",
            "DEFINE_GLOBAL 'a'",
            "GET_GLOBAL 'a'",
            "SET_GLOBAL 'a'",
            "POP",
            "GET_GLOBAL 'a'",
            "PRINT",
            "NIL",
            "RETURN",
        ]
    );
    // Index 0 is the name for DEFINE_GLOBAL (parsed before the initializer).
    assert_eq!(script.chunk.constants.len(), 5);
}

#[test]
fn literal_constants_are_not_deduplicated() {
    let script = script("1; 1; \"s\"; \"s\";");
    assert_eq!(script.chunk.constants.len(), 4);
    // The two "s" share one allocation.
    let (Constant::String(a), Constant::String(b)) =
        (&script.chunk.constants[2], &script.chunk.constants[3])
    else {
        panic!("string constants expected");
    };
    assert!(std::rc::Rc::ptr_eq(a, b));
}

#[test]
fn locals_live_in_slots_and_are_popped_at_scope_end() {
    assert_eq!(
        script_code("{ var a = 1; { var b = a; b = 2; } print a; }"),
        [
            "CONSTANT 1",
            "GET_LOCAL 1",
            "CONSTANT 2",
            "SET_LOCAL 2",
            "POP",
            "POP",
            "GET_LOCAL 1",
            "PRINT",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn if_else_jumps() {
    assert_eq!(
        script_code("if (true) print 1; else print 2;"),
        [
            "TRUE",
            "JUMP_IF_FALSE -> 11",
            "POP",
            "CONSTANT 1",
            "PRINT",
            "JUMP -> 15",
            "POP",
            "CONSTANT 2",
            "PRINT",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn while_loops_back_to_the_condition() {
    assert_eq!(
        script_code("while (x) print 1;"),
        [
            "GET_GLOBAL 'x'",
            "JUMP_IF_FALSE -> 12",
            "POP",
            "CONSTANT 1",
            "PRINT",
            "LOOP -> 0",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn for_runs_the_increment_after_the_body() {
    assert_eq!(
        script_code("for (var i = 0; i < 3; i = i + 1) print i;"),
        [
            // 0: initializer; 2: condition; 14: increment; 25: body.
            "CONSTANT 0",
            "GET_LOCAL 1",
            "CONSTANT 3",
            "LESS",
            "JUMP_IF_FALSE -> 31",
            "POP",
            "JUMP -> 25",
            "GET_LOCAL 1",
            "CONSTANT 1",
            "ADD",
            "SET_LOCAL 1",
            "POP",
            "LOOP -> 2",
            "GET_LOCAL 1",
            "PRINT",
            "LOOP -> 14",
            "POP",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
    assert_eq!(
        script_code("for (;;) print 1;"),
        ["CONSTANT 1", "PRINT", "LOOP -> 0", "NIL", "RETURN"]
    );
}

#[test]
fn functions_are_closures_of_prototypes() {
    let script = script("fun add(a, b) { return a + b; } print add(1, 2);");
    assert_eq!(
        code(&script),
        [
            "CLOSURE <fn add>",
            "DEFINE_GLOBAL 'add'",
            "GET_GLOBAL 'add'",
            "CONSTANT 1",
            "CONSTANT 2",
            "CALL 2",
            "PRINT",
            "NIL",
            "RETURN",
        ]
    );
    let add = nested(&script, 0);
    assert_eq!(add.name.as_deref(), Some("add"));
    assert_eq!(add.kind, FunctionKind::Function);
    assert_eq!(add.arity, 2);
    assert_eq!(
        code(add),
        [
            "GET_LOCAL 1",
            "GET_LOCAL 2",
            "ADD",
            "RETURN",
            "NIL",
            "RETURN"
        ]
    );
    assert_eq!(script.name, None);
    assert_eq!(script.kind, FunctionKind::Script);
}

#[test]
fn closures_capture_locals_and_upvalues() {
    let script = script(
        "fun outer() { var x = 1; fun middle() { fun inner() { return x; } return inner; } \
         return middle; }",
    );
    let outer = nested(&script, 0);
    assert_eq!(
        code(outer),
        [
            "CONSTANT 1",
            "CLOSURE <fn middle> local 1",
            "GET_LOCAL 2",
            "RETURN",
            "NIL",
            "RETURN"
        ]
    );
    let middle = nested(outer, 0);
    assert_eq!(middle.upvalues, [UpvalueDesc::Local(1)]);
    assert_eq!(code(middle)[0], "CLOSURE <fn inner> upvalue 0");
    let inner = nested(middle, 0);
    assert_eq!(inner.upvalues, [UpvalueDesc::Upvalue(0)]);
    assert_eq!(code(inner), ["GET_UPVALUE 0", "RETURN", "NIL", "RETURN"]);
}

#[test]
fn captured_locals_are_closed_at_scope_end() {
    assert_eq!(
        script_code("{ var a = 1; var b = 2; fun f() { a = 3; } }"),
        [
            "CONSTANT 1",
            "CONSTANT 2",
            "CLOSURE <fn f> local 1",
            "POP",
            "POP",
            "CLOSE_UPVALUE",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn classes_methods_and_invocations() {
    let script = script("class A { init(x) { this.x = x; } get() { return this.x; } } A(1).get();");
    assert_eq!(
        code(&script),
        [
            "CLASS 'A'",
            "DEFINE_GLOBAL 'A'",
            "GET_GLOBAL 'A'",
            "CLOSURE <fn init>",
            "METHOD 'init'",
            "CLOSURE <fn get>",
            "METHOD 'get'",
            "POP",
            "GET_GLOBAL 'A'",
            "CONSTANT 1",
            "CALL 1",
            "INVOKE 'get' 0",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
    let init = nested(&script, 0);
    assert_eq!(init.kind, FunctionKind::Initializer);
    assert_eq!(
        code(init),
        [
            "GET_LOCAL 0",
            "GET_LOCAL 1",
            "SET_PROPERTY 'x'",
            "POP",
            "GET_LOCAL 0",
            "RETURN"
        ]
    );
    let get = nested(&script, 1);
    assert_eq!(get.kind, FunctionKind::Method);
    assert_eq!(
        code(get),
        ["GET_LOCAL 0", "GET_PROPERTY 'x'", "RETURN", "NIL", "RETURN"]
    );
}

/// The fields a function sets on `this` itself, each counted once: not
/// those set on another object, nor on a field of `this`, nor a field only
/// read.
#[test]
fn a_function_counts_the_fields_it_sets_on_this() {
    let script = script(
        "class A { init(o) { this.a = 1; this.b = this.a; (this).c = 2; this.a = 3; \
         o.d = 4; this.e.f = 5; print this.g; fun inner() { this.h = 6; } } }",
    );
    let init = nested(&script, 0);
    assert_eq!(init.this_fields, 3, "a, b and c");
    assert_eq!(nested(init, 0).this_fields, 1, "h, through an upvalue");
    assert_eq!(script.this_fields, 0);
}

#[test]
fn a_bare_return_in_an_initializer_returns_this() {
    let script = script("class A { init() { return; } }");
    assert_eq!(
        code(nested(&script, 0)),
        ["GET_LOCAL 0", "RETURN", "GET_LOCAL 0", "RETURN"]
    );
}

#[test]
fn inheritance_and_super() {
    let script = script("class A {} class B < A { f() { super.f(1); return super.g; } }");
    assert_eq!(
        code(&script),
        [
            "CLASS 'A'",
            "DEFINE_GLOBAL 'A'",
            "GET_GLOBAL 'A'",
            "POP",
            "CLASS 'B'",
            "DEFINE_GLOBAL 'B'",
            "GET_GLOBAL 'A'",
            "GET_GLOBAL 'B'",
            "INHERIT",
            "GET_GLOBAL 'B'",
            "CLOSURE <fn f> local 1",
            "METHOD 'f'",
            "POP",
            "CLOSE_UPVALUE",
            "NIL",
            "RETURN",
        ]
    );
    let f = nested(&script, 0);
    assert_eq!(
        code(f),
        [
            "GET_LOCAL 0",
            "CONSTANT 1",
            "GET_UPVALUE 0",
            "SUPER_INVOKE 'f' 1",
            "POP",
            "GET_LOCAL 0",
            "GET_UPVALUE 0",
            "GET_SUPER 'g'",
            "RETURN",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn this_inside_a_nested_function_is_an_upvalue() {
    let script = script("class A { m() { fun f() { return this; } } }");
    let m = nested(&script, 0);
    assert_eq!(code(m)[0], "CLOSURE <fn f> local 0");
    assert_eq!(code(nested(m, 0))[0], "GET_UPVALUE 0");
}

#[test]
fn property_get_set_and_call_on_a_field() {
    assert_eq!(
        script_code("a.b.c = 1; a.f(2)(3);"),
        [
            "GET_GLOBAL 'a'",
            "GET_PROPERTY 'b'",
            "CONSTANT 1",
            "SET_PROPERTY 'c'",
            "POP",
            "GET_GLOBAL 'a'",
            "CONSTANT 2",
            "INVOKE 'f' 1",
            "CONSTANT 3",
            "CALL 1",
            "POP",
            "NIL",
            "RETURN",
        ]
    );
}

#[test]
fn every_byte_has_its_line() {
    let script = script("var a =\n1;\n\nprint\na;");
    let lines: Vec<u32> = (0..script.chunk.code.len())
        .map(|offset| script.chunk.lines.line_of(offset))
        .collect();
    // CONSTANT 1 (line 2), DEFINE_GLOBAL (2), GET_GLOBAL a (5), PRINT (5), NIL RETURN (5).
    assert_eq!(lines, [2, 2, 2, 2, 5, 5, 5, 5, 5]);
    assert_eq!(script.chunk.lines.runs(), 2);
}
