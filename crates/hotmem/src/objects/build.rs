//! Graph builders. Each one leaves its result as a new last entry of the
//! root table and returns the [`GraphSummary`] of what it built, so a
//! caller knows what [`SimpleObjects::verify`] must find.
//!
//! Each refuses a root table that the mutator's runtime does not scan
//! ([`GraphError::RootsNotScanned`]): what it built would be collected
//! under it. While building, each keeps what it needs in the runtime's
//! handles, never in the table: another thread may use the table
//! meanwhile.

use super::*;
use crate::Handle;

/// Why a builder built nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// An allocation failed (the builder's roots are left as they were).
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The root table is not scanned by the runtime the mutator allocates
    /// in (its binding is a [`SimpleObjects`] other than the one that made
    /// the table): the first collection would free what the table holds.
    #[error("the root table is not scanned by the runtime's binding")]
    RootsNotScanned,
}

/// Refuses `roots` where `m`'s runtime is bound to a [`SimpleObjects`]
/// that does not scan it. A runtime bound to another binding (one that
/// wraps a model and delegates its root scan, say) cannot be asked: the
/// builders keep their work in the runtime's own handles, so they stay
/// sound whatever the table, and a result left in a table nobody scans
/// is merely collected.
fn check_scanned(m: &Mutator, roots: &RootTable) -> Result<(), GraphError> {
    match m.runtime().binding::<SimpleObjects>() {
        Some(model) if !model.scans(roots) => Err(GraphError::RootsNotScanned),
        _ => Ok(()),
    }
}

