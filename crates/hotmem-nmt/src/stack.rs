//! Call stacks: captured as bare instruction pointers (cheap), stored once per
//! distinct stack, resolved to symbols only when a detail report is printed.

use crate::region_state::MAX_STACK_ID;
use crate::stack_id::StackId;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// How many frames a [`CallStack`] keeps (HotSpot's NMT keeps 4; we keep
/// more because the frames of `hotmem-os` itself take some of them).
pub const MAX_FRAMES: usize = 12;

/// A call stack as up to [`MAX_FRAMES`] instruction pointers, innermost first.
/// Plain data: capturing it resolves nothing and allocates nothing.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct CallStack {
    frames: [usize; MAX_FRAMES],
    len: u8,
}

impl CallStack {
    /// No frames. Operations given it record [`StackId::NONE`].
    pub const EMPTY: CallStack = CallStack {
        frames: [0; MAX_FRAMES],
        len: 0,
    };

    /// The caller's stack, starting at the function that called `capture`.
    /// Symbols are not looked up.
    ///
    /// Built with frame pointers forced (`RUSTFLAGS="-C
    /// force-frame-pointers=yes"`, or `rustflags` in `.cargo/config.toml`)
    /// on x86_64 or aarch64 Linux, it walks the frame-pointer chain, bounded
    /// by the thread's stack: a few loads per frame. Otherwise, or if the
    /// chain cannot be followed, it unwinds as
    /// [`capture_unwound`](CallStack::capture_unwound) does (about 1 us).
    #[inline(never)]
    pub fn capture() -> CallStack {
        let mut frames = [0usize; MAX_FRAMES];
        match crate::frames::walk(&mut frames) {
            Some(n) if n > 0 => CallStack::from_frames(&frames[..n]),
            _ => CallStack::unwind_from(CallStack::capture as *const () as usize),
        }
    }

    /// The caller's stack as [`capture`](CallStack::capture) finds it, always
    /// unwound through the DWARF unwinder (`backtrace`), the slow path: for
    /// comparison, or where frame pointers cannot be trusted.
    #[inline(never)]
    pub fn capture_unwound() -> CallStack {
        CallStack::unwind_from(CallStack::capture_unwound as *const () as usize)
    }

    /// Unwinds the stack, dropping every frame up to and including the
    /// function that starts at `me` (found by its start address, which
    /// inlining cannot move because the callers are `inline(never)`).
    #[inline(always)]
    fn unwind_from(me: usize) -> CallStack {
        // Unwind a few frames more than we keep.
        const SPARE: usize = 8;
        let mut raw = [0usize; MAX_FRAMES + SPARE];
        let mut n = 0;
        let mut after_me = None;
        backtrace::trace(|frame| {
            if after_me.is_none() && frame.symbol_address() as usize == me {
                after_me = Some(n);
                return true;
            }
            raw[n] = frame.ip() as usize;
            n += 1;
            n < raw.len() && after_me.is_none_or(|start| n - start < MAX_FRAMES)
        });
        CallStack::from_frames(&raw[after_me.unwrap_or(0)..n])
    }

    /// A stack made of the given instruction pointers (at most
    /// [`MAX_FRAMES`] are kept). For tests, replays and other trackers.
    pub fn from_frames(frames: &[usize]) -> CallStack {
        let mut s = CallStack::EMPTY;
        let n = frames.len().min(MAX_FRAMES);
        s.frames[..n].copy_from_slice(&frames[..n]);
        s.len = n as u8;
        s
    }

    /// The instruction pointers, innermost first.
    #[inline]
    pub fn frames(&self) -> &[usize] {
        &self.frames[..usize::from(self.len)]
    }

