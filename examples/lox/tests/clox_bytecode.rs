//! The compiler emits clox's bytecode: for every suite test that compiles,
//! our prototypes, listed in clox's `DEBUG_PRINT_CODE` format, are exactly
//! what clox (built with that flag) prints: the same instructions, operands,
//! constants, jump targets, upvalue captures and lines, function by function.
//!
//! Only the operation names are mapped (`GET_LOCAL` is clox's
//! `OP_GET_LOCAL`); the encoding of jump operands is ours and is compared
//! through the decoded targets.

mod common;

use std::fmt::Write;
use std::time::Duration;

use common::{CloxBuild, clox, suite_dir, suite_tests};
use hotmem_lox::bytecode::{Operand, UpvalueDesc, instructions};
use hotmem_lox::suite::{ExpectedExit, Interpreter, run_file};
use hotmem_lox::{Constant, FunctionProto, compile};

/// `proto`'s functions in the order clox finishes compiling them (nested
/// functions first), each in clox's listing format.
fn clox_listing(proto: &FunctionProto, out: &mut String) {
    for constant in &proto.chunk.constants {
        if let Constant::Function(nested) = constant {
            clox_listing(nested, out);
        }
    }
    let chunk = &proto.chunk;
    let name = proto.name.as_deref().unwrap_or("<script>");
    writeln!(out, "== {name} ==").unwrap();
    let mut previous_line = None;
    for instruction in instructions(chunk) {
        let instruction = instruction.expect("the compiler emits well-formed code");
        let offset = instruction.offset;
        let line = chunk.lines.line_of(offset);
        write!(out, "{offset:04} ").unwrap();
        if previous_line == Some(line) {
            out.push_str("   | ");
        } else {
            write!(out, "{line:4} ").unwrap();
        }
        previous_line = Some(line);
        let name = format!("OP_{}", instruction.op.name());
        let value = |index: u8| chunk.constants[usize::from(index)].to_string();
        match instruction.operand {
            Operand::None => writeln!(out, "{name}"),
            Operand::Constant(k) => writeln!(out, "{name:<16} {k:4} '{}'", value(k)),
            Operand::Byte(b) => writeln!(out, "{name:<16} {b:4}"),
            Operand::Jump { target } => writeln!(out, "{name:<16} {offset:4} -> {target}"),
            Operand::Invoke { name: k, args } => {
                writeln!(out, "{name:<16} ({args} args) {k:4} '{}'", value(k))
            }
            Operand::Closure { function, .. } => {
                writeln!(out, "{name:<16} {function:4} {}", value(function)).unwrap();
                for (i, upvalue) in instruction.operand.upvalues().enumerate() {
                    let (kind, index) = match upvalue {
                        UpvalueDesc::Local(slot) => ("local", slot),
                        UpvalueDesc::Upvalue(index) => ("upvalue", index),
                    };
                    let at = offset + 2 + 2 * i;
                    writeln!(out, "{at:04}      |                     {kind} {index}").unwrap();
                }
                Ok(())
            }
        }
        .unwrap();
    }
}

#[test]
fn bytecode_matches_clox_for_every_test_that_compiles() {
    let Some(dir) = suite_dir() else { return };
    let Some(clox) = clox(CloxBuild::PrintCode) else {
        return;
    };
    let interpreter = Interpreter::new(clox);
    let mut compared = 0;
    let mut differences = Vec::new();
    for (path, source, expectations) in suite_tests(&dir) {
        if expectations.exit == ExpectedExit::CompileError {
            continue;
        }
        let script = compile(&source).expect("tests without compile errors compile");
        let mut ours = String::new();
        clox_listing(&script, &mut ours);
        let output = run_file(&interpreter, &path, Duration::from_secs(20)).expect("clox runs");
        compared += 1;
        if !output.stdout.starts_with(&ours) {
            let line = ours
                .lines()
                .zip(output.stdout.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            differences.push(format!(
                "{}: first difference at listing line {line}:\n  ours: {:?}\n  clox: {:?}",
                path.display(),
                ours.lines().nth(line),
                output.stdout.lines().nth(line)
            ));
        }
    }
    eprintln!("compared the bytecode of {compared} programs with clox's");
    assert!(compared > 0);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
