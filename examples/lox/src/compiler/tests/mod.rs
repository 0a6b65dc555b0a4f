//! Compiler tests: the bytecode of small programs, and every error.

mod bytecode;
mod errors;
mod limits;

use crate::bytecode::{Constant, FunctionProto, Operand, UpvalueDesc, instructions};
use crate::compile;

/// The script of `source`, which must compile.
fn script(source: &str) -> std::rc::Rc<FunctionProto> {
    compile(source).unwrap_or_else(|errors| panic!("{source:?} failed:\n{errors}"))
}

/// The `index`-th function constant of `proto`.
fn nested(proto: &FunctionProto, index: usize) -> &FunctionProto {
    proto
        .chunk
        .constants
        .iter()
        .filter_map(|constant| match constant {
            Constant::Function(nested) => Some(&**nested),
            _ => None,
        })
        .nth(index)
        .expect("no such function constant")
}

/// `proto`'s code, one instruction per string: the name, then constants by
/// value (strings quoted), bytes as numbers, jumps as `-> target`.
fn code(proto: &FunctionProto) -> Vec<String> {
    let constant = |index: u8| match &proto.chunk.constants[usize::from(index)] {
        Constant::String(text) => format!("'{text}'"),
        other => other.to_string(),
    };
    instructions(&proto.chunk)
        .map(|instruction| {
            let instruction = instruction.expect("well-formed code");
            let name = instruction.op.name();
            match instruction.operand {
                Operand::None => name.to_owned(),
                Operand::Constant(k) => format!("{name} {}", constant(k)),
                Operand::Byte(byte) => format!("{name} {byte}"),
                Operand::Jump { target } => format!("{name} -> {target}"),
                Operand::Invoke { name: k, args } => format!("{name} {} {args}", constant(k)),
                Operand::Closure { function, .. } => {
                    let mut text = format!("{name} {}", constant(function));
                    for upvalue in instruction.operand.upvalues() {
                        match upvalue {
                            UpvalueDesc::Local(slot) => text.push_str(&format!(" local {slot}")),
                            UpvalueDesc::Upvalue(index) => {
                                text.push_str(&format!(" upvalue {index}"))
                            }
                        }
                    }
                    text
                }
            }
        })
        .collect()
}

/// The code of the script of `source`.
fn script_code(source: &str) -> Vec<String> {
    code(&script(source))
}

/// The errors of `source`, which must fail, one display line each.
fn errors(source: &str) -> Vec<String> {
    match compile(source) {
        Ok(_) => panic!("{source:?} compiled"),
        Err(errors) => errors.errors().iter().map(ToString::to_string).collect(),
    }
}