    /// Whether no frame was recorded.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Looks up the symbol of every frame (slow: reads debug info; done only
    /// for detail reports). A frame is named by the function it belongs to
    /// (the outermost of the functions inlined at its address) and the line
    /// in it. The tracker's own leading frames (the observer that captured
    /// the stack) are left out.
    pub fn resolve(&self) -> Vec<ResolvedFrame> {
        let mut frames: Vec<ResolvedFrame> = self
            .frames()
            .iter()
            .filter(|&&ip| ip != 0)
            .map(|&ip| {
                let mut out = ResolvedFrame {
                    ip,
                    symbol: None,
                    offset: None,
                    file: None,
                    line: None,
                };
                // Called innermost inlined function first, the frame's own
                // function last: the last call wins.
                backtrace::resolve(ip as *mut std::ffi::c_void, |sym| {
                    out.symbol = sym.name().map(|n| format!("{n:#}"));
                    // Only a start address below `ip` and near it is the
                    // function's (inlined symbols report other things).
                    out.offset = sym
                        .addr()
                        .map(|a| a as usize)
                        .filter(|&a| a <= ip && ip - a < 1 << 24)
                        .map(|a| ip - a);
                    out.file = sym.filename().map(|p| p.display().to_string());
                    out.line = sym.lineno();
                });
                out
            })
            .collect();
        let own = frames
            .iter()
            .take_while(|f| {
                f.symbol
                    .as_deref()
                    .is_some_and(|s| s.contains("hotmem_nmt::tracker::"))
                    || f.file
                        .as_deref()
                        .is_some_and(|p| p.ends_with("hotmem-nmt/src/tracker.rs"))
            })
            .count();
        if own < frames.len() {
            frames.drain(..own);
        }
        frames
    }
}

impl fmt::Debug for CallStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.frames().iter().map(|ip| format!("{ip:#x}")))
            .finish()
    }
}

/// One frame of a resolved stack.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResolvedFrame {
    /// The instruction pointer.
    pub ip: usize,
    /// The demangled function name, if debug info has it.
    pub symbol: Option<String>,
    /// `ip` minus the function's start, when known.
    pub offset: Option<usize>,
    /// Source file, if known.
    pub file: Option<String>,
    /// Source line, if known.
    pub line: Option<u32>,
}

impl fmt::Display for ResolvedFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:#018x}]", self.ip)?;
        match &self.symbol {
            Some(s) => {
                write!(f, " {s}")?;
                if let Some(off) = self.offset {
                    write!(f, "+{off:#x}")?;
                }
            }
            None => f.write_str(" <unknown>")?,
        }
        if let (Some(file), Some(line)) = (&self.file, self.line) {
            write!(f, " ({file}:{line})")?;
        }
        Ok(())
    }
}

/// A multiply-rotate hasher over the words of a [`CallStack`]: the store is
/// looked up on every operation at detail level, where SipHash over 13
/// words would cost more than capturing the stack by frame pointers.
/// Return addresses are not chosen by an adversary, so a keyless hash is
/// enough.
#[derive(Default)]
pub(crate) struct FrameHasher(u64);

impl FrameHasher {
    #[inline]
    fn mix(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

impl Hasher for FrameHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.mix(u64::from_ne_bytes(w.try_into().expect("8 bytes")));
        }
        for &b in words.remainder() {
            self.mix(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.mix(u64::from(v));
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.mix(v as u64);
    }
}

/// Every distinct stack a tracker has seen, each stored once.
#[derive(Default)]
pub(crate) struct StackStore {
    ids: HashMap<CallStack, StackId, BuildHasherDefault<FrameHasher>>,
    stacks: Vec<CallStack>,
    dropped: u64,
}

/// The id a stack will have once an operation that uses it succeeds.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Pending {
    id: StackId,
    is_new: bool,
}

impl Pending {
    pub(crate) fn id(self) -> StackId {
        self.id
    }
}

