//! Graph builders. Each one leaves its result as a new last entry of the
//! root table and returns the [`GraphSummary`] of what it built, so a
//! caller knows what [`SimpleObjects::verify`] must find.

use super::*;

/// Allocates and initializes one object with `slots` null slots and
/// `payload_words` of payload and pushes it onto `roots`.
///
/// # Errors
/// The allocation's.
pub fn object(
    m: &mut Mutator,
    roots: &RootTable,
    slots: usize,
    payload_words: usize,
    id: u64,
) -> Result<ObjectReference, AllocError> {
    let size = SimpleObjects::size_for(slots, payload_words);
    let addr = m.alloc(size)?;
    // SAFETY: a fresh allocation of `size` bytes.
    let obj = unsafe { SimpleObjects::init(addr, size, slots, id) };
    roots.push(Some(obj));
    Ok(obj)
}

/// A linked list of `len` nodes (one slot each, the next node), the
/// head last on `roots`. With `cycle`, the last node links back to the
/// head (a self-loop for one node).
///
/// # Errors
/// The allocation's; `roots` is left as it was.
pub fn list(
    m: &mut Mutator,
    roots: &RootTable,
    len: usize,
    payload_words: usize,
    cycle: bool,
    ids: &mut Ids,
) -> Result<GraphSummary, AllocError> {
    let base = roots.len();
    let mut sum = GraphSummary::default();
    let mut node_ids = Vec::with_capacity(len);
    let result = (|| {
        roots.push(None); // head
        roots.push(None); // tail
        for _ in 0..len {
            let id = ids.next();
            object(m, roots, 1, payload_words, id)?;
            let n = roots.pop().expect("just pushed");
            // SAFETY: `n` and the head are live (rooted), no collection
            // since the allocation.
            unsafe { SimpleObjects::set_slot(m, n, 0, roots.get(base)) };
            if roots.get(base + 1).is_none() {
                roots.set(base + 1, Some(n));
            }
            roots.set(base, Some(n));
            node_ids.push(id);
        }
        Ok::<(), AllocError>(())
    })();
    if let Err(e) = result {
        roots.truncate(base);
        return Err(e);
    }
    let head = roots.get(base);
    if cycle && len > 0 {
        let tail = roots.get(base + 1).expect("a non-empty list has a tail");
        // SAFETY: rooted, no collection since.
        unsafe { SimpleObjects::set_slot(m, tail, 0, head) };
    }
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
    roots.truncate(base);
    roots.push(head);
    Ok(sum)
}

/// A complete binary tree of `depth` (two slots per node, a leaf at
/// depth 0), the root last on `roots`.
///
/// # Errors
/// The allocation's; `roots` is left as it was.
pub fn tree(
    m: &mut Mutator,
    roots: &RootTable,
    depth: u32,
    payload_words: usize,
    ids: &mut Ids,
) -> Result<GraphSummary, AllocError> {
    let base = roots.len();
    let mut sum = GraphSummary::default();
    match tree_rec(m, roots, depth, payload_words, ids, &mut sum) {
        Ok(_) => Ok(sum),
        Err(e) => {
            roots.truncate(base);
            Err(e)
        }
    }
}

fn tree_rec(
    m: &mut Mutator,
    roots: &RootTable,
    depth: u32,
    payload_words: usize,
    ids: &mut Ids,
    sum: &mut GraphSummary,
) -> Result<u64, AllocError> {
    let size = SimpleObjects::size_for(2, payload_words);
    if depth == 0 {
        let id = ids.next();
        object(m, roots, 2, payload_words, id)?;
        sum.add(id, size, &[0, 0]);
        return Ok(id);
    }
    let l = tree_rec(m, roots, depth - 1, payload_words, ids, sum)?;
    let r = tree_rec(m, roots, depth - 1, payload_words, ids, sum)?;
    let id = ids.next();
    let n = object(m, roots, 2, payload_words, id)?;
    roots.pop();
    let right = roots.pop();
    let left = roots.pop();
    // SAFETY: `n`, `left` and `right` are live and rooted until now; no
    // collection since the allocation.
    unsafe {
        SimpleObjects::set_slot(m, n, 0, left);
        SimpleObjects::set_slot(m, n, 1, right);
    }
    roots.push(Some(n));
    sum.add(id, size, &[l, r]);
    Ok(id)
}

/// An array of `len` reference slots whose elements are `distinct` new
/// objects, shared: slot `i` refers to element `i % distinct`. The
/// array is last on `roots`.
///
/// # Errors
/// The allocation's; `roots` is left as it was.
pub fn array(
    m: &mut Mutator,
    roots: &RootTable,
    len: usize,
    distinct: usize,
    payload_words: usize,
    ids: &mut Ids,
) -> Result<GraphSummary, AllocError> {
    let base = roots.len();
    let distinct = distinct.clamp(1, len.max(1));
    let mut sum = GraphSummary::default();
    let result = (|| {
        let array_id = ids.next();
        object(m, roots, len, 0, array_id)?;
        let mut elems = Vec::with_capacity(distinct);
        for k in 0..distinct.min(len) {
            let id = ids.next();
            let elem = object(m, roots, 0, payload_words, id)?;
            roots.pop();
            elems.push(id);
            // Linked before the next allocation: nothing collected since
            // `elem` was allocated.
            let arr = roots.get(base).expect("rooted");
            // SAFETY: `arr` and `elem` are live; no collection since.
            unsafe { SimpleObjects::set_slot(m, arr, k, Some(elem)) };
        }
        // Fill the rest with shared references.
        let arr = roots.get(base).expect("rooted");
        for i in distinct.min(len)..len {
            // SAFETY: live and rooted; no allocation here.
            let t = unsafe { SimpleObjects::load_slot(m, arr, i % distinct) };
            // SAFETY: as above.
            unsafe { SimpleObjects::set_slot(m, arr, i, t) };
        }
        let targets: Vec<u64> = (0..len).map(|i| elems[i % distinct]).collect();
        sum.add(array_id, SimpleObjects::size_for(len, 0), &targets);
        for &id in &elems {
            sum.add(id, SimpleObjects::size_for(0, payload_words), &[]);
        }
        Ok::<(), AllocError>(())
    })();
    if let Err(e) = result {
        roots.truncate(base);
        return Err(e);
    }
    Ok(sum)
}

/// About `kib` KiB of garbage: objects of 8 KiB, each dropped from `roots`
/// as soon as it is allocated (so young pages fill with dead objects).
///
/// # Errors
/// The allocation's; `roots` is left as it was.
pub fn garbage(
    m: &mut Mutator,
    roots: &RootTable,
    kib: usize,
    ids: &mut Ids,
) -> Result<(), AllocError> {
    for _ in 0..kib / 8 {
        object(m, roots, 0, 1020, ids.next())?;
        roots.pop();
    }
    Ok(())
}