/// Allocates and initializes one object with `slots` null slots and
/// `payload_words` of payload and pushes it onto `roots`.
///
/// # Errors
/// [`GraphError::RootsNotScanned`]; the allocation's (a size that
/// overflows is a layout error).
pub fn object(
    m: &mut Mutator,
    roots: &RootTable,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, GraphError> {
    rooted_object(m, roots, Space::Moving, slots, payload_words, id)
}

/// [`object`] in the non-moving space ([`Mutator::alloc_non_moving`]): an
/// object that no collection moves, old from birth.
///
/// # Errors
/// As [`object`].
pub fn non_moving_object(
    m: &mut Mutator,
    roots: &RootTable,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, GraphError> {
    rooted_object(m, roots, Space::NonMoving, slots, payload_words, id)
}

/// [`object`] and [`non_moving_object`]: one object in `space`, pushed
/// onto `roots`.
fn rooted_object(
    m: &mut Mutator,
    roots: &RootTable,
    space: Space,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, GraphError> {
    check_scanned(m, roots)?;
    let obj = new_object_in(m, space, slots, payload_words, id)?;
    roots.push(Some(obj));
    Ok(obj)
}

/// Where [`new_object_in`] allocates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Space {
    /// Young, in the pages collections move objects out of.
    Moving,
    /// [`Mutator::alloc_non_moving`]'s.
    NonMoving,
}

/// A new object (see [`object`]), in no root: valid until the next call
/// that may collect.
fn new_object(
    m: &mut Mutator,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, GraphError> {
    new_object_in(m, Space::Moving, slots, payload_words, id)
}

/// [`new_object`] in `space`. A non-moving object is old from birth: its
/// slots are written null, which owes no store barrier.
fn new_object_in(
    m: &mut Mutator,
    space: Space,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, GraphError> {
    let size = SimpleObjects::size_for(slots, payload_words);
    // A safepoint poll before each allocation, as a compiled VM polls at
    // the call of an allocating method: a builder of a large graph reaches
    // the next safepoint within one allocation (`alloc` polls only when it
    // must collect). Here, as at the allocation, every object the caller
    // still needs is in a handle or a root table.
    m.poll();
    let addr = match space {
        Space::Moving => m.alloc(size)?,
        Space::NonMoving => m.alloc_non_moving(size)?,
    };
    if payload_words <= SEGMENT_WORDS {
        // SAFETY: a fresh allocation of `size` bytes (`alloc` refused a
        // size that overflowed).
        return Ok(unsafe { SimpleObjects::init(addr, size, slots, id) });
    }
    // A large payload in segments with a poll between them: written in
    // one go, a 1 MiB object kept a safepoint waiting for its whole
    // payload (the demo's time to safepoint). The object is in a handle
    // across each poll, its header and null slots written first.
    // SAFETY: as above.
    let (obj, mut payload) = unsafe { SimpleObjects::begin_init(addr, size, slots, id) };
    let h = m.handle(obj);
    // SAFETY: the object's current address, read from its handle after
    // the last poll; nothing collects until the next one.
    while !unsafe { SimpleObjects::init_more(h.get(), &mut payload, SEGMENT_WORDS) } {
        m.poll();
    }
    Ok(h.get())
}

/// Payload words written between two polls (64 KiB).
const SEGMENT_WORDS: usize = 8192;

/// [`new_object`], kept in a handle of `m` (the builders' working set:
/// scanned by the runtime whatever root table the result goes to).
fn new_rooted(
    m: &mut Mutator,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<Handle, GraphError> {
    let obj = new_object(m, slots, payload_words, id)?;
    Ok(m.handle(obj))
}

/// A linked list of `len` nodes (one slot each, the next node), the
/// head last on `roots`. With `cycle`, the last node links back to the
/// head (a self-loop for one node).
///
/// # Errors
/// As [`object`]; `roots` is left as it was.
pub fn list(
    m: &mut Mutator,
    roots: &RootTable,
    len: usize,
    payload_words: usize,
    cycle: bool,
    ids: &mut Ids,
) -> Result<GraphSummary, GraphError> {
    check_scanned(m, roots)?;
    let mut node_ids = Vec::with_capacity(len);
    let (mut head, mut tail): (Option<Handle>, Option<Handle>) = (None, None);
    for _ in 0..len {
        let id = ids.next();
        let n = new_rooted(m, 1, payload_words, id)?;
        // SAFETY: `n` and the head are live (in handles), read after the
        // allocation; nothing collects until the next one.
        unsafe { SimpleObjects::set_slot(m, n.get(), 0, head.as_ref().map(Handle::get)) };
        if tail.is_none() {
            tail = Some(n.clone());
        }
        head = Some(n);
        node_ids.push(id);
    }
    let head = head.map(|h| h.get());
    if let (true, Some(tail)) = (cycle, &tail) {
        // SAFETY: in a handle, read now; no collection since.
        unsafe { SimpleObjects::set_slot(m, tail.get(), 0, head) };
    }
    let mut sum = GraphSummary::default();
    let size = SimpleObjects::size_for(1, payload_words);
    // Node k (built k-th) links to node k-1; node 0 to null or the head.
    for (k, &id) in node_ids.iter().enumerate() {
        let target = match k {
            0 if cycle => *node_ids.last().expect("non-empty"),
            0 => 0,
            _ => node_ids[k - 1],
        };
        sum.add(id, size, &[target]);
    }
    roots.push(head);
    Ok(sum)
}

/// A complete binary tree of `depth` (two slots per node, a leaf at
/// depth 0), the root last on `roots`.
///
/// # Errors
/// As [`object`]; `roots` is left as it was.
pub fn tree(
    m: &mut Mutator,
    roots: &RootTable,
    depth: u32,
    payload_words: usize,
    ids: &mut Ids,
) -> Result<GraphSummary, GraphError> {
    check_scanned(m, roots)?;
    let mut sum = GraphSummary::default();
    let (_, root) = tree_rec(m, depth, payload_words, ids, &mut sum)?;
    roots.push(Some(root.get()));
    Ok(sum)
}

/// The subtree of `depth`: its root's id, in a handle.
fn tree_rec(
    m: &mut Mutator,
    depth: u32,
    payload_words: usize,
    ids: &mut Ids,
    sum: &mut GraphSummary,
) -> Result<(u64, Handle), GraphError> {
    let size = SimpleObjects::size_for(2, payload_words);
    if depth == 0 {
        let id = ids.next();
        let leaf = new_rooted(m, 2, payload_words, id)?;
        sum.add(id, size, &[0, 0]);
        return Ok((id, leaf));
    }
    let (l, left) = tree_rec(m, depth - 1, payload_words, ids, sum)?;
    let (r, right) = tree_rec(m, depth - 1, payload_words, ids, sum)?;
    let id = ids.next();
    let n = new_rooted(m, 2, payload_words, id)?;
    // SAFETY: `n`, `left` and `right` are live (in handles), read after
    // the last allocation.
    unsafe {
        SimpleObjects::set_slot(m, n.get(), 0, Some(left.get()));
        SimpleObjects::set_slot(m, n.get(), 1, Some(right.get()));
    }
    sum.add(id, size, &[l, r]);
    Ok((id, n))
}

/// An array of `len` reference slots whose elements are `distinct` new
/// objects, shared: slot `i` refers to element `i % distinct`. The
/// array is last on `roots`.
///
/// # Errors
/// As [`object`]; `roots` is left as it was.
pub fn array(
    m: &mut Mutator,
    roots: &RootTable,
    len: usize,
    distinct: usize,
    payload_words: usize,
    ids: &mut Ids,
) -> Result<GraphSummary, GraphError> {
    check_scanned(m, roots)?;
    let distinct = distinct.clamp(1, len.max(1));
    let array_id = ids.next();
    let array = new_rooted(m, len, 0, array_id)?;
    let mut elems = Vec::with_capacity(distinct);
    for k in 0..distinct.min(len) {
        let id = ids.next();
        let elem = new_object(m, 0, payload_words, id)?;
        elems.push(id);
        // Linked before the next allocation: nothing collected since
        // `elem` was allocated; the array is read after it.
        // SAFETY: both live; no collection since.
        unsafe { SimpleObjects::set_slot(m, array.get(), k, Some(elem)) };
    }
    // Fill the rest with shared references.
    let arr = array.get();
    for i in distinct.min(len)..len {
        // SAFETY: live (in a handle); no allocation here.
        let t = unsafe { SimpleObjects::load_slot(m, arr, i % distinct) };
        // SAFETY: as above.
        unsafe { SimpleObjects::set_slot(m, arr, i, t) };
    }
    let mut sum = GraphSummary::default();
    let targets: Vec<u64> = (0..len).map(|i| elems[i % distinct]).collect();
    sum.add(array_id, SimpleObjects::size_for(len, 0), &targets);
    for &id in &elems {
        sum.add(id, SimpleObjects::size_for(0, payload_words), &[]);
    }
    roots.push(Some(arr));
    Ok(sum)
}

/// About `kib` KiB of garbage: objects of 8 KiB, unreachable as soon as
/// each is allocated (so young pages fill with dead objects).
///
/// # Errors
/// As [`object`].
pub fn garbage(
    m: &mut Mutator,
    roots: &RootTable,
    kib: usize,
    ids: &mut Ids,
) -> Result<(), GraphError> {
    check_scanned(m, roots)?;
    for _ in 0..kib / 8 {
        new_object(m, 0, 1020, ids.next())?;
    }
    Ok(())
}
