//! Function metadata in metaspace: what the loader copies out of a
//! [`FunctionProto`] for the interpreter, in one block of the VM's
//! [`ClassLoader`] arena, as HotSpot keeps a method's bytecode: the code
//! never moves, so a frame's instruction pointer is a plain pointer, and
//! the collector never sees any of it.
//!
//! A block is `[FunctionMeta][global slot per constant: u32][line runs][code][name]`.
//! It lives as long as the loader, which lives as long as the VM.

use hotmem::ClassLoader;

use super::error::HeapError;
use crate::bytecode::FunctionProto;

/// "This constant names no global" in a function's global-slot array.
pub(crate) const NO_GLOBAL: u32 = u32::MAX;

/// The bytes from `start` up to the next run came from `line`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct LineRun {
    start: u32,
    line: u32,
}

/// A function's metadata: its code, line table, name and shape.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct FunctionMeta {
    /// The first byte of the code.
    pub(crate) code: *const u8,
    lines: *const LineRun,
    name: *const u8,
    code_len: u32,
    line_runs: u32,
    /// The name's length; the script has no name (`name` is null).
    name_len: u32,
    /// The deepest the function's stack gets, slot 0 and arguments
    /// included.
    pub(crate) max_stack: u32,
    /// Parameters.
    pub(crate) arity: u8,
    /// Upvalues its closures capture.
    pub(crate) upvalues: u16,
    /// Distinct fields it sets on `this` (`FunctionProto::this_fields`).
    pub(crate) this_fields: u32,
}

impl FunctionMeta {
    /// The name, `None` for the script.
    pub(crate) fn name(&self) -> Option<&[u8]> {
        // SAFETY: as in `code`.
        (!self.name.is_null())
            .then(|| unsafe { std::slice::from_raw_parts(self.name, self.name_len as usize) })
    }

    /// The source line of the code byte at `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> u32 {
        // SAFETY: as in `code`.
        let runs = unsafe { std::slice::from_raw_parts(self.lines, self.line_runs as usize) };
        let after = runs.partition_point(|run| run.start as usize <= offset);
        after
            .checked_sub(1)
            .and_then(|i| runs.get(i))
            .map_or(0, |run| run.line)
    }

    /// Copies `proto`'s code, lines and name into a new block of `loader`;
    /// returns the metadata and its global-slot array (one [`NO_GLOBAL`]
    /// per constant, for the loader to fill in).
    ///
    /// # Errors
    /// [`HeapError::Metaspace`] when the arena cannot hold the block.
    pub(crate) fn write(
        loader: &mut ClassLoader,
        proto: &FunctionProto,
        max_stack: u32,
    ) -> Result<(*const FunctionMeta, *mut u32), HeapError> {
        let code = &proto.chunk.code;
        let mut runs = Vec::new();
        for offset in 0..code.len() {
            let line = proto.chunk.lines.line_of(offset);
            if runs.last().is_none_or(|run: &LineRun| run.line != line) {
                runs.push(LineRun {
                    start: offset as u32,
                    line,
                });
            }
        }
        let name = proto.name.as_deref().map(str::as_bytes);
        let constants = proto.chunk.constants.len();
        let meta_bytes = size_of::<FunctionMeta>();
        let slots_at = meta_bytes;
        let runs_at = slots_at + 4 * constants;
        let code_at = runs_at + size_of::<LineRun>() * runs.len();
        let name_at = code_at + code.len();
        let total = name_at + name.map_or(0, <[u8]>::len);
        let block = loader
            .alloc_metadata(total)
            .map_err(HeapError::Metaspace)?
            .as_ptr::<u8>();
        assert!(
            (block as usize).is_multiple_of(8),
            "metaspace blocks are word-aligned"
        );
        // SAFETY: `block` is `total` fresh bytes of the arena, word-aligned;
        // each part below lies inside it at an offset aligned for its type
        // (the header's size is a multiple of 8, the slots 4 bytes, the
        // runs 4-aligned), and nothing else refers to it yet.
        unsafe {
            let slots = block.add(slots_at).cast::<u32>();
            for k in 0..constants {
                slots.add(k).write(NO_GLOBAL);
            }
            let lines = block.add(runs_at).cast::<LineRun>();
            lines.copy_from_nonoverlapping(runs.as_ptr(), runs.len());
            let code_ptr = block.add(code_at);
            code_ptr.copy_from_nonoverlapping(code.as_ptr(), code.len());
            let name_ptr = match name {
                Some(name) => {
                    let at = block.add(name_at);
                    at.copy_from_nonoverlapping(name.as_ptr(), name.len());
                    at as *const u8
                }
                None => std::ptr::null(),
            };
            let meta = block.cast::<FunctionMeta>();
            meta.write(FunctionMeta {
                code: code_ptr,
                lines,
                name: name_ptr,
                code_len: code.len() as u32,
                line_runs: runs.len() as u32,
                name_len: name.map_or(0, |n| n.len() as u32),
                max_stack,
                arity: proto.arity,
                upvalues: proto.upvalues.len() as u16,
                this_fields: proto.this_fields,
            });
            Ok((meta, slots))
        }
    }
}
