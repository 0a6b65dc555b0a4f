//! `StackId`: the number a tracker's stack store gives a distinct call stack.

use std::fmt;

/// The identity of a distinct call stack in a tracker's stack store.
/// [`StackId::NONE`] stands for "no stack recorded".
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
#[serde(transparent)]
pub struct StackId(u32);

impl StackId {
    /// No stack: summary level, an empty [`CallStack`](crate::CallStack), or a full store.
    pub const NONE: StackId = StackId(0);

    #[inline]
    pub(crate) const fn new(raw: u32) -> StackId {
        StackId(raw)
    }

    /// The number (0 for [`StackId::NONE`]).
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Debug for StackId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stack#{}", self.0)
    }
}
