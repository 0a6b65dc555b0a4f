//! hotmem-lox: a bytecode VM for the Lox language of *Crafting Interpreters*,
//! whose objects live in the hotmem heap and are moved by its collector.
//!
//! - [`vm`]: the VM (objects, loader, interpreter) on a hotmem `Runtime`.
//!
//! The rest is the part that never touches the heap:
//!
//! - [`scanner`]: source text to tokens, lexemes as byte ranges;
//! - [`compiler`]: a single-pass Pratt compiler from tokens to a tree of plain
//!   [`FunctionProto`]s (no heap objects), with clox's error messages and
//!   limits, errors returned as data;
//! - [`bytecode`]: the opcode set, chunks, constants, the line table and the
//!   disassembler;
//! - [`format_number`]: numbers printed as C's `printf("%g")`;
//! - [`suite`]: the conformance-suite runner that checks an interpreter
//!   against the expectations written in the official tests;
//! - [`cli`]: the `lox` binary's command line.
//!
//! ```
//! use hotmem_lox::{compile, Constant};
//!
//! let script = compile("var greeting = \"hi\"; print greeting;").unwrap();
//! assert!(script.name.is_none());
//! assert!(matches!(&script.chunk.constants[1], Constant::String(s) if &**s == "hi"));
//!
//! let errors = compile("print;").unwrap_err();
//! assert_eq!(errors.to_string(), "[line 1] Error at ';': Expect expression.");
//! ```
#![deny(unsafe_code)] // Only the VM (`vm`) allows it, with a `SAFETY` comment per block.

pub mod bytecode;
pub mod cli;
pub mod compiler;
mod number;
pub mod scanner;
pub mod suite;
pub mod vm;

pub use bytecode::{Chunk, Constant, FunctionKind, FunctionProto, LineTable, OpCode, UpvalueDesc};
pub use compiler::{CompileError, CompileErrors, ErrorKind, compile};
pub use number::{NumberDisplay, format_number};
