//! The VM's objects in the hotmem heap, through the library API: the weak
//! intern table lets strings nobody references die, globals and functions
//! survive collections, and the runtime's native memory tracking accounts
//! for the VM's memory (heap, metaspace code, shadow stacks).

use std::io::Write;
use std::sync::{Arc, Mutex};

use hotmem::os::MemTag;
use hotmem_lox::cli::GcMode;
use hotmem_lox::compile;
use hotmem_lox::vm::{Vm, VmOptions};

/// Output shared with the test.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Output {
    fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}

fn vm() -> (Vm, Output) {
    let out = Output::default();
    let vm = Vm::new(VmOptions::default(), Box::new(out.clone())).expect("a VM");
    (vm, out)
}

fn run(vm: &mut Vm, source: &str) {
    let script = compile(source).expect("the test's source compiles");
    vm.interpret(&script).expect("the test's source runs");
}

#[test]
fn strings_nobody_references_die() {
    // Collections only when asked: the count before one is every string
    // made (the sizing's first budget is one page, which a thread moving
    // between CPUs can exhaust at once by taking a second CPU's page).
    let out = Output::default();
    let options = VmOptions::default().heap_sizing(hotmem::HeapSizing::Maximum);
    let mut vm = Vm::new(options, Box::new(out.clone())).expect("a VM");
    run(
        &mut vm,
        "var keep = \"kept\" + \"!\";\n\
         var s = \"\";\n\
         for (var i = 0; i < 500; i = i + 1) s = s + \"x\";\n\
         s = nil;",
    );
    let before = vm.interned_strings();
    assert!(
        before > 500,
        "every prefix of the x's is interned: {before}"
    );
    vm.collect().expect("a collection");
    let after = vm.interned_strings();
    assert!(
        after < 50,
        "only the referenced strings stay: {after} of {before}"
    );
    // The survivor is still the interned one: a literal equal to it is
    // the same object.
    run(&mut vm, "print keep == \"kept!\"; print keep;");
    vm.flush();
    assert_eq!(out.take(), "true\nkept!\n");
}

#[test]
fn globals_and_closures_survive_collections() {
    let (mut vm, out) = vm();
    run(
        &mut vm,
        "fun counter() { var n = 0; fun next() { n = n + 1; return n; } return next; }\n\
         var c = counter(); c();\n\
         class P { init(x) { this.x = x; } twice() { return this.x * 2; } }\n\
         var p = P(21);",
    );
    for _ in 0..3 {
        vm.collect().expect("a collection");
    }
    run(&mut vm, "print c(); print p.twice(); print P; print c;");
    vm.flush();
    assert_eq!(out.take(), "2\n42\nP\n<fn next>\n");
}

#[test]
fn native_memory_tracking_accounts_for_the_vm() {
    let (mut vm, _) = vm();
    let code_before = vm.code_bytes();
    let mut source = String::from("fun big(x) { var y = x;\n");
    for _ in 0..2000 {
        source.push_str("y = y - y + y;\n");
    }
    source.push_str("return y; }\nvar r = big(1);\n");
    run(&mut vm, &source);
    let code = vm.code_bytes();
    assert!(
        code - code_before > 2000 * 5,
        "the code is in metaspace: {code_before} -> {code}"
    );
    let runtime = vm.runtime();
    let nmt = runtime.nmt();
    assert_eq!(
        nmt.totals(MemTag::JAVA_HEAP).committed,
        runtime.heap().committed_bytes(),
        "the heap's objects"
    );
    assert!(
        nmt.totals(MemTag::METASPACE).committed >= code,
        "the code and line tables"
    );
    // The value stack and the root block are shadow stacks, tracked as
    // thread stacks.
    assert!(nmt.totals(MemTag::THREAD_STACK).committed >= 256 << 10);
    let report = runtime.report().to_string();
    assert!(report.contains("Metaspace"), "{report}");
}

