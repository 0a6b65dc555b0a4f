//! hotmem-nmt: track real memory with tags (heap, thread stacks, code and
//! an embedder's own), print the summary, a diff after more work, the
//! detail diff by call site, and the annotated OS memory map.
//!
//! Run with `cargo run --release -p hotmem-examples --example nmt_report`.

use hotmem_nmt::{Level, Scale, Tracker};
use hotmem_os::{MemRange, MemTag, Memory, Reservation, page_size};
use std::error::Error;
use std::sync::Arc;

/// Writes one byte per page, so that the pages become resident.
fn touch(range: MemRange) {
    let mut at = range.start();
    while at < range.end() {
        // SAFETY: callers pass ranges they have just committed.
        unsafe { at.as_ptr::<u8>().write(1) };
        at = at + page_size();
    }
}

/// Reserves a thread stack and commits (and uses) its top 64 KiB.
fn thread_stack(memory: &Memory) -> Result<Reservation, Box<dyn Error>> {
    let stack = memory.reserve(1 << 20, MemTag::THREAD_STACK)?;
    let top = stack.subrange(stack.len() - (64 << 10), 64 << 10)?;
    stack.commit(top)?;
    touch(top);
    Ok(stack)
}

fn main() -> Result<(), Box<dyn Error>> {
    let nmt = Arc::new(Tracker::new(Level::Detail));
    let memory = Memory::with_observer(nmt.clone());
    let cache_tag = nmt.register_tag("Embedder cache")?;

    // The heap: 256 MiB reserved, 32 MiB committed, half of that used.
    let heap = memory.reserve_aligned(256 << 20, 2 << 20, MemTag::JAVA_HEAP)?;
    let young = heap.subrange(0, 32 << 20)?;
    heap.commit(young)?;
    touch(heap.subrange(0, 16 << 20)?);
    // Eight thread stacks.
    let mut stacks = (0..8)
        .map(|_| thread_stack(&memory))
        .collect::<Result<Vec<_>, _>>()?;
    // Code cache: 48 MiB reserved, 4 MiB committed.
    let code = memory.reserve(48 << 20, MemTag::CODE)?;
    code.commit(code.subrange(0, 4 << 20)?)?;
    touch(code.subrange(0, 1 << 20)?);
    // The embedder's cache.
    let cache = memory.reserve(16 << 20, cache_tag)?;
    cache.commit(cache.subrange(0, 1 << 20)?)?;

    println!("{}", nmt.summary_report(Scale::Kilo));
    println!("JSON: {}\n", nmt.summary_report(Scale::Kilo).to_json());

    // More work: the heap grows, half the threads exit, code is flushed.
    let baseline = nmt.baseline();
    let old = heap.subrange(128 << 20, 64 << 20)?;
    heap.commit(old)?;
    touch(old);
    stacks.truncate(4);
    code.uncommit(code.subrange(2 << 20, 2 << 20)?)?;
    let more_stacks = (0..2)
        .map(|_| thread_stack(&memory))
        .collect::<Result<Vec<_>, _>>()?;

    // The summary diff, then what changed per call site.
    println!("{}", nmt.detail_diff_report(&baseline, Scale::Kilo));

    // What the kernel says: which of the committed memory is resident.
    let map = nmt.annotated_map(Scale::Kilo)?;
    println!("{map}");
    let (boundary_points, stacks_stored) = (nmt.node_count(), nmt.stack_count());
    println!(
        "tracker: {boundary_points} boundary points, {stacks_stored} distinct call stacks, \
         {} events rejected",
        nmt.rejected_events().0
    );
    drop((heap, stacks, more_stacks, code, cache));
    assert_eq!(nmt.summary().total().reserved, 0, "everything released");
    Ok(())
}
