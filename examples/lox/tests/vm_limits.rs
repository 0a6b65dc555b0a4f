//! Bad input never crashes, hangs or corrupts the VM: runaway recursion,
//! strings of hundreds of MiB, a heap filled with live objects, thousands
//! of classes, and allocation-heavy programs collected at every allocation
//! in the smallest heap the runtime allows.

mod common;

use common::{run_lox, text};

#[test]
fn runaway_recursion_is_clox_stack_overflow() {
    let output = run_lox(
        "limits_recursion.lox",
        "fun f(n) {\n  return f(n + 1);\n}\nf(0);\n",
        &[],
    );
    assert_eq!(output.status.code(), Some(70));
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "Stack overflow.");
    // clox's 64 frames: the script and 63 calls of f.
    assert_eq!(lines.len(), 1 + 64, "{stderr}");
    assert!(
        lines[1..64].iter().all(|l| *l == "[line 2] in f()"),
        "{stderr}"
    );
    assert_eq!(lines[64], "[line 4] in script");
}

#[test]
fn recursion_just_under_the_limit_runs() {
    let source = "fun down(n) { if (n == 0) return 0; return 1 + down(n - 1); }\nprint down(62);\n";
    let output = run_lox("limits_deep.lox", source, &["--gc-stress"]);
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "62\n");
}

#[test]
fn a_string_doubled_until_the_heap_is_full_is_an_out_of_memory_error() {
    let source = "var s = \"0123456789abcdef\";\nwhile (true) s = s + s;\n";
    for args in [&["--heap-max", "16"][..], &[]] {
        let output = run_lox("limits_string.lox", source, args);
        assert_eq!(output.status.code(), Some(70), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.starts_with("Out of memory: "), "{args:?}: {stderr}");
        assert!(
            stderr.ends_with("[line 2] in script\n"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_heap_full_of_live_objects_is_an_out_of_memory_error() {
    let source = "class Node { init(next) { this.next = next; } }\n\
                  var head = nil;\n\
                  while (true) head = Node(head);\n";
    let output = run_lox("limits_live.lox", source, &["--heap-max", "16"]);
    assert_eq!(output.status.code(), Some(70));
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("Out of memory: "), "{stderr}");
    assert!(stderr.contains("[line 3] in script"), "{stderr}");
}

#[test]
fn thousands_of_classes_and_their_instances() {
    let source = "var sum = 0;\n\
                  for (var i = 0; i < 3000; i = i + 1) {\n\
                    class C { init(x) { this.x = x; } get() { return this.x; } }\n\
                    class D < C { get() { return super.get() + 1; } }\n\
                    sum = sum + D(i).get();\n\
                  }\n\
                  print sum;\n";
    let output = run_lox("limits_classes.lox", source, &[]);
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "4.5015e+06\n");
}

#[test]
fn allocation_heavy_code_collected_at_every_allocation_in_the_smallest_heap() {
    let source = "class Node { init(l, r) { this.l = l; this.r = r; } \
                    count() { if (this.l == nil) return 1; return 1 + this.l.count() + this.r.count(); } }\n\
                  fun grow(d) { if (d == 0) return Node(nil, nil); return Node(grow(d - 1), grow(d - 1)); }\n\
                  var keep = grow(6);\n\
                  var total = 0;\n\
                  for (var i = 0; i < 20; i = i + 1) total = total + grow(4).count();\n\
                  fun adder(n) { fun add(x) { return x + n; } return add; }\n\
                  var s = \"\";\n\
                  for (var i = 0; i < 50; i = i + 1) { s = s + \"x\"; total = total + adder(i)(1); }\n\
                  print total;\n\
                  print keep.count();\n";
    let output = run_lox(
        "limits_stress.lox",
        source,
        &["--gc-stress", "--heap-max", "16"],
    );
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "1895\n127\n");
}

/// The deepest program the compiler accepts, under a stack limit of
/// `limit_kib` (`None`: the test's own), through `sh`'s `ulimit -s`.
fn deepest_nesting_under(limit_kib: Option<u32>) -> std::process::Output {
    // 4 998 `-(` pairs: 9 996 levels, and the compiler's limit is 10 000.
    let deepest = format!("print {}1{};\n", "-(".repeat(4_998), ")".repeat(4_998));
    let path = common::source_file("limits_nesting_deepest.lox", &deepest);
    let ulimit = limit_kib.map_or(String::new(), |kib| format!("ulimit -s {kib} && "));
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{ulimit}exec \"$0\" \"$1\""))
        .arg(env!("CARGO_BIN_EXE_lox"))
        .arg(&path)
        .output()
        .expect("sh runs lox")
}

#[test]
fn the_deepest_nesting_runs_under_the_inherited_stack_limit() {
    let output = deepest_nesting_under(None);
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "1\n");
}

#[test]
fn under_a_small_stack_limit_the_interpreter_runs_on_its_own_thread() {
    // 1 MiB does not hold the deepest program's compilation (a release
    // build needs between 1 and 2 MiB); `lox` sees the limit and compiles
    // on a thread with a stack of its own.
    let output = deepest_nesting_under(Some(1024));
    assert_eq!(text(&output.stderr), "");
    assert_eq!(text(&output.stdout), "1\n");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn a_heap_max_below_the_runtime_minimum_is_a_usage_error() {
    let output = run_lox("limits_heap.lox", "print 1;\n", &["--heap-max", "1"]);
    assert_eq!(output.status.code(), Some(64));
    assert!(text(&output.stderr).contains("--heap-max 1"));
}

#[test]
fn nesting_deeper_than_the_compiler_allows_is_a_compile_error() {
    let deep = format!("print {}1{};\n", "-(".repeat(100_000), ")".repeat(100_000));
    let output = run_lox("limits_nesting.lox", &deep, &[]);
    assert_eq!(output.status.code(), Some(65));
    assert_eq!(
        text(&output.stderr),
        "[line 1] Error at '-': Too much nesting.\n"
    );
    let fine = format!("print {}1{};\n", "-(".repeat(2_000), ")".repeat(2_000));
    let output = run_lox("limits_nesting_fine.lox", &fine, &[]);
    assert_eq!(text(&output.stdout), "1\n");
}
