//! [`ShadowStack`]: a stack of words the runtime scans and updates as roots
//! of one mutator, so that an interpreter's value stack needs no binding
//! code of its own.

use crate::error::ShadowStackError;
use crate::vm::ObjectReference;
use hotmem_os::{MemRange, MemTag, Memory, Reservation, page_size, round_to_pages};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How much of a new shadow stack is committed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Every word, at once.
    All,
    /// The first page; [`ShadowStack::grow`] commits the rest.
    AsItGrows,
}

/// The words of one shadow stack and how many are in use: what a
/// collection reads.
pub(crate) struct StackArea {
    base: *mut u64,
    /// Words reserved: the most the stack can grow to.
    reserved: usize,
    /// Words committed (a multiple of a page's): the ones that may be
    /// written. Only grows.
    committed: AtomicUsize,
    len: AtomicUsize,
    /// Keeps the words mapped (and tracked by NMT) while anyone holds the
    /// area: the stack's owner, or a collection scanning it.
    memory: Reservation,
}

// SAFETY: the area is a mapping that lives as long as the `Reservation`
// it holds; its words are written only by the owning mutator between
// safepoints and read and updated by the collector at safepoints
// (`ShadowStack`'s contract), which the safepoint protocol orders.
unsafe impl Send for StackArea {}
// SAFETY: as for `Send`.
unsafe impl Sync for StackArea {}

impl StackArea {
    /// The address of every word in use (clamped to the committed words).
    pub(crate) fn words_in_use(&self) -> impl Iterator<Item = hotmem_os::Address> + '_ {
        let len = self.len.load(Ordering::Acquire);
        let len = len.min(self.committed.load(Ordering::Acquire));
        (0..len).map(|i| hotmem_os::Address::from_ptr(self.base.wrapping_add(i)))
    }
}

/// A stack of words that the runtime scans as roots of the mutator that
/// made it, and updates when their objects move: an interpreter's value
/// stack, used in place. Each word in use (the first [`ShadowStack::len`])
/// is decoded by the binding's [`Binding::slot_at`](crate::Binding::slot_at),
/// so it may hold the binding's tagged values (a NaN-boxed number, an
/// object); a binding without `slot_at` cannot use one.
///
/// The interpreter reads and writes the words through
/// [`ShadowStack::as_ptr`] and publishes how many are in use with
/// [`ShadowStack::set_len`] before anything that may collect. The memory is
/// reserved through the runtime's memory (native memory tracking shows it
/// as Thread Stack) and released when the stack is dropped. It is
/// committed at once, or, for a stack made by
/// [`Mutator::new_growing_shadow_stack`](crate::Mutator::new_growing_shadow_stack),
/// a page at first and more at each [`ShadowStack::grow`]: only the words
/// below [`ShadowStack::capacity`] may be written. Not `Send`: it
/// belongs to the thread of the mutator that made it.
///
/// ```
/// # use hotmem::{Runtime, NumaConfig};
/// # let rt = Runtime::builder().numa(NumaConfig::Off).build()?;
/// let me = rt.attach_mutator()?;
/// let stack = me.new_shadow_stack(1024)?;
/// // SAFETY: two words, within the capacity, each 0 (null).
/// unsafe {
///     stack.as_ptr().write(0);
///     stack.as_ptr().add(1).write(0);
///     stack.set_len(2);
/// }
/// assert_eq!(stack.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShadowStack {
    area: Arc<StackArea>,
    _not_send: PhantomData<*mut u64>,
}

impl ShadowStack {
    /// A stack of `words` words in `memory`, all committed
    /// ([`Commit::All`]) or only its first page ([`Commit::AsItGrows`]).
    pub(crate) fn new(
        memory: &Memory,
        words: usize,
        commit: Commit,
    ) -> Result<ShadowStack, ShadowStackError> {
        let bytes = words
            .checked_mul(8)
            .filter(|&b| b > 0)
            .and_then(round_to_pages)
            .ok_or(ShadowStackError::Size(words))?;
        let reservation = memory
            .reserve(bytes, MemTag::THREAD_STACK)
            .map_err(|e| ShadowStackError::Memory(e.to_string()))?;
        let first = match commit {
            Commit::All => bytes,
            Commit::AsItGrows => page_size().min(bytes),
        };
        let range = MemRange::new(reservation.start(), first)
            .map_err(|e| ShadowStackError::Memory(e.to_string()))?;
        reservation
            .commit(range)
            .map_err(|e| ShadowStackError::Memory(e.to_string()))?;
        Ok(ShadowStack {
            area: Arc::new(StackArea {
                base: reservation.start().as_ptr(),
                reserved: bytes / 8,
                committed: AtomicUsize::new(first / 8),
                len: AtomicUsize::new(0),
                memory: reservation,
            }),
            _not_send: PhantomData,
        })
    }