impl StackStore {
    /// The id `stack` has, or will have if [`StackStore::keep`] is called
    /// after the operation succeeds. Changes nothing, so that a rejected
    /// operation leaves the store as it was.
    pub(crate) fn prepare(&self, stack: &CallStack) -> Pending {
        if stack.is_empty() {
            return Pending {
                id: StackId::NONE,
                is_new: false,
            };
        }
        if let Some(&id) = self.ids.get(stack) {
            return Pending { id, is_new: false };
        }
        let next = self.stacks.len() + 1;
        if next > MAX_STACK_ID as usize {
            // Full: the region is tracked without a stack.
            return Pending {
                id: StackId::NONE,
                is_new: true,
            };
        }
        Pending {
            id: StackId::new(next as u32),
            is_new: true,
        }
    }

    /// Stores the stack of a [`Pending`] id after its operation succeeded.
    /// Call at most once per `prepare`, before the next `prepare`.
    pub(crate) fn keep(&mut self, stack: &CallStack, pending: Pending) {
        if !pending.is_new {
            return;
        }
        if pending.id == StackId::NONE {
            self.dropped += 1;
            return;
        }
        debug_assert_eq!(pending.id.get() as usize, self.stacks.len() + 1);
        self.stacks.push(*stack);
        self.ids.insert(*stack, pending.id);
    }

    /// The stack with id `id`.
    pub(crate) fn get(&self, id: StackId) -> Option<&CallStack> {
        (id.get() as usize)
            .checked_sub(1)
            .and_then(|i| self.stacks.get(i))
    }

    /// Distinct stacks stored.
    pub(crate) fn len(&self) -> usize {
        self.stacks.len()
    }

    /// Stacks not stored because the store was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Uses the stack after capturing it, so that an optimized build
    /// cannot turn the call into a tail jump that leaves no frame.
    #[inline(never)]
    fn a_caller() -> CallStack {
        let s = CallStack::capture();
        std::hint::black_box(&s);
        s
    }

    #[inline(never)]
    fn a_caller_unwound() -> CallStack {
        let s = CallStack::capture_unwound();
        std::hint::black_box(&s);
        s
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "frames are kept as plain addresses; Miri's frame resolver needs the original pointer's provenance (natively the address is only looked up, never dereferenced)"
    )]
    fn capture_starts_at_the_caller_and_resolves() {
        // The frame-pointer walk (with frame pointers forced) and the
        // unwinder find the same innermost frames.
        for (s, name) in [
            (a_caller(), "a_caller"),
            (a_caller_unwound(), "a_caller_unwound"),
        ] {
            assert!(!s.is_empty());
            let frames = s.resolve();
            let first = frames[0].symbol.as_deref().unwrap_or("");
            assert!(first.ends_with(name), "innermost frame is {first}");
            let second = frames[1].symbol.as_deref().unwrap_or("");
            assert!(
                second.contains("capture_starts_at_the_caller_and_resolves"),
                "second frame is {second}"
            );
            assert!(frames.iter().all(|f| {
                let name = f.symbol.as_deref().unwrap_or("");
                !name.contains("CallStack::capture") && !name.starts_with("backtrace::")
            }));
        }
    }

    #[test]
    fn store_deduplicates_and_only_keeps_on_success() {
        let mut store = StackStore::default();
        let a = CallStack::from_frames(&[1, 2, 3]);
        let b = CallStack::from_frames(&[4]);
        let p = store.prepare(&a);
        assert_eq!(p.id(), StackId::new(1));
        // Not kept: the operation was rejected.
        assert_eq!(store.len(), 0);
        let p = store.prepare(&a);
        store.keep(&a, p);
        assert_eq!(store.prepare(&a).id(), StackId::new(1));
        let p = store.prepare(&b);
        store.keep(&b, p);
        assert_eq!(store.len(), 2);
        assert_eq!(store.get(StackId::new(2)), Some(&b));
        assert_eq!(store.get(StackId::NONE), None);
        assert_eq!(store.prepare(&CallStack::EMPTY).id(), StackId::NONE);
        assert_eq!(CallStack::from_frames(&[7; 40]).frames().len(), MAX_FRAMES);
    }
}