/// The concurrent copy of the interpreter reads a function's constants, a
/// closure's function and a table's keys without the load barrier, because
/// the loader allocates functions and string constants in the runtime's
/// non-moving space (and pins a constant that existed before as a string
/// made at run time: the first round's field name). Each round here loads a script after garbage, with
/// cycles running back to back in a small heap, the REPL's pattern: its
/// constants must stay where they are (a debug build asserts it at every
/// such read), the program compute what it should, and the heap not run
/// out (pinning constants where they lay in the moving heap did: one
/// pinned page per load).
#[test]
fn constants_loaded_among_garbage_stay_put_while_cycles_move_the_rest() {
    let out = Output::default();
    let options = VmOptions::new(GcMode::Concurrent).heap_max(16 << 20);
    let mut vm = Vm::new(options, Box::new(out.clone())).expect("a VM");
    run(
        &mut vm,
        "class Junk { init(n) { this.n = n; this.m = n; } }",
    );
    for round in 0..12 {
        // Once, a string made at run time (young, in the moving heap) that
        // the next script names as a field: that constant is this string,
        // which the loader pins where it lies (keeping its page: once
        // per such string, not once per load).
        if round == 0 {
            run(&mut vm, "var made = \"v\" + \"0\";");
        }
        // Garbage: instances nobody keeps, among the objects the next
        // script's constants would lie with in the moving heap.
        run(&mut vm, "for (var i = 0; i < 3000; i = i + 1) Junk(i);");
        run(
            &mut vm,
            &format!(
                "class P{round} {{ init(v) {{ this.v{round} = v; this.w{round} = \"w{round}\"; }} }}\n\
                 fun get{round}(p) {{ return p.v{round}; }}\n\
                 var sum{round} = 0;\n\
                 for (var i = 0; i < 4000; i = i + 1) {{\n\
                   var p = P{round}(1);\n\
                   Junk(i);\n\
                   if (p.w{round} == \"w{round}\") sum{round} = sum{round} + get{round}(p);\n\
                 }}\n\
                 print sum{round};"
            ),
        );
        assert_eq!(out.take(), "4000\n", "round {round}");
    }
}

/// A class and its methods' table live in the non-moving space: the
/// interpreter reads an instance's class and a class's methods without the
/// load barrier, and debug builds assert at each such read that the object
/// cannot have moved. The methods are young closures stored into that old
/// table (when it grows, and when a subclass copies it): the store barrier
/// must remember each of them, or a young cycle frees a method the class
/// still holds. Each round declares new classes, then calls their methods
/// among garbage while young and full cycles run back to back.
#[test]
fn classes_and_their_methods_stay_put_and_alive_through_young_and_full_cycles() {
    let out = Output::default();
    let options = VmOptions::new(GcMode::ConcurrentGenerational).heap_max(16 << 20);
    let mut vm = Vm::new(options, Box::new(out.clone())).expect("a VM");
    for round in 0..6 {
        // Ten methods: the table grows past its first capacity, copying
        // young closures into a new non-moving table.
        let methods: String = (0..10)
            .map(|m| format!("m{m}() {{ return this.n + {m}; }}\n"))
            .collect();
        run(
            &mut vm,
            &format!(
                "class A{round} {{ init(n) {{ this.n = n; }}\n{methods}}}\n\
                 class B{round} < A{round} {{ m9() {{ return super.m9() + 1; }} }}\n\
                 var s{round} = 0;\n\
                 var kept{round} = B{round}(0);\n\
                 for (var i = 0; i < 20000; i = i + 1) {{\n\
                   var b = B{round}(i);\n\
                   var junk = \"j\" + \"k\";\n\
                   s{round} = s{round} + b.m9() + b.m0() - 2 * i;\n\
                   s{round} = s{round} + kept{round}.m9() + kept{round}.m0();\n\
                 }}\n\
                 print s{round};"
            ),
        );
        // Per round: (i + 9 + 1) + (i + 0) - 2i = 10, and 10 + 0 from the
        // instance kept since the classes were new (whose class slot the
        // cycles would have left stale, had its class moved).
        assert_eq!(out.take(), "400000\n", "round {round}");
    }
}

