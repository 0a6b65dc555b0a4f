//! The REPL, driven through stdin: each line runs on the same VM (globals
//! stay), errors are reported and the loop goes on, the end of the input
//! ends it with status 0.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::text;

#[test]
fn the_repl_keeps_its_globals_and_survives_errors() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lox"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lox runs");
    let input = "var a = 1;\nprint a;\nprint b;\nfun f() { return a + 1; }\nprint f();\n\
                 print 1 +;\nclass A {}\nprint A();\n";
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("lox reads its input");
    let output = child
        .wait_with_output()
        .expect("lox ends at the end of its input");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        text(&output.stdout),
        "> > 1\n> > > 2\n> > > A instance\n> \n"
    );
    assert_eq!(
        text(&output.stderr),
        "Undefined variable 'b'.\n[line 1] in script\n[line 1] Error at ';': Expect expression.\n"
    );
}

#[test]
fn the_repl_collects_at_every_allocation_too() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lox"))
        .arg("--gc-stress")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lox runs");
    let input = "var s = \"a\";\nfor (var i = 0; i < 20; i = i + 1) s = s + \"b\";\n\
                 fun greet(x) { return \"hi \" + x; }\nprint greet(s);\n";
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("lox reads its input");
    let output = child
        .wait_with_output()
        .expect("lox ends at the end of its input");
    assert_eq!(text(&output.stderr), "");
    assert_eq!(
        text(&output.stdout),
        format!("> > > > hi a{}\n> \n", "b".repeat(20))
    );
}

#[test]
fn a_closure_that_escaped_an_error_keeps_its_variable() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lox"))
        .arg("--gc-stress")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lox runs");
    // `x` is still captured by an open upvalue when `nil()` fails; the
    // next lines reuse its stack word.
    let input = "var f;\n{ var x = \"kept\"; fun g() { return x; } f = g; nil(); }\n\
                 { var a = 1; var b = 2; var c = 3; print f(); }\n";
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("lox reads its input");
    let output = child
        .wait_with_output()
        .expect("lox ends at the end of its input");
    assert_eq!(
        text(&output.stderr),
        "Can only call functions and classes.\n[line 1] in script\n"
    );
    assert_eq!(text(&output.stdout), "> > > kept\n> \n");
}
