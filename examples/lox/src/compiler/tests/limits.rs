//! clox's limits trip on the same programs, with the same errors (the
//! expected lines are what clox prints for these generated programs).

use super::{errors, script};

fn repeat(count: usize, item: impl Fn(usize) -> String, separator: &str) -> String {
    (0..count).map(item).collect::<Vec<_>>().join(separator)
}

#[test]
fn constant_256_is_one_too_many() {
    let body = repeat(256, |i| format!("{i};"), " ");
    script(&format!("fun f() {{ {body} }}"));
    assert_eq!(
        errors(&format!("fun f() {{ {body} \"oops\"; }}")),
        ["[line 1] Error at '\"oops\"': Too many constants in one chunk."]
    );
}

#[test]
fn every_global_use_takes_a_constant() {
    script(&"a;".repeat(256));
    assert_eq!(
        errors(&"a;".repeat(257)),
        ["[line 1] Error at 'a': Too many constants in one chunk."]
    );
}

#[test]
fn local_256_is_one_too_many() {
    // Slot 0 is reserved, so 255 declared locals fill the frame.
    script(&format!(
        "fun f() {{ {} }}",
        repeat(255, |i| format!("var a{i};"), " ")
    ));
    assert_eq!(
        errors(&format!(
            "fun f() {{ {} }}",
            repeat(256, |i| format!("var a{i};"), " ")
        )),
        ["[line 1] Error at 'a255': Too many local variables in function."]
    );
}

#[test]
fn upvalue_257_is_one_too_many_each_time() {
    let a = repeat(200, |i| format!("var a{i};"), " ");
    let b = repeat(200, |i| format!("var b{i};"), " ");
    let uses =
        repeat(200, |i| format!("a{i};"), " ") + " " + &repeat(200, |i| format!("b{i};"), " ");
    let found = errors(&format!(
        "fun f() {{ {a} fun g() {{ {b} fun h() {{ {uses} }} }} }}"
    ));
    // Each statement fails on its own: recovery ends at every `;`.
    let expected: Vec<String> = (56..200)
        .map(|i| format!("[line 1] Error at 'b{i}': Too many closure variables in function."))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn parameter_256_is_one_too_many() {
    script(&format!(
        "fun f({}) {{}}",
        repeat(255, |i| format!("a{i}"), ", ")
    ));
    assert_eq!(
        errors(&format!(
            "fun f({}) {{}}",
            repeat(256, |i| format!("a{i}"), ", ")
        )),
        ["[line 1] Error at 'a255': Can't have more than 255 parameters."]
    );
}

#[test]
fn argument_256_is_one_too_many() {
    script(&format!("f({});", repeat(255, |_| "nil".into(), ", ")));
    assert_eq!(
        errors(&format!("f({});", repeat(256, |_| "nil".into(), ", "))),
        ["[line 1] Error at 'nil': Can't have more than 255 arguments."]
    );
}

#[test]
fn a_jump_over_65535_bytes_is_too_far() {
    // `nil;` is two bytes: NIL, POP.
    script(&format!("if (true) {{ {} }}", "nil; ".repeat(32_760)));
    assert_eq!(
        errors(&format!("if (true) {{ {} }}", "nil; ".repeat(33_000))),
        ["[line 1] Error at '}': Too much code to jump over."]
    );
}

#[test]
fn a_loop_over_65535_bytes_is_too_far() {
    script(&format!("while (true) {{ {} }}", "nil; ".repeat(32_760)));
    assert_eq!(
        errors(&format!("while (true) {{ {} }}", "nil; ".repeat(33_000))),
        ["[line 1] Error at '}': Loop body too large."]
    );
}
