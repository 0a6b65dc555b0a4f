//! The state of one function being compiled: its chunk, its locals and
//! scopes, and the upvalues it captures. Name resolution happens here.

use std::rc::Rc;

use super::error::ErrorKind;
use crate::bytecode::{Chunk, FunctionKind, FunctionProto, UpvalueDesc};

/// Locals, upvalues and constants are addressed by one byte.
pub(super) const MAX_SLOTS: usize = 256;

/// Whether a local can be read yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Depth {
    /// Declared, its initializer not compiled yet: reading it is an error.
    Declared,
    /// Usable, in the scope at this depth.
    Defined(u32),
}

/// Whether a closure captures a local; a captured local is closed, not
/// popped, when its scope ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Capture {
    /// Only this function's frame uses the slot.
    NotCaptured,
    /// A closure refers to the slot through an upvalue.
    Captured,
}

/// A local variable: a stack slot of the function's frame.
#[derive(Clone, Copy, Debug)]
struct Local<'src> {
    name: &'src str,
    depth: Depth,
    capture: Capture,
}

/// The compiler's view of one function under construction.
pub(super) struct FunctionState<'src> {
    pub(super) kind: FunctionKind,
    name: Option<Rc<str>>,
    /// Counts past 255 so that every extra parameter is seen (and reported).
    pub(super) arity: usize,
    pub(super) chunk: Chunk,
    locals: Vec<Local<'src>>,
    upvalues: Vec<UpvalueDesc>,
    pub(super) scope_depth: u32,
    /// The code's length right after the last bare `this` was compiled: a
    /// property set that starts there sets a field of `this`.
    pub(super) after_this: Option<usize>,
    /// The names of the fields set on `this`, each once.
    this_fields: Vec<&'src str>,
}

impl<'src> FunctionState<'src> {
    /// A function with nothing compiled yet. Slot 0 is reserved: it holds
    /// the callee, which methods, initializers (and the script, as in clox)
    /// name `this`.
    pub(super) fn new(kind: FunctionKind, name: Option<Rc<str>>) -> Self {
        let slot_zero = match kind {
            FunctionKind::Function => "",
            FunctionKind::Script | FunctionKind::Method | FunctionKind::Initializer => "this",
        };
        let mut locals = Vec::with_capacity(8);
        locals.push(Local {
            name: slot_zero,
            depth: Depth::Defined(0),
            capture: Capture::NotCaptured,
        });
        Self {
            kind,
            name,
            arity: 0,
            chunk: Chunk::new(),
            locals,
            upvalues: Vec::new(),
            scope_depth: 0,
            after_this: None,
            this_fields: Vec::new(),
        }
    }

    /// Counts the field `name` as set on `this`.
    pub(super) fn set_on_this(&mut self, name: &'src str) {
        if !self.this_fields.contains(&name) {
            self.this_fields.push(name);
        }
    }

    /// The finished prototype.
    pub(super) fn into_proto(self) -> FunctionProto {
        FunctionProto {
            name: self.name,
            kind: self.kind,
            arity: u8::try_from(self.arity).unwrap_or(u8::MAX),
            upvalues: self.upvalues,
            this_fields: self.this_fields.len() as u32,
            chunk: self.chunk,
        }
    }

    /// Adds a local named `name`, declared but not yet usable.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TooManyLocals`] when the frame already has 256 slots
    /// (the local is not added).
    pub(super) fn add_local(&mut self, name: &'src str) -> Result<(), ErrorKind> {
        if self.locals.len() == MAX_SLOTS {
            return Err(ErrorKind::TooManyLocals);
        }
        self.locals.push(Local {
            name,
            depth: Depth::Declared,
            capture: Capture::NotCaptured,
        });
        Ok(())
    }

    /// Whether the innermost scope already declares `name`.
    pub(super) fn declared_in_current_scope(&self, name: &str) -> bool {
        self.locals
            .iter()
            .rev()
            .take_while(|local| match local.depth {
                Depth::Declared => true,
                Depth::Defined(depth) => depth >= self.scope_depth,
            })
            .any(|local| local.name == name)
    }

    /// Makes the newest local usable (its initializer has been compiled).
    pub(super) fn mark_initialized(&mut self) {
        if self.scope_depth == 0 {
            return;
        }
        let depth = self.scope_depth;
        if let Some(local) = self.locals.last_mut() {
            local.depth = Depth::Defined(depth);
        }
    }

    /// The slot of the innermost local named `name`. The second value is an
    /// error to report when the local is read inside its own initializer
    /// (the slot is still returned, as clox does).
    pub(super) fn resolve_local(&self, name: &str) -> Option<(u8, Option<ErrorKind>)> {
        let slot = self.locals.iter().rposition(|local| local.name == name)?;
        let error = (self.locals[slot].depth == Depth::Declared)
            .then_some(ErrorKind::LocalInOwnInitializer);
        // At most MAX_SLOTS locals exist, so the slot fits a byte.
        Some((slot as u8, error))
    }

    /// Marks local `slot` as captured by a closure.
    pub(super) fn capture(&mut self, slot: u8) {
        if let Some(local) = self.locals.get_mut(usize::from(slot)) {
            local.capture = Capture::Captured;
        }
    }

    /// The index of the upvalue `upvalue`, adding it if it is new.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TooManyUpvalues`] when 256 upvalues exist already.
    pub(super) fn add_upvalue(&mut self, upvalue: UpvalueDesc) -> Result<u8, ErrorKind> {
        if let Some(index) = self.upvalues.iter().position(|&known| known == upvalue) {
            return Ok(index as u8);
        }
        if self.upvalues.len() == MAX_SLOTS {
            return Err(ErrorKind::TooManyUpvalues);
        }
        self.upvalues.push(upvalue);
        Ok((self.upvalues.len() - 1) as u8)
    }

    /// Removes the newest local if it belongs to a scope deeper than the
    /// current one, returning how it must leave the stack.
    pub(super) fn pop_local_deeper_than_scope(&mut self) -> Option<Capture> {
        let local = self.locals.last()?;
        match local.depth {
            Depth::Defined(depth) if depth > self.scope_depth => {
                let capture = local.capture;
                self.locals.pop();
                Some(capture)
            }
            // A declared-only local counts as depth -1 in clox: never deeper.
            _ => None,
        }
    }
}

/// Resolves `name` as an upvalue of `function`, whose enclosing functions
/// are `enclosing` (outermost first), adding upvalues along the chain.
/// Errors found on the way are passed to `report`.
pub(super) fn resolve_upvalue<'src>(
    enclosing: &mut [FunctionState<'src>],
    function: &mut FunctionState<'src>,
    name: &str,
    report: &mut impl FnMut(ErrorKind),
) -> Option<u8> {
    let (parent, outer) = enclosing.split_last_mut()?;
    let upvalue = if let Some((slot, error)) = parent.resolve_local(name) {
        if let Some(error) = error {
            report(error);
        }
        parent.capture(slot);
        UpvalueDesc::Local(slot)
    } else {
        UpvalueDesc::Upvalue(resolve_upvalue(outer, parent, name, report)?)
    };
    Some(function.add_upvalue(upvalue).unwrap_or_else(|error| {
        report(error);
        0
    }))
}
