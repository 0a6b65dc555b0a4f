//! Listings of compiled code, for debugging (`lox --disassemble FILE`).

use std::fmt;

use super::chunk::{Chunk, Constant};
use super::instruction::{Instruction, Operand, instructions};
use super::proto::{FunctionProto, UpvalueDesc};

/// A listing of `proto` and, after it, of every function nested in it
/// (depth first, in constant-table order).
///
/// ```
/// let script = hotmem_lox::compile("print 1 + 2;").unwrap();
/// let listing = hotmem_lox::bytecode::disassemble(&script).to_string();
/// assert!(listing.starts_with("== <script> =="));
/// assert!(listing.contains("ADD"));
/// ```
pub fn disassemble(proto: &FunctionProto) -> Disassembly<'_> {
    Disassembly { proto }
}

/// The [`Display`](fmt::Display) listing that [`disassemble`] returns.
#[derive(Clone, Copy, Debug)]
pub struct Disassembly<'a> {
    proto: &'a FunctionProto,
}

impl fmt::Display for Disassembly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proto = self.proto;
        writeln!(
            f,
            "== {proto} == {:?}, arity {}, {} upvalues, {} bytes, {} constants",
            proto.kind,
            proto.arity,
            proto.upvalues.len(),
            proto.chunk.code.len(),
            proto.chunk.constants.len()
        )?;
        write_chunk(f, &proto.chunk)?;
        for constant in &proto.chunk.constants {
            if let Constant::Function(nested) = constant {
                writeln!(f)?;
                write!(f, "{}", disassemble(nested))?;
            }
        }
        Ok(())
    }
}

/// Writes one line per instruction of `chunk`.
///
/// # Errors
///
/// Whatever `out` returns; malformed code is listed as far as it decodes,
/// then an `error:` line.
pub fn write_chunk(out: &mut impl fmt::Write, chunk: &Chunk) -> fmt::Result {
    let mut previous_line = None;
    for decoded in instructions(chunk) {
        match decoded {
            Ok(instruction) => {
                let line = chunk.lines.line_of(instruction.offset);
                let shown = (previous_line != Some(line)).then_some(line);
                write_instruction(out, chunk, &instruction, shown)?;
                previous_line = Some(line);
            }
            Err(error) => writeln!(out, "error: {error}")?,
        }
    }
    Ok(())
}

/// Writes one instruction: offset, line (or `|` when `line` is `None`, meaning
/// "same as the previous"), name and operands.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_instruction(
    out: &mut impl fmt::Write,
    chunk: &Chunk,
    instruction: &Instruction<'_>,
    line: Option<u32>,
) -> fmt::Result {
    write!(out, "{:04} ", instruction.offset)?;
    match line {
        Some(line) => write!(out, "{line:>4} ")?,
        None => write!(out, "   | ")?,
    }
    let name = instruction.op.name();
    let constant = |index: u8| ConstantText(chunk.constants.get(usize::from(index)));
    match instruction.operand {
        Operand::None => writeln!(out, "{name}"),
        Operand::Constant(index) => writeln!(out, "{name:<16} {index:>4} {}", constant(index)),
        Operand::Byte(byte) => writeln!(out, "{name:<16} {byte:>4}"),
        Operand::Jump { target } => writeln!(out, "{name:<16} -> {target:04}"),
        Operand::Invoke { name: index, args } => {
            writeln!(
                out,
                "{name:<16} {index:>4} {} ({args} args)",
                constant(index)
            )
        }
        Operand::Closure { function, .. } => {
            write!(out, "{name:<16} {function:>4} {}", constant(function))?;
            for (i, upvalue) in instruction.operand.upvalues().enumerate() {
                let separator = if i == 0 { " captures" } else { "," };
                match upvalue {
                    UpvalueDesc::Local(slot) => write!(out, "{separator} local {slot}")?,
                    UpvalueDesc::Upvalue(index) => write!(out, "{separator} upvalue {index}")?,
                }
            }
            writeln!(out)
        }
    }
}

/// A constant as listings quote it: `'text'` for strings and numbers.
struct ConstantText<'a>(Option<&'a Constant>);

impl fmt::Display for ConstantText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(Constant::String(text)) => write!(f, "{:?}", &**text),
            Some(constant @ Constant::Number(_)) => write!(f, "{constant}"),
            Some(constant @ Constant::Function(_)) => write!(f, "{constant}"),
            None => f.write_str("<no such constant>"),
        }
    }
}
