//! Load-time verification of a function's bytecode, HotSpot's verifier in
//! miniature: every instruction decodes, every operand is in range (a
//! constant of the right kind, a local below the stack's height, an
//! upvalue the closure has, a jump onto an instruction), the stack height
//! is the same on every path into an instruction, and never drops below the
//! frame. What it proves is what lets the interpreter read operands and
//! stack words without bounds checks; what it computes is the deepest the
//! stack gets, which a call checks against the room left on the stack.

use thiserror::Error;

use crate::bytecode::{
    Constant, DecodeError, FunctionProto, OpCode, Operand, decode, instructions,
};

/// What verification found.
#[derive(Debug)]
pub(crate) struct Verified {
    /// The deepest the stack gets, in words from the frame's slot 0.
    pub(crate) max_stack: u32,
    /// The constants that `GET_GLOBAL`, `SET_GLOBAL` and `DEFINE_GLOBAL`
    /// name, each once.
    pub(crate) globals: Vec<u8>,
}

/// Malformed bytecode (the compiler never emits it).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// An instruction does not decode.
    #[error("malformed bytecode: {0}")]
    Decode(#[from] DecodeError),
    /// An operand is out of range or of the wrong kind.
    #[error("malformed bytecode: bad operand of {op} at offset {offset}")]
    Operand {
        /// The instruction.
        op: OpCode,
        /// Where it is.
        offset: usize,
    },
    /// Two paths reach an instruction with different stack heights, or a
    /// jump lands between instructions, or the code runs off its end.
    #[error("malformed bytecode: inconsistent control flow at offset {offset}")]
    Flow {
        /// Where.
        offset: usize,
    },
}

/// Words an instruction pops and pushes.
fn effect(op: OpCode, operand: &Operand<'_>) -> (u32, u32) {
    use OpCode::*;
    let args = match *operand {
        Operand::Byte(n) | Operand::Invoke { args: n, .. } => u32::from(n),
        _ => 0,
    };
    match op {
        Constant | Nil | True | False | GetLocal | GetGlobal | GetUpvalue | Closure | Class => {
            (0, 1)
        }
        Pop | DefineGlobal | Print | CloseUpvalue | Return => (1, 0),
        SetLocal | SetGlobal | SetUpvalue | GetProperty | Not | Negate | JumpIfFalse => (1, 1),
        SetProperty | GetSuper | Equal | Greater | Less | Add | Subtract | Multiply | Divide
        | Inherit | Method => (2, 1),
        Jump | Loop => (0, 0),
        Call | Invoke => (args + 1, 1),
        SuperInvoke => (args + 2, 1),
    }
}

/// Checks `proto`'s own code (not its nested functions).
///
/// # Errors
/// [`VerifyError`] for anything the compiler would not have emitted.
pub(crate) fn verify(proto: &FunctionProto) -> Result<Verified, VerifyError> {
    let chunk = &proto.chunk;
    let len = chunk.code.len();
    // Where instructions start (decoded again when reached: a table of
    // decoded instructions would take tens of bytes per byte of code).
    let mut starts = vec![false; len];
    for instruction in instructions(chunk) {
        starts[instruction?.offset] = true;
    }
    let upvalues = proto.upvalues.len();
    let is_string = |k: u8| {
        matches!(
            chunk.constants.get(usize::from(k)),
            Some(Constant::String(_))
        )
    };
    let mut globals = Vec::new();
    // The stack height on entry to each instruction (`UNKNOWN` until a
    // path reaches it).
    const UNKNOWN: u32 = u32::MAX;
    let mut height = vec![UNKNOWN; len];
    let start = u32::from(proto.arity) + 1;
    let mut max_stack = start;
    let mut pending = vec![(0usize, start)];
    while let Some((offset, depth)) = pending.pop() {
        let flow = VerifyError::Flow { offset };
        if !starts.get(offset).copied().unwrap_or(false) {
            return Err(flow);
        }
        let instruction = decode(chunk, offset)?;
        match height[offset] {
            UNKNOWN => height[offset] = depth,
            known if known == depth => continue,
            _ => return Err(flow),
        }
        let op = instruction.op;
        let bad = VerifyError::Operand { op, offset };
        let operand = instruction.operand;
        let ok = match operand {
            Operand::None => true,
            Operand::Constant(k) => match op {
                OpCode::Constant => usize::from(k) < chunk.constants.len(),
                OpCode::GetGlobal | OpCode::SetGlobal | OpCode::DefineGlobal => {
                    if !globals.contains(&k) {
                        globals.push(k);
                    }
                    is_string(k)
                }
                _ => is_string(k),
            },
            Operand::Byte(n) => match op {
                OpCode::GetLocal | OpCode::SetLocal => u32::from(n) < depth,
                OpCode::GetUpvalue | OpCode::SetUpvalue => usize::from(n) < upvalues,
                _ => true,
            },
            Operand::Invoke { name, .. } => is_string(name),
            Operand::Jump { .. } => true,
            // The closure is pushed before it captures: a local function
            // captures its own slot.
            Operand::Closure { .. } => operand.upvalues().all(|up| match up {
                crate::UpvalueDesc::Local(i) => u32::from(i) <= depth,
                crate::UpvalueDesc::Upvalue(i) => usize::from(i) < upvalues,
            }),
        };
        let (pops, pushes) = effect(op, &operand);
        if !ok || pops > depth {
            return Err(bad);
        }
        let after = depth - pops + pushes;
        max_stack = max_stack.max(after);
        let next = offset + instruction.len();
        match (op, operand) {
            (OpCode::Return, _) => {}
            (OpCode::Jump | OpCode::Loop, Operand::Jump { target }) => {
                pending.push((target, after))
            }
            (OpCode::JumpIfFalse, Operand::Jump { target }) => {
                pending.push((target, after));
                pending.push((next, after));
            }
            _ => pending.push((next, after)),
        }
    }
    Ok(Verified { max_stack, globals })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    #[test]
    fn the_deepest_stack_is_found() {
        let script = compile("print 1 + (2 * (3 - 4));").unwrap();
        // slot 0, then 1, 2, 3, 4 on top of each other.
        assert_eq!(verify(&script).unwrap().max_stack, 5);
        let script = compile("var a = 1; { var b = a; print b; }").unwrap();
        assert_eq!(verify(&script).unwrap().globals, vec![0, 2]);
    }

    #[test]
    fn every_branch_and_loop_is_consistent() {
        let source = "fun f(n) { var s = 0; for (var i = 0; i < n; i = i + 1) { if (i > 2 and i < 5 or false) s = s + i; } return s; } print f(10);";
        let script = compile(source).unwrap();
        verify(&script).unwrap();
        let f = script
            .chunk
            .constants
            .iter()
            .find_map(|c| match c {
                Constant::Function(f) => Some(f),
                _ => None,
            })
            .expect("f is a constant of the script");
        let verified = verify(f).unwrap();
        assert!(verified.max_stack >= 4);
    }

    #[test]
    fn bad_code_is_refused() {
        let mut script = (*compile("print 1;").unwrap()).clone();
        script.chunk.code[0] = OpCode::GetLocal as u8;
        script.chunk.code[1] = 7; // no such local
        assert!(matches!(verify(&script), Err(VerifyError::Operand { .. })));
        let mut script = (*compile("print 1;").unwrap()).clone();
        script.chunk.code.truncate(2);
        script.chunk.code.push(OpCode::Pop as u8);
        script.chunk.code.push(OpCode::Pop as u8);
        assert!(verify(&script).is_err());
    }
}
