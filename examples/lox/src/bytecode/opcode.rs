//! The opcode set: one byte per instruction, then fixed-width operands.
//!
//! Operands are unsigned bytes (`u8`) except jump distances, which are `u16`
//! stored little-endian. `k` is an index into the chunk's constant table;
//! `name` is such an index whose constant is the string of an identifier.
//! Stack effects are written `before -> after`, top of the stack rightmost.

use std::fmt;

/// One bytecode instruction's operation. The discriminant is the byte in the
/// code; [`OpCode::from_u8`] is the checked way back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpCode {
    /// `CONSTANT k`: `-> constants[k]`.
    Constant = 0,
    /// `NIL`: `-> nil`.
    Nil,
    /// `TRUE`: `-> true`.
    True,
    /// `FALSE`: `-> false`.
    False,
    /// `POP`: `value ->`.
    Pop,
    /// `GET_LOCAL slot`: `-> frame[slot]` (slot 0 is the callee or `this`).
    GetLocal,
    /// `SET_LOCAL slot`: `value -> value`, storing it in `frame[slot]`.
    SetLocal,
    /// `GET_GLOBAL name`: `-> globals[name]`; runtime error
    /// "Undefined variable 'name'." if absent.
    GetGlobal,
    /// `DEFINE_GLOBAL name`: `value ->`, defining or redefining the global.
    DefineGlobal,
    /// `SET_GLOBAL name`: `value -> value`, assigning an existing global;
    /// runtime error "Undefined variable 'name'." if absent.
    SetGlobal,
    /// `GET_UPVALUE index`: `-> closure.upvalues[index]`.
    GetUpvalue,
    /// `SET_UPVALUE index`: `value -> value`, storing through the upvalue.
    SetUpvalue,
    /// `GET_PROPERTY name`: `instance -> field or bound method`.
    GetProperty,
    /// `SET_PROPERTY name`: `instance value -> value`.
    SetProperty,
    /// `GET_SUPER name`: `this superclass -> bound method of superclass`.
    GetSuper,
    /// `EQUAL`: `a b -> a == b`.
    Equal,
    /// `GREATER`: `a b -> a > b` (numbers only).
    Greater,
    /// `LESS`: `a b -> a < b` (numbers only).
    Less,
    /// `ADD`: `a b -> a + b` (two numbers, or two strings concatenated).
    Add,
    /// `SUBTRACT`: `a b -> a - b`.
    Subtract,
    /// `MULTIPLY`: `a b -> a * b`.
    Multiply,
    /// `DIVIDE`: `a b -> a / b`.
    Divide,
    /// `NOT`: `value -> !truthy(value)`.
    Not,
    /// `NEGATE`: `number -> -number`.
    Negate,
    /// `PRINT`: `value ->`, printing it and a newline.
    Print,
    /// `JUMP distance:u16`: `->`, `ip += distance` (from the next instruction).
    Jump,
    /// `JUMP_IF_FALSE distance:u16`: `cond -> cond`, `ip += distance` if
    /// `cond` is falsey (the condition stays on the stack).
    JumpIfFalse,
    /// `LOOP distance:u16`: `->`, `ip -= distance` (from the next instruction).
    Loop,
    /// `CALL argc`: `callee arg1..argc -> result`.
    Call,
    /// `INVOKE name argc`: `receiver arg1..argc -> result`; calls the
    /// property `name` of the receiver (a field holding a callable, or a
    /// method), without creating a bound method.
    Invoke,
    /// `SUPER_INVOKE name argc`: `this arg1..argc superclass -> result`;
    /// calls the superclass's method `name` on `this`.
    SuperInvoke,
    /// `CLOSURE k (is_local index)*`: `-> closure`; `constants[k]` is a
    /// function with `n` upvalues, followed by `n` byte pairs: `is_local` is
    /// 1 to capture the enclosing frame's slot `index`, 0 to share the
    /// enclosing closure's upvalue `index`.
    Closure,
    /// `CLOSE_UPVALUE`: `value ->`, closing the upvalues that point at the
    /// top slot before popping it.
    CloseUpvalue,
    /// `RETURN`: `result ->`, leaving the frame (closing its upvalues) and
    /// pushing `result` in the caller.
    Return,
    /// `CLASS name`: `-> class`.
    Class,
    /// `INHERIT`: `superclass subclass -> superclass`, copying the
    /// superclass's methods into the subclass; runtime error
    /// "Superclass must be a class." if it is not one.
    Inherit,
    /// `METHOD name`: `class closure -> class`, adding the method.
    Method,
}