/// An instance with six fields holds them in its own words, eight pairs
/// (at most three quarters full, as clox's tables) after its header, class
/// and entries word: 152 bytes, less than clox's 200 (40 for the instance
/// and 128 for its entries, each with malloc's 16-byte header). The first
/// instance too: its class's initializer says how many fields to make
/// room for.
#[test]
fn an_instance_with_six_fields_takes_no_more_heap_than_clox() {
    const INSTANCES: u64 = 20_000;
    let (mut vm, _) = vm();
    run(
        &mut vm,
        "class Node { init(next) { this.next = next; this.a = 1; this.b = 2; this.c = 3; this.d = 4; this.e = 5; } }\nvar list = nil;",
    );
    let before = vm.collect().expect("a collection").live_bytes;
    run(
        &mut vm,
        &format!("for (var i = 0; i < {INSTANCES}; i = i + 1) list = Node(list);"),
    );
    let after = vm.collect().expect("a collection").live_bytes;
    let per_instance = (after - before) / INSTANCES;
    assert_eq!(per_instance, 152, "{before} -> {after}");
}

/// Instances that outgrow the room their class made for them (fields set
/// outside the initializer, in a subclass, or more than any instance had)
/// keep every field through collections of every kind, in each collector
/// mode, and the instances made after get room for the new fields.
#[test]
fn instances_keep_their_fields_when_they_outgrow_their_inline_room() {
    let source = "class P { init(a) { this.a = a; } }\n\
         class Q < P { init(a) { super.init(a); this.b = a + 1; } }\n\
         var keep = nil; var k = 0;\n\
         for (var i = 0; i < 1000; i = i + 1) {\n\
           var p = P(i); var q = Q(i);\n\
           for (var j = 0; j < 3 + k; j = j + 1) { p.x = j; q.y = j; p.z = i; q.w = p; }\n\
           k = k + 1; if (k == 7) k = 0;\n\
           p.keep = keep; keep = p;\n\
           if (p.a != i or q.b != i + 1 or q.w.z != i or p.x != q.y) print \"wrong\";\n\
         }\n\
         var n = 0; var sum = 0;\n\
         while (keep != nil) { n = n + 1; sum = sum + keep.a + keep.x; keep = keep.keep; }\n\
         print n; print sum;";
    // Each p has x = 2 + i % 7 after its loop.
    let sum: u64 = (0..1000u64).map(|i| i + 2 + i % 7).sum();
    for gc in [
        GcMode::Normal,
        GcMode::Stress,
        GcMode::Concurrent,
        GcMode::ConcurrentGenerational,
    ] {
        let out = Output::default();
        let options = VmOptions::new(gc).heap_max(16 << 20);
        let mut vm = Vm::new(options, Box::new(out.clone())).expect("a VM");
        run(&mut vm, source);
        vm.flush();
        assert_eq!(out.take(), format!("1000\n{sum}\n"), "{gc:?}");
    }
}

/// A field named like a method shadows it, for `INVOKE` too, in the
/// instances that have the field and only in those; a subclass's
/// instances likewise; a field holding a function is called when there is
/// no method of its name.
#[test]
fn fields_shadow_methods_of_the_same_name_only_where_they_are_set() {
    let (mut vm, out) = vm();
    run(
        &mut vm,
        "class A { m() { return \"method\"; } }\n\
         class B < A {}\n\
         fun f() { return \"field\"; }\n\
         var a = A(); var a2 = A(); var b = B(); var b2 = B();\n\
         print a.m(); print b.m();\n\
         a.m = f; b.m = f;\n\
         print a.m(); print a2.m(); print b.m(); print b2.m();\n\
         a.other = f; print a.other(); print a2.m();\n\
         var c = A(); c.g = f; print c.g(); print c.m();",
    );
    vm.flush();
    assert_eq!(
        out.take(),
        "method\nmethod\nfield\nmethod\nfield\nmethod\nfield\nmethod\nfield\nmethod\n"
    );
}