    /// The part the collector reads, for the registry.
    pub(crate) fn area(&self) -> &Arc<StackArea> {
        &self.area
    }

    /// How many words may be written now: the words committed. A stack
    /// made by [`Mutator::new_shadow_stack`](crate::Mutator::new_shadow_stack)
    /// has them all from the start (the size asked for, rounded up to
    /// whole pages); one made by
    /// [`Mutator::new_growing_shadow_stack`](crate::Mutator::new_growing_shadow_stack)
    /// starts with a page's worth, and [`ShadowStack::grow`] commits more.
    pub fn capacity(&self) -> usize {
        self.area.committed.load(Ordering::Relaxed)
    }

    /// How many words the stack can grow to: the words reserved (the size
    /// asked for, rounded up to whole pages).
    pub fn max_capacity(&self) -> usize {
        self.area.reserved
    }

    /// Commits words until at least `words` may be written (at least
    /// twice the words committed before, so that a stack growing a word
    /// at a time commits a logarithmic number of times), within the
    /// reservation. Returns the new [`ShadowStack::capacity`]; nothing to
    /// do if it already holds `words`.
    ///
    /// # Errors
    /// [`ShadowStackError::Full`] if `words` is more than
    /// [`ShadowStack::max_capacity`], [`ShadowStackError::Memory`] if the
    /// memory cannot be committed; the stack is unchanged either way.
    pub fn grow(&self, words: usize) -> Result<usize, ShadowStackError> {
        let area = &*self.area;
        let committed = area.committed.load(Ordering::Relaxed);
        if words <= committed {
            return Ok(committed);
        }
        if words > area.reserved {
            return Err(ShadowStackError::Full {
                words,
                max: area.reserved,
            });
        }
        let target = words.max(committed.saturating_mul(2)).min(area.reserved);
        let bytes = round_to_pages(target * 8)
            .ok_or(ShadowStackError::Size(words))?
            .min(area.reserved * 8);
        let start = area.memory.start() + committed * 8;
        let range = MemRange::new(start, bytes - committed * 8)
            .map_err(|e| ShadowStackError::Memory(e.to_string()))?;
        area.memory
            .commit(range)
            .map_err(|e| ShadowStackError::Memory(e.to_string()))?;
        // Release: a collection that reads the new count finds the words
        // committed (it reads only those below the length, which the owner
        // raises past the old count only after this).
        area.committed.store(bytes / 8, Ordering::Release);
        Ok(bytes / 8)
    }

    /// How many words are in use: the ones the collector scans.
    #[inline]
    pub fn len(&self) -> usize {
        self.area.len.load(Ordering::Relaxed)
    }

    /// Whether no word is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first word. Reading and writing the words is the caller's (see
    /// [`ShadowStack::set_len`] for what a collection expects of them).
    pub fn as_ptr(&self) -> *mut u64 {
        self.area.base
    }

    /// Publishes that the first `len` words are in use: the next collection
    /// scans them, and may rewrite each one that holds a reference to an
    /// object it moves.
    ///
    /// # Safety
    /// `len` is at most [`ShadowStack::capacity`]; each of the first `len`
    /// words holds, whenever a collection may run (at a poll, an
    /// allocation, a collection of this mutator, or while it is in a native
    /// region), a value the binding's `slot_at` decodes: a reference to a
    /// live object, or no reference. Words are written only on this
    /// mutator's thread, never while it is in a native region (a collection
    /// may run then).
    #[inline]
    pub unsafe fn set_len(&self, len: usize) {
        debug_assert!(len <= self.capacity(), "shadow stack overflow");
        self.area.len.store(len, Ordering::Release);
    }

    /// The word at `index`, if in use. An atomic load: the collector may
    /// rewrite the word meanwhile (this thread may be in a native region,
    /// where a collection updates its words).
    pub fn get(&self, index: usize) -> Option<u64> {
        (index < self.len().min(self.capacity())).then(|| {
            // SAFETY: `index < len <= capacity`: a mapped, aligned word of
            // this stack, which lives while `self` does; the collector
            // accesses it only through the binding's slots, atomically
            // (`Slot`'s contract), so an atomic load races nothing.
            unsafe { AtomicU64::from_ptr(self.area.base.add(index)) }.load(Ordering::Relaxed)
        })
    }

    /// The reference in word `index` as an [`ObjectReference`], for a
    /// stack of plain addresses (0 for null).
    pub fn get_ref(&self, index: usize) -> Option<ObjectReference> {
        self.get(index)
            .and_then(|w| ObjectReference::from_address(hotmem_os::Address::new(w as usize)))
    }
}

impl std::fmt::Debug for ShadowStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShadowStack")
            .field("capacity", &self.capacity())
            .field("max_capacity", &self.max_capacity())
            .field("len", &self.len())
            .finish()
    }
}