/// The shape of an opcode's operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operands {
    /// No operand.
    None,
    /// One constant-table index.
    Constant,
    /// One byte: a stack slot, an upvalue index or an argument count.
    Byte,
    /// A forward `u16` distance.
    JumpForward,
    /// A backward `u16` distance.
    JumpBackward,
    /// A constant-table index (the method name) and an argument count.
    Invoke,
    /// A constant-table index (a function) and two bytes per upvalue.
    Closure,
}

impl OpCode {
    /// Every opcode, indexed by its byte.
    pub const ALL: [OpCode; 37] = [
        Self::Constant,
        Self::Nil,
        Self::True,
        Self::False,
        Self::Pop,
        Self::GetLocal,
        Self::SetLocal,
        Self::GetGlobal,
        Self::DefineGlobal,
        Self::SetGlobal,
        Self::GetUpvalue,
        Self::SetUpvalue,
        Self::GetProperty,
        Self::SetProperty,
        Self::GetSuper,
        Self::Equal,
        Self::Greater,
        Self::Less,
        Self::Add,
        Self::Subtract,
        Self::Multiply,
        Self::Divide,
        Self::Not,
        Self::Negate,
        Self::Print,
        Self::Jump,
        Self::JumpIfFalse,
        Self::Loop,
        Self::Call,
        Self::Invoke,
        Self::SuperInvoke,
        Self::Closure,
        Self::CloseUpvalue,
        Self::Return,
        Self::Class,
        Self::Inherit,
        Self::Method,
    ];

    /// The opcode whose byte is `byte`, if there is one.
    #[inline]
    pub fn from_u8(byte: u8) -> Option<Self> {
        Self::ALL.get(usize::from(byte)).copied()
    }

    /// The shape of this opcode's operands.
    pub fn operands(self) -> Operands {
        use OpCode::*;
        match self {
            Constant | GetGlobal | DefineGlobal | SetGlobal | GetProperty | SetProperty
            | GetSuper | Class | Method => Operands::Constant,
            GetLocal | SetLocal | GetUpvalue | SetUpvalue | Call => Operands::Byte,
            Jump | JumpIfFalse => Operands::JumpForward,
            Loop => Operands::JumpBackward,
            Invoke | SuperInvoke => Operands::Invoke,
            Closure => Operands::Closure,
            Nil | True | False | Pop | Equal | Greater | Less | Add | Subtract | Multiply
            | Divide | Not | Negate | Print | CloseUpvalue | Return | Inherit => Operands::None,
        }
    }

    /// The instruction's name in listings, e.g. `GET_LOCAL`.
    pub fn name(self) -> &'static str {
        use OpCode::*;
        match self {
            Constant => "CONSTANT",
            Nil => "NIL",
            True => "TRUE",
            False => "FALSE",
            Pop => "POP",
            GetLocal => "GET_LOCAL",
            SetLocal => "SET_LOCAL",
            GetGlobal => "GET_GLOBAL",
            DefineGlobal => "DEFINE_GLOBAL",
            SetGlobal => "SET_GLOBAL",
            GetUpvalue => "GET_UPVALUE",
            SetUpvalue => "SET_UPVALUE",
            GetProperty => "GET_PROPERTY",
            SetProperty => "SET_PROPERTY",
            GetSuper => "GET_SUPER",
            Equal => "EQUAL",
            Greater => "GREATER",
            Less => "LESS",
            Add => "ADD",
            Subtract => "SUBTRACT",
            Multiply => "MULTIPLY",
            Divide => "DIVIDE",
            Not => "NOT",
            Negate => "NEGATE",
            Print => "PRINT",
            Jump => "JUMP",
            JumpIfFalse => "JUMP_IF_FALSE",
            Loop => "LOOP",
            Call => "CALL",
            Invoke => "INVOKE",
            SuperInvoke => "SUPER_INVOKE",
            Closure => "CLOSURE",
            CloseUpvalue => "CLOSE_UPVALUE",
            Return => "RETURN",
            Class => "CLASS",
            Inherit => "INHERIT",
            Method => "METHOD",
        }
    }
}

impl From<OpCode> for u8 {
    #[inline]
    fn from(op: OpCode) -> u8 {
        op as u8
    }
}

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::OpCode;

    #[test]
    fn from_u8_inverts_the_discriminant() {
        for (byte, op) in OpCode::ALL.iter().enumerate() {
            assert_eq!(*op as usize, byte);
            assert_eq!(OpCode::from_u8(byte as u8), Some(*op));
        }
        assert_eq!(OpCode::from_u8(OpCode::ALL.len() as u8), None);
        assert_eq!(OpCode::from_u8(u8::MAX), None);
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<_> = OpCode::ALL.iter().map(|op| op.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OpCode::ALL.len());
    }
}
