//! Function prototypes: what the compiler produces for every function.

use std::fmt;
use std::rc::Rc;

use super::chunk::Chunk;

/// What kind of function a prototype is; it decides what slot 0 holds and
/// what a bare `return` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// The top-level code of a program.
    Script,
    /// A `fun` declaration.
    Function,
    /// A method other than `init`; slot 0 holds `this`.
    Method,
    /// A class's `init` method: it returns `this`.
    Initializer,
}

/// Where a closure finds one of its upvalues when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpvalueDesc {
    /// The enclosing function's local slot.
    Local(u8),
    /// The enclosing closure's upvalue with this index.
    Upvalue(u8),
}

impl UpvalueDesc {
    /// The two bytes that follow `CLOSURE` for this upvalue.
    pub fn encode(self) -> [u8; 2] {
        match self {
            Self::Local(index) => [1, index],
            Self::Upvalue(index) => [0, index],
        }
    }

    /// The upvalue the two bytes `[is_local, index]` describe.
    pub fn decode(is_local: u8, index: u8) -> Self {
        if is_local != 0 {
            Self::Local(index)
        } else {
            Self::Upvalue(index)
        }
    }
}

/// A compiled function: everything the VM needs to create closures of it.
/// Nested functions sit in [`Chunk::constants`] as
/// [`Constant::Function`](super::Constant::Function), so a program is a tree
/// of prototypes rooted at the script.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionProto {
    /// The function's name; `None` for the script.
    pub name: Option<Rc<str>>,
    /// What kind of function this is.
    pub kind: FunctionKind,
    /// How many parameters it takes.
    pub arity: u8,
    /// How its closures capture variables, in upvalue-index order.
    pub upvalues: Vec<UpvalueDesc>,
    /// How many distinct fields it sets on `this` (`this.name = ...`): for
    /// an initializer, how many fields its instances have at least, which
    /// the VM makes room for in each new instance.
    pub this_fields: u32,
    /// Its code.
    pub chunk: Chunk,
}

impl fmt::Display for FunctionProto {
    /// As Lox prints a function: `<fn name>`, or `<script>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "<fn {name}>"),
            None => f.write_str("<script>"),
        }
    }
}
